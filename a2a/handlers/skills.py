"""Skills from a directory of ``SKILL.md`` files.

``A2A_SKILLS_DIR`` names a directory; each skill is a ``SKILL.md`` in a folder of its
own (``skills/summarize/SKILL.md``), the layout Anthropic's and toolnexus's skills
use. A file starts with YAML front matter, and its body is the instructions the
model gets when a message targets the skill::

    ---
    name: summarize
    description: Summarizes a text in three sentences.
    tags: [text, summary]          # optional
    examples: ["Summarize this: ..."]  # optional
    ---
    You summarize the user's text in at most three sentences. ...

``name`` is the skill's id (the card's ``id`` and what a message targets);
``title`` (optional) is the card's human-readable ``name``. ``A2A_SKILLS_ENABLED``
(a list of ids) keeps only those skills; ``None`` keeps all.

A message targets a skill with ``"metadata": {"skill": "<id>"}`` on the message (or
on the ``SendMessage`` request, which becomes the task's metadata); the A2A
protocol has no field of its own for it.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from a2a.conf import a2a_settings

logger = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
#: A skill id: what the card and the ``skill`` metadata key use.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
#: What may come before the front matter: a byte-order mark, blank lines and HTML comments
#: (a file's path or licence, which Markdown shows nowhere), as a copied example has them.
_PREAMBLE = re.compile(r"\A\ufeff?(?:\s*<!--.*?-->)*\s*", re.DOTALL)
#: Metadata keys a message (or the request) may name its skill with.
SKILL_KEYS = ("skill", "skillId")


class SkillError(ValueError):
    """A SKILL.md that cannot be used (the message says which file and why)."""


@dataclass(frozen=True)
class Skill:
    id: str
    description: str
    instructions: str
    title: str = ""
    tags: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)

    def card_entry(self) -> dict[str, Any]:
        """The skill as the Agent Card lists it."""
        entry: dict[str, Any] = {
            "id": self.id,
            "name": self.title or self.id,
            "description": self.description,
            "tags": list(self.tags or (self.id,)),
        }
        if self.examples:
            entry["examples"] = list(self.examples)
        return entry


def _strings(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise SkillError(f"{path}: '{key}' must be a list of strings")
    return tuple(str(v) for v in value)


def parse_skill(text: str, path: Path) -> Skill:
    """One SKILL.md's text -> a Skill; SkillError says what is wrong."""
    text = _PREAMBLE.sub("", text, count=1)
    match = _FRONT_MATTER.match(text)
    if not match:
        raise SkillError(
            f"{path}: no front matter (the file must start with a '---' line, then 'name:' ...; "
            "only blank lines and HTML comments may come before it)"
        )
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise SkillError(f"{path}: the front matter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise SkillError(f"{path}: the front matter must be 'key: value' lines")
    skill_id = meta.get("name", meta.get("id"))
    if not isinstance(skill_id, str) or not ID_PATTERN.match(skill_id):
        raise SkillError(
            f"{path}: 'name' must be the skill's id: letters, digits, '-', '_' or '.', at most 64 "
            f"characters (got {skill_id!r})"
        )
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{path}: 'description' is required (one line saying what the skill does)")
    title = meta.get("title", "")
    if not isinstance(title, str):
        raise SkillError(f"{path}: 'title' must be a string")
    return Skill(
        id=skill_id,
        description=" ".join(description.split()),
        instructions=text[match.end() :].strip(),
        title=title.strip(),
        tags=_strings(meta.get("tags"), "tags", path),
        examples=_strings(meta.get("examples"), "examples", path),
        path=path,
    )


def skill_files(directory: Path) -> list[Path]:
    """The SKILL.md files of ``directory``: ``*/SKILL.md``, and ``SKILL.md`` itself."""
    files = sorted(directory.glob(f"*/{SKILL_FILE}"))
    if (directory / SKILL_FILE).is_file():
        files.insert(0, directory / SKILL_FILE)
    return files


def scan(directory: Path) -> tuple[list[Skill], list[str]]:
    """Every skill of ``directory`` and the problems found (unreadable or invalid files,
    duplicate ids); the skills are those that loaded, first of each id kept."""
    skills: list[Skill] = []
    problems: list[str] = []
    seen: dict[str, Path | None] = {}
    if not directory.is_dir():
        return [], [f"{directory} is not a directory"]
    for path in skill_files(directory):
        try:
            skill = parse_skill(path.read_text(encoding="utf-8"), path)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{path}: cannot be read: {exc}")
            continue
        except SkillError as exc:
            problems.append(str(exc))
            continue
        if skill.id in seen:
            problems.append(f"{path}: skill id {skill.id!r} is already used by {seen[skill.id]}")
            continue
        seen[skill.id] = path
        skills.append(skill)
    return skills, problems


def _signature(directory: Path) -> tuple[tuple[str, int], ...]:
    """What changes when a skill file is added, removed or edited (cheap: one stat each)."""
    out = []
    for path in skill_files(directory):
        try:
            out.append((str(path), path.stat().st_mtime_ns))
        except OSError:
            continue
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _load(directory: Path, signature: tuple[tuple[str, int], ...]) -> tuple[Skill, ...]:
    skills, problems = scan(directory)
    for problem in problems:
        logger.warning("skipping a skill: %s", problem)
    return tuple(skills)


def skills_dir(conf: Any = a2a_settings) -> Path | None:
    """``A2A_SKILLS_DIR`` (of ``conf``: an agent's settings, else the project's) as a
    path (relative to ``BASE_DIR``), or None when unset."""
    value = conf.SKILLS_DIR
    if not value:
        return None
    directory = Path(value).expanduser()
    if not directory.is_absolute():
        directory = Path(getattr(settings, "BASE_DIR", Path.cwd())) / directory
    return directory


def get_skills(conf: Any = a2a_settings) -> list[Skill]:
    """The skills of ``A2A_SKILLS_DIR``, filtered by ``A2A_SKILLS_ENABLED`` (of ``conf``:
    an agent's settings, else the project's); files are re-read when they change.
    Invalid files are skipped (logged; ``manage.py check`` reports them)."""
    directory = skills_dir(conf)
    if directory is None or not directory.is_dir():
        return []
    skills = list(_load(directory, _signature(directory)))
    enabled = enabled_ids(conf)
    if enabled is not None:
        skills = [s for s in skills if s.id in enabled]
    return skills


def enabled_ids(conf: Any = a2a_settings) -> list[str] | None:
    """``A2A_SKILLS_ENABLED`` (of ``conf``) as a list of ids (a comma-separated string is split), or None."""
    enabled = conf.SKILLS_ENABLED
    if enabled is None:
        return None
    if isinstance(enabled, str):
        return [item.strip() for item in enabled.split(",") if item.strip()]
    return [str(item) for item in enabled]


def get_skill(skill_id: str, conf: Any = a2a_settings) -> Skill | None:
    return next((s for s in get_skills(conf) if s.id == skill_id), None)


def requested_skill(message: dict[str, Any], metadata: dict[str, Any] | None = None) -> str | None:
    """The skill id a message targets: its ``metadata.skill`` (or ``skillId``), else the
    task's (the ``SendMessage`` request's) metadata; None when it names none."""
    for source in (message.get("metadata"), metadata):
        if isinstance(source, dict):
            for key in SKILL_KEYS:
                value = source.get(key)
                if isinstance(value, str) and value:
                    return value
    return None
