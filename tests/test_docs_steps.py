"""The docs' steps, followed as a new user follows them: each file a page shows is written
where the page says and used as the page says (tests/test_docs_testing.py runs the
testing page's and the README's curl lines; tests/thirdparty/ the README's Quickstart)."""

from __future__ import annotations

import re

from a2a.handlers.skills import get_skills
from a2a.ops.checks.skills import check_skills
from tests.server import ROOT

DOCS = ROOT / "docs"


def captioned_files(markdown: str) -> dict[str, str]:
    """The code blocks a page introduces by a file's path alone (a sentence or line ending
    in ``path``: right above the block): path -> the block's text."""
    found = re.finditer(r"`([\w./-]+\.\w+)`:\n\n```\w*\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    return {match.group(1): match.group(2) for match in found}


# --- docs/handlers.md ---------------------------------------------------------------------------


def test_the_handlers_pages_skill_file_copied_as_shown_loads(tmp_path, settings):
    """The SKILL.md example, written to the path it names: ``manage.py check`` finds nothing
    to say and the card lists the skill; the file starts with its front matter, as every
    reader of SKILL.md files (Anthropic's, toolnexus's) expects."""
    files = captioned_files((DOCS / "handlers.md").read_text())
    assert "skills/summarize/SKILL.md" in files
    text = files["skills/summarize/SKILL.md"]
    assert text.startswith("---\n")
    (tmp_path / "skills" / "summarize").mkdir(parents=True)
    (tmp_path / "skills" / "summarize" / "SKILL.md").write_text(text)
    settings.A2A_SKILLS_DIR = str(tmp_path / "skills")
    assert check_skills() == []
    (skill,) = get_skills()
    assert skill.card_entry()["name"] == "Summarize" and skill.instructions.startswith("Answer with at most")
