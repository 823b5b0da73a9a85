"""The README's settings reference cannot drift from the code's defaults."""

from __future__ import annotations

import re

from a2a.conf import DEFAULTS
from tests.server import ROOT


def documented_settings() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Settings") :]
    table = table[: table.index("\n## ")]
    names: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`((?:A2A_|TASK_STORE)[A-Z0-9_]*)`", first_cell))
    return names


def test_every_setting_is_documented_and_every_documented_setting_exists():
    documented = documented_settings()
    assert sorted(set(DEFAULTS) - documented) == [], "settings missing from the README's table"
    assert sorted(documented - set(DEFAULTS)) == [], "README documents settings the code does not have"


def test_every_setting_the_code_reads_has_a_default():
    """A setting read anywhere in the apps (``a2a_settings.X``, ``settings.A2A_X``,
    ``getattr(settings, "A2A_X")``) is in DEFAULTS, hence in the README's table."""
    read: set[str] = set()
    for app in ("a2a", "stores"):
        for path in (ROOT / app).rglob("*.py"):
            source = path.read_text()
            read.update(
                name if name == "TASK_STORE" else f"A2A_{name}"
                for name in re.findall(r"\ba2a_settings\.([A-Z][A-Z0-9_]*)", source)
            )
            read.update(re.findall(r"\bsettings\.((?:A2A_|TASK_STORE)[A-Z0-9_]*)", source))
            read.update(re.findall(r"getattr\(\s*settings,\s*[\"']((?:A2A_|TASK_STORE)[A-Z0-9_]*)", source))
    assert sorted(read - set(DEFAULTS)) == [], "read by the code but missing from a2a.conf.DEFAULTS (and the README)"
