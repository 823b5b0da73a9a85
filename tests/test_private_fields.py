"""The private task fields (a key starting with ``_``) are declared once, in
:mod:`stores.fields`: no other module of the two apps spells one's name."""

from __future__ import annotations

import re
from pathlib import Path

from stores import fields

ROOT = Path(__file__).resolve().parent.parent
PRIVATE = sorted(v for k, v in vars(fields).items() if k.isupper() and isinstance(v, str) and v.startswith("_"))


def test_the_private_fields_are_spelled_only_in_stores_fields():
    assert {"_version", "_fileBytes", "_paused", "_generation"} <= set(PRIVATE)
    assert len(set(PRIVATE)) == len(PRIVATE)  # no two fields share a key
    spelled = re.compile("[\"'](" + "|".join(map(re.escape, PRIVATE)) + ")[\"']")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for package in ("a2a", "stores")
        for path in (ROOT / package).rglob("*.py")
        if path != ROOT / "stores" / "fields.py"
        for match in spelled.finditer(path.read_text())
    ]
    assert found == []
