"""The code's shape, counted: modules over 600 lines, functions over 60, copied blocks,
and modules cut from another at a line rather than split by idea.

``python -m tests.shape`` prints each count (and the places) for ``a2a/``, ``stores/``
and ``tests/``; ``tests/test_shape.py`` holds them at zero. Generated code (the gRPC
stubs, migrations) is left out: nobody edits it by hand.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import sys
import tokenize
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("a2a", "stores", "tests")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
MIN_COPY_LINES = 10
GENERATED = ("a2a/grpc/a2a_pb2.py", "a2a/grpc/a2a_pb2_grpc.py", "stores/migrations/")


class Place(NamedTuple):
    """A finding: a file, a line, how many lines, and what."""

    path: str
    line: int
    lines: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.what} ({self.lines} lines)"


def modules() -> list[Path]:
    """Every hand-written Python module of the three packages."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(GENERATED) and "/interop/clients/" not in rel:
                found.append(path)
    return found


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def long_modules(paths: list[Path]) -> list[Place]:
    """Modules over :data:`MAX_MODULE_LINES` lines."""
    out = []
    for path in paths:
        count = len(path.read_text().splitlines())
        if count > MAX_MODULE_LINES:
            out.append(Place(rel(path), 1, count, "module"))
    return out


#: A module name that says it continues another (``conf_sections``, ``checks_part2``,
#: ``views_more``, ``models_2``): a cut at a line, not an idea of its own.
CONTINUATION_NAME = re.compile(r"(?:^|_)(?:sections|part\d*|more|continued|cont|overflow|extra|later|\d+)$")
#: A module docstring that says the module exists for the size limit ("apart from
#: checks.py for its size", "to keep conf.py within the module size limit").
SIZE_EXCUSE = re.compile(r"for (?:its|their) size|size limit|line limit|line count", re.IGNORECASE)


def cut_modules(paths: list[Path]) -> list[Place]:
    """Modules split off another by line count rather than by idea: named as a
    continuation (:data:`CONTINUATION_NAME`) or saying so in their docstring
    (:data:`SIZE_EXCUSE`). A module holds one idea and is named for it."""
    out = []
    for path in paths:
        source = path.read_text()
        count = len(source.splitlines())
        if CONTINUATION_NAME.search(path.stem):
            out.append(Place(rel(path), 1, count, f"module named as a continuation ({path.stem})"))
        elif excuse := SIZE_EXCUSE.search(ast.get_docstring(ast.parse(source)) or ""):
            out.append(Place(rel(path), 1, count, f"module kept apart for its size ({excuse.group(0)!r})"))
    return out


def long_functions(paths: list[Path]) -> list[Place]:
    """Functions (and methods) over :data:`MAX_FUNCTION_LINES` lines, decorators excluded."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(Place(rel(path), node.lineno, length, f"def {node.name}"))
    return out


def shaped_lines(source: str) -> list[tuple[int, str]]:
    """Each line of code as its shape: names, strings and numbers replaced by one letter
    each; blank lines, comments, docstrings, imports and lone punctuation dropped."""
    shapes: dict[int, list[str]] = defaultdict(list)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    skip_lines = _import_and_docstring_lines(source)
    for tok in tokens:
        line = tok.start[0]
        if line in skip_lines or tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
            continue
        if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            shapes[line].append("N")
        elif tok.type == tokenize.STRING or tokenize.tok_name[tok.type].startswith("FSTRING"):
            shapes[line].append("S")
        elif tok.type == tokenize.NUMBER:
            shapes[line].append("0")
        else:
            shapes[line].append(tok.string)
    out = []
    for line in sorted(shapes):
        text = " ".join(shapes[line])
        if any(ch.isalnum() for ch in text):
            out.append((line, text))
    return out


def _import_and_docstring_lines(source: str) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, ast.Import | ast.ImportFrom) or (docstring and isinstance(node.value.value, str)):
            skip.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return skip


def copied_blocks(paths: list[Path], size: int = MIN_COPY_LINES) -> list[tuple[Place, Place]]:
    """Pairs of places whose ``size`` consecutive code lines have the same shape (a longer
    copied run is reported once, at its start)."""
    seen: dict[tuple[str, ...], tuple[str, int, int]] = {}
    pairs: list[tuple[Place, Place]] = []
    for path in paths:
        lines, name, resume = shaped_lines(path.read_text()), rel(path), 0
        for i in range(len(lines) - size + 1):
            window = tuple(text for _, text in lines[i : i + size])
            if _thin(window):
                continue
            first = seen.setdefault(window, (name, lines[i][0], i))
            if i < resume or (first[0] == name and first[2] > i - size):
                continue
            resume = i + size
            span = lines[i + size - 1][0] - lines[i][0] + 1
            pairs.append((Place(first[0], first[1], span, "block"), Place(name, lines[i][0], span, "copy")))
    return pairs


def _thin(window: tuple[str, ...]) -> bool:
    """Data, not logic: a window of mostly one-name lines (a list of values, keyword
    arguments), or one of only class statements and literal assignments (a table of
    declarations, such as the protocol's error classes)."""
    if sum(len(line.split()) <= 4 for line in window) > len(window) // 2:
        return True
    return all(line.startswith("class ") or _LITERAL_ASSIGNMENT.match(line) for line in window)


_LITERAL_ASSIGNMENT = re.compile(r"^N( , N)* = [-S0 ,]+$")


def report() -> dict[str, list]:
    """Every count's findings, by measure."""
    paths = modules()
    return {
        f"modules over {MAX_MODULE_LINES} lines": long_modules(paths),
        "modules cut at a line, not split by idea": cut_modules(paths),
        f"functions over {MAX_FUNCTION_LINES} lines": long_functions(paths),
        f"copied blocks of {MIN_COPY_LINES}+ lines": copied_blocks(paths),
    }


def main() -> int:
    findings = report()
    for measure, places in findings.items():
        print(f"{measure}: {len(places)}")
        for place in places:
            print("   ", " ~ ".join(map(str, place)) if isinstance(place[0], Place) else place)
    return 0


if __name__ == "__main__":
    sys.exit(main())
