"""The check of the skills directory (``a2a.E020`` to ``E023``, ``W020``, ``W021``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, Warning

from a2a.agents import Agent
from a2a.handlers.skills import enabled_ids, scan, skills_dir
from a2a.ops.checks.registry import Messages, concern, settings_of


@concern("A2A_SKILLS_DIR", "A2A_SKILLS_ENABLED")
def check_skills(agent: Agent | None = None) -> Messages:
    """The skills directory: it exists (``a2a.E020``), its skills load (``a2a.E021``), it
    has some (``a2a.W020``), and ``A2A_SKILLS_ENABLED`` names ids (``a2a.E022``) of them
    (``a2a.E023``)."""
    conf = settings_of(agent)
    enabled_setting = conf.SKILLS_ENABLED
    if isinstance(enabled_setting, list) and not all(isinstance(i, str) for i in enabled_setting):
        return [
            Error(f"A2A_SKILLS_ENABLED must be None or a list of skill ids, not {enabled_setting!r}.", id="a2a.E022")
        ]
    directory = skills_dir(conf)
    if directory is None:
        return [Error("A2A_SKILLS_ENABLED is set but A2A_SKILLS_DIR is not.", id="a2a.E023")] if enabled_setting else []
    if not directory.is_dir():
        return [Error(f"A2A_SKILLS_DIR {str(directory)!r} is not a directory.", id="a2a.E020")]
    skills, problems = scan(directory)
    errors: Messages = [Error(f"A skill cannot be loaded: {p}", id="a2a.E021") for p in problems]
    if not skills and not problems:
        errors.append(
            Warning(
                f"A2A_SKILLS_DIR {str(directory)!r} has no skills.",
                hint="Put each skill in <dir>/<skill>/SKILL.md, starting with front matter (name, description).",
                id="a2a.W020",
            )
        )
    found = {s.id for s in skills}
    return errors + _unknown_skills(found, conf) + _skills_listed_twice(found, conf)


def _unknown_skills(found: set[str], conf: Any) -> Messages:
    """``a2a.E023``: ``A2A_SKILLS_ENABLED`` names skills the directory does not have."""
    unknown = [i for i in enabled_ids(conf) or () if i not in found]
    if not unknown:
        return []
    return [
        Error(
            f"A2A_SKILLS_ENABLED names skills that A2A_SKILLS_DIR does not have: {', '.join(unknown)}.",
            hint=f"Known skills: {', '.join(sorted(found)) or 'none'}.",
            id="a2a.E023",
        )
    ]


def _skills_listed_twice(found: set[str], conf: Any) -> Messages:
    """``a2a.W021``: a skill of the directory is in ``A2A_SKILLS`` too."""
    listed = {s.get("id") for s in conf.SKILLS if isinstance(s, dict)}
    return [
        Warning(
            f"Skill {skill_id!r} is both in A2A_SKILLS and in A2A_SKILLS_DIR; the card lists the A2A_SKILLS one.",
            id="a2a.W021",
        )
        for skill_id in sorted(found & listed)
    ]
