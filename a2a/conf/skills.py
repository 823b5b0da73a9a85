"""Skills read from a directory of SKILL.md files."""

from __future__ import annotations

from pathlib import Path

from a2a.setting import Setting

TITLE = "Skills from a directory (a2a/handlers/skills.py)"

DECLARED: dict[str, Setting] = {
    "A2A_SKILLS_DIR": Setting(
        (str, Path),
        None,
        check_id="a2a.E020",
        doc="A directory of skills, one SKILL.md per sub-directory (see a2a/handlers/skills.py); relative to "
        "BASE_DIR. Its skills join A2A_SKILLS on the Agent Card. None: no directory.",
    ),
    "A2A_SKILLS_ENABLED": Setting(
        (str, list),
        None,
        check_id="a2a.E022",
        doc="Ids of the A2A_SKILLS_DIR skills to offer (a list, or comma-separated); None: all.",
    ),
}
