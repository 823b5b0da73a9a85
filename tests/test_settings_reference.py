"""Every setting the code reads is in ``a2a.conf.DEFAULTS``, so in the settings reference
(docs/settings.md, generated from DEFAULTS: tests/test_docs.py checks it)."""

from __future__ import annotations

import re

from a2a.conf import DEFAULTS
from tests.server import ROOT


def test_every_setting_the_code_reads_has_a_default():
    """A setting read anywhere in the apps (``a2a_settings.X``, ``settings.A2A_X``,
    ``getattr(settings, "A2A_X")``) is in DEFAULTS, hence on the settings page."""
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
    assert sorted(read - set(DEFAULTS)) == [], "read by the code but missing from a2a.conf.DEFAULTS"
