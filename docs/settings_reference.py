"""The settings reference of docs/settings.md, generated from the package ``a2a/conf/``.

Every setting declared in ``a2a.conf.SECTIONS`` becomes a row (name, default, type,
meaning): the default and the type (with its bounds or choices) are the declaration's,
the meaning is its ``doc``, and each section of ``SECTIONS`` (one per feature module of
``a2a/conf/``, in the order of ``a2a.conf.FEATURES``) is a table. So the page cannot say
what the code does not.

Used three ways:

- as an MkDocs hook (``hooks:`` in mkdocs.yml): the built page's table is rendered
  from the code at build time, whatever the committed file holds;
- ``python docs/settings_reference.py --write`` (``make docs`` runs it first) rewrites
  the table in docs/settings.md, so the page reads right on a code host too;
- ``python docs/settings_reference.py --check`` (and tests/test_docs.py) fails when
  the committed table and the code disagree.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "a2a" / "conf"
PAGE = ROOT / "docs" / "settings.md"
BEGIN = "<!-- BEGIN settings reference: generated from a2a/conf/ by docs/settings_reference.py -->"
END = "<!-- END settings reference -->"

_SETTING_NAME = re.compile(r"\b(?:A2A_[A-Z0-9_]+|TASK_STORE)\b")


def _sections() -> dict[str, dict[str, Any]]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from a2a.conf import SECTIONS  # the declarations themselves, as the code has them

    return SECTIONS


def format_default(value: Any) -> str:
    """A default as Python reads it back: strings in double quotes, lists as JSON."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | dict):
        text = json.dumps(value)
        try:
            if ast.literal_eval(text) == value:
                return text
        except (ValueError, SyntaxError):
            pass
    return repr(value)


def _source_expressions(source: str) -> dict[str, str]:
    """Setting name -> the default's expression as written (``10 * 1024 * 1024``): the
    second argument of each ``"NAME": Setting(type, default, ...)`` entry."""
    written: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if (
                isinstance(key, ast.Constant)
                and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "Setting"
                and len(value.args) > 1
            ):
                written[key.value] = ast.get_source_segment(source, value.args[1]) or ""
    return written


def rows() -> list[tuple[str, str, str]]:
    """(section, setting name, meaning) in the order of the declarations."""
    return [(title, name, s.doc) for title, section in _sections().items() for name, s in section.items()]


def _markdown_text(text: str) -> str:
    """A comment as table-cell Markdown: setting names as code, no stray HTML or pipes."""
    pieces = text.split("`")
    for i in range(0, len(pieces), 2):  # outside code spans
        piece = pieces[i].replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*")
        pieces[i] = _SETTING_NAME.sub(lambda m: f"`{m.group(0)}`", piece)
    return "`".join(pieces).replace("|", r"\|")


def render() -> str:
    """The generated reference: one table per section of a2a/conf/."""
    written = {
        name: text for path in sorted(CONF.glob("*.py")) for name, text in _source_expressions(path.read_text()).items()
    }
    out: list[str] = []
    for title, section in _sections().items():
        out += ["", f"### {_markdown_text(title)}", "", "| setting | default | type | meaning |", "|---|---|---|---|"]
        for name, setting in section.items():
            default = f"`{format_default(setting.default)}`"
            expression = written.get(name, "")
            if (
                expression
                and expression != format_default(setting.default)
                and not expression.startswith(("[", "{", '"'))
            ):
                default += f" (`{expression}`)"
            kind = _markdown_text(setting.describe()) or "see meaning"
            out.append(f"| `{name}` | {default} | {kind} | {_markdown_text(setting.doc)} |")
    return "\n".join(out[1:]) + "\n"


def replace_reference(markdown: str, table: str) -> str:
    """The page with the text between BEGIN and END replaced by ``table``."""
    head, begin, rest = markdown.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"docs/settings.md must hold {BEGIN!r} ... {END!r}")
    return f"{head}{BEGIN}\n{table}{END}{tail}"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """MkDocs hook: the settings page's table comes from the code at build time."""
    if page.file.src_uri == "settings.md":
        return replace_reference(markdown, render())
    return markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="rewrite the table in docs/settings.md")
    action.add_argument("--check", action="store_true", help="fail when docs/settings.md is out of date")
    args = parser.parse_args(argv)
    current = PAGE.read_text()
    fresh = replace_reference(current, render())
    if args.write:
        if fresh != current:
            PAGE.write_text(fresh)
            print("docs/settings.md: settings reference regenerated from a2a/conf/")
        return 0
    if fresh != current:
        print("docs/settings.md is out of date with a2a/conf/: run `make docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
