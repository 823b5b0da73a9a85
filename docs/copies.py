"""The docs' copies of the README's Quickstart blocks, and the changelog page.

The README holds the Quickstart (tests/thirdparty/ runs it as written); docs/getting-started.md
shows the same blocks. Each block is marked in both files::

    <!-- BEGIN README:install -->
    ...
    <!-- END README:install -->

(the HTML comments show nowhere), and the page holds a real copy, so that it reads
whole as a Markdown file on a code host. One source of truth, kept so:

- as an MkDocs hook (``hooks:`` in mkdocs.yml): the built pages take each block from the
  README at build time, and the changelog page is CHANGELOG.md itself;
- ``python docs/copies.py --write`` (``make docs`` runs it first) rewrites the copies in
  the docs from the README;
- ``python docs/copies.py --check`` (and tests/test_docs.py) fails when a copy differs.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CHANGELOG = ROOT / "CHANGELOG.md"
#: The pages holding copies of README blocks.
PAGES = [ROOT / "docs" / "getting-started.md", ROOT / "docs" / "handlers.md"]
#: A marked block: its name, and what lies between the markers.
BLOCK = re.compile(r"(<!-- BEGIN README:(?P<name>[\w-]+)[^>]*-->\n)(?P<body>.*?)(<!-- END README:(?P=name) -->)", re.S)


def readme_blocks(readme: str) -> dict[str, str]:
    """The README's marked blocks by name."""
    return {m.group("name"): m.group("body") for m in BLOCK.finditer(readme)}


def with_copies(page: str, blocks: dict[str, str]) -> str:
    """``page`` (in docs/) with each marked block replaced by the README's of the same
    name, its links made relative to docs/ (ValueError naming a block the README does
    not have)."""

    def copy(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in blocks:
            raise ValueError(f"README.md has no block marked {name!r} (<!-- BEGIN README:{name} -->)")
        # the README's links are from the repository's root; the page is in docs/
        return match.group(1) + re.sub(r"\]\(docs/", "](", blocks[name]) + match.group(4)

    return BLOCK.sub(copy, page)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """MkDocs hook: the README's blocks as the README has them now; the changelog page
    is CHANGELOG.md (the file in docs/ links to it, for readers on a code host)."""
    if page.file.src_uri == "changelog.md":
        return CHANGELOG.read_text()
    return with_copies(markdown, readme_blocks(README.read_text()))


def stale_pages() -> dict[Path, str]:
    """The pages whose copies differ from the README: path -> the page as it should be."""
    blocks = readme_blocks(README.read_text())
    fresh = {page: with_copies(page.read_text(), blocks) for page in PAGES}
    return {page: text for page, text in fresh.items() if text != page.read_text()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="rewrite the copies from the README")
    action.add_argument("--check", action="store_true", help="fail when a copy differs from the README")
    args = parser.parse_args(argv)
    stale = stale_pages()
    for page, text in stale.items():
        if args.write:
            page.write_text(text)
            print(f"{page.relative_to(ROOT)}: README blocks copied again")
        else:
            print(f"{page.relative_to(ROOT)} differs from README.md: run `make docs`", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
