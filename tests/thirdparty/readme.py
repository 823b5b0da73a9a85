"""The README's Quickstart as steps (tests/thirdparty/run.py follows them): its sections
read as the files they show, and those files merged into the ones ``startproject``
generated, statement by statement. Standard library only, as run.py."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

#: The Quickstart's two parts (docs/getting-started.md includes the same code from there).
SECTION = "### Add it to your project"
HANDLER_SECTION = "### Write a handler"
#: The README's few lines for a second agent: settings, urls and its handler.
SECOND_AGENT_SECTION = "### A second agent"


class StepFailed(Exception):
    """A step of the test failed; the message says which and why."""


# --- The README ------------------------------------------------------------------------------


def readme_section(text: str, heading: str) -> str:
    """The text of the ``## heading`` (or ``### heading``...) section, up to the next
    heading of the same level or above."""
    start = text.index(heading + "\n")
    level = len(heading) - len(heading.lstrip("#"))
    lines = text[start:].splitlines(keepends=True)
    fenced = False  # a "# settings.py" line in a code block is no heading
    for i, line in enumerate(lines[1:], 1):
        fenced ^= line.startswith("```")
        if not fenced and re.match(rf"#{{1,{level}}} ", line):
            return "".join(lines[:i])
    return text[start:]


def fenced_blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)


#: A ``# <path>.py`` header saying so: the part is the whole file, written as it is.
WHOLE_FILE = "(the whole file)"


def files_of(block: str) -> dict[str, str]:
    """Split a README code block into its ``# <path>.py`` parts: path -> code."""
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in block.splitlines():
        header = re.match(r"#\s*(\S+\.py)\b", line)
        if header:
            current = parts.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
        elif line.strip():
            raise StepFailed(f"README block line outside a '# <file>.py' part: {line!r}")
    return {name: "\n".join(lines).strip() + "\n" for name, lines in parts.items()}


def whole_files_of(block: str) -> set[str]:
    """The parts of a README code block whose header says ``(the whole file)``."""
    return {m.group(1) for m in re.finditer(rf"^#\s*(\S+\.py)\s+{re.escape(WHOLE_FILE)}", block, re.MULTILINE)}


@dataclass
class ReadmeSteps:
    install_name: str  # what `pip install` names
    files: dict[str, str]  # settings.py, urls.py, asgi.py -> the code to merge into them
    new_files: dict[str, str]  # files the README has the user create (the handler)
    whole_files: set[str]  # those of ``files`` the README gives whole: they replace the generated one


def readme_steps(text: str) -> ReadmeSteps:
    section = readme_section(text, SECTION)
    # The distribution as a git URL names it: pip install "<name>[extras] @ git+https://..."
    installs = [
        m.group(1)
        for block in fenced_blocks(section, "sh")
        for m in re.finditer(r'pip install\s+"?([\w.-]+)(?:\[[\w,]*\])?\s*@\s*git\+', block)
    ]
    if not installs:
        raise StepFailed(f"the README's {SECTION!r} section has no `pip install <package> @ git+...` step")
    python_blocks = fenced_blocks(section, "python")
    if len(python_blocks) != 1:
        raise StepFailed(f"the README's {SECTION!r} section should have one python block, it has {len(python_blocks)}")
    files = files_of(python_blocks[0])
    for required in ("settings.py", "urls.py", "asgi.py"):
        if required not in files:
            raise StepFailed(f"the README's {SECTION!r} block has no '# {required}' part")
    handler_blocks = fenced_blocks(readme_section(text, HANDLER_SECTION), "python")
    new_files = files_of(handler_blocks[0]) if handler_blocks else {}
    return ReadmeSteps(installs[0], files, new_files, whole_files_of(python_blocks[0]))


def second_agent_steps(text: str) -> ReadmeSteps:
    """The README's "A second agent": its ``settings.py`` and ``urls.py`` parts (merged
    like the Quickstart's) and the handler file it shows (a part whose path has a ``/``)."""
    blocks = fenced_blocks(readme_section(text, SECOND_AGENT_SECTION), "python")
    if len(blocks) != 1:
        raise StepFailed(f"the README's {SECOND_AGENT_SECTION!r} section should have one python block")
    parts = files_of(blocks[0])
    for required in ("settings.py", "urls.py"):
        if required not in parts:
            raise StepFailed(f"the README's {SECOND_AGENT_SECTION!r} block has no '# {required}' part")
    files = {name: code for name, code in parts.items() if "/" not in name}
    return ReadmeSteps("", files, {name: code for name, code in parts.items() if "/" in name}, set())


# --- Merging the README's code into the generated files --------------------------------------


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _lines(source: str, node: ast.stmt) -> str:
    """The statement's whole lines (its trailing comment included)."""
    assert node.end_lineno is not None
    return "\n".join(source.splitlines()[node.lineno - 1 : node.end_lineno])


def _splice(source: str, start: int, end: int, replacement: str) -> str:
    """Replace lines start..end (1-based, inclusive; end = start - 1 inserts) with ``replacement``."""
    lines = source.splitlines()
    new = replacement.splitlines() if replacement else []
    return "\n".join(lines[: start - 1] + new + lines[end:]) + "\n"


def merge_statement(target: str, snippet: str, node: ast.stmt) -> str:
    """Apply one top-level statement of the README's snippet to the generated file's source."""
    tree = ast.parse(target)
    code = _lines(snippet, node)
    names = _bound_names(node)
    if isinstance(node, ast.Import | ast.ImportFrom):
        # The README's import replaces whatever bound the same names (drop them there).
        position = None
        for old in reversed(tree.body):
            if not isinstance(old, ast.Import | ast.ImportFrom) or not (_bound_names(old) & names):
                continue
            assert old.end_lineno is not None
            kept = [a for a in old.names if (a.asname or a.name).split(".")[0] not in names]
            rest = ast.unparse(type(old)(**{**old.__dict__, "names": kept})) if kept else ""
            target = _splice(target, old.lineno, old.end_lineno, rest)
            position = old.lineno + (1 if kept else 0)
        if position is None:
            imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
            position = (imports[-1].end_lineno or 0) + 1 if imports else 1
        return _splice(target, position, position - 1, code)
    if isinstance(node, ast.Assign) and len(names) == 1:
        (name,) = names
        existing = [n for n in tree.body if name in _bound_names(n)]
        if isinstance(node.value, ast.List) and any(
            isinstance(e, ast.Constant) and e.value is Ellipsis for e in node.value.elts
        ):
            # NAME = [..., new] / [new, ...]: the generated list with the README's items around it.
            if not existing or not isinstance(existing[-1], ast.Assign) or not isinstance(existing[-1].value, ast.List):
                raise StepFailed(f"the README extends {name} ([..., ...]) but the generated file has no list {name}")
            old = existing[-1]
            old_items = [ast.get_source_segment(target, e) for e in old.value.elts]
            items: list[str] = []
            for element in node.value.elts:
                if isinstance(element, ast.Constant) and element.value is Ellipsis:
                    items.extend(s for s in old_items if s)
                else:
                    items.append(ast.get_source_segment(snippet, element) or ast.unparse(element))
            tail = snippet.splitlines()[node.end_lineno - 1][node.end_col_offset :].strip()
            comment = f"  {tail}" if tail.startswith("#") else ""
            merged = f"{name} = [\n" + "".join(f"    {item},\n" for item in items) + "]" + comment
            assert old.end_lineno is not None
            return _splice(target, old.lineno, old.end_lineno, merged)
        if existing:  # the README's value replaces the generated one, where it was
            old = existing[-1]
            assert old.end_lineno is not None
            return _splice(target, old.lineno, old.end_lineno, code)
    last = _from_environment_line(tree)
    if last is not None:  # the README keeps `globals().update(from_environment())` last
        return _splice(target, last, last - 1, code + "\n")
    return target.rstrip("\n") + "\n\n" + code + "\n"


def _from_environment_line(tree: ast.Module) -> int | None:
    """The line of a top-level ``globals().update(from_environment(...))``, if any."""
    for node in tree.body:
        if isinstance(node, ast.Expr) and "from_environment(" in ast.unparse(node):
            return node.lineno
    return None


def merge(target: str, snippet: str) -> str:
    for node in ast.parse(snippet).body:
        target = merge_statement(target, snippet, node)
    ast.parse(target)  # still Python
    return target


def rebase_file_stores(snippet: str, workdir: Path) -> str:
    """Put an absolute ``"file:/..."`` TASK_STORE directory under ``workdir``."""
    return re.sub(r'"file:(/[^"]*)"', lambda m: json.dumps(f"file:{workdir}{m.group(1)}"), snippet)
