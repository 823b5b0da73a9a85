"""The documentation site (mkdocs.yml, docs/) builds with warnings as errors and the
README's links lead somewhere (the settings page is held to the code by tests/test_settings.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from a2a.conf import DEFAULTS
from tests.server import ROOT


def _docs_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


copies = _docs_module("copies")


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """`mkdocs build --strict`, as `make docs`: a broken internal link or anchor, a page
    missing from the nav, or a missing snippet fails it."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    settings_html = (site / "settings.html").read_text()
    assert all(name in settings_html for name in DEFAULTS)
    getting_started = (site / "getting-started.html").read_text()
    assert "myproject.agent.handle" in getting_started and "Billing got" in getting_started  # the README's code
    assert "Unreleased" in (site / "changelog.html").read_text()  # CHANGELOG.md itself
    # Opened from disk (file://), a link to a directory shows a listing: every page link names a file.
    pages = re.findall(r'href="([^"#:]+)"', (site / "index.html").read_text())
    assert "getting-started.html" in pages
    assert [page for page in pages if page.endswith("/")] == []


def _links(markdown: str) -> list[str]:
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def _anchors(markdown: str) -> set[str]:
    """The anchors of a Markdown file's headings, as MkDocs' toc (and GitHub) make them."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    headings = re.findall(r"^#+\s+(.*)$", prose, flags=re.MULTILINE)
    return {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading.lower())).strip("-") for heading in headings}


def test_every_readme_link_resolves_to_a_file():
    links = _links((ROOT / "README.md").read_text())
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "the README links to the docs"
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README links to {link}: no such file"
        if anchor:
            assert anchor in _anchors(target.read_text()), f"README links to {link}: no such heading"


def test_the_readme_is_the_pitch_with_two_set_up_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme) < 12_000
    commands = re.findall(r"^```sh\n(make \w+)\n```", readme, flags=re.MULTILINE)
    assert commands == ["make run", "make test"]
    assert "docs/index.md" in readme


# --- The docs read as files, the README's copies, installing ----------------------------


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_docs_read_as_files_show_no_include_markers():
    """On a code host a Markdown file is shown as it is: no `--8<--` where code should be."""
    for path in _markdown_files():
        assert "--8<--" not in path.read_text(), f"{path.relative_to(ROOT)} holds an include marker"


def test_the_docs_copies_of_the_readme_blocks_are_the_readmes():
    blocks = copies.readme_blocks((ROOT / "README.md").read_text())
    assert {"install", "handler", "second-agent"} <= set(blocks)
    assert copies.stale_pages() == {}, "run `make docs` (python docs/copies.py --write)"
    page = (ROOT / "docs" / "getting-started.md").read_text()
    assert blocks["handler"] in page and "](docs/" not in page  # links made relative to docs/


def test_a_copy_that_drifted_is_found_and_rewritten():
    readme = "<!-- BEGIN README:x -->\nnew [a](docs/a.md)\n<!-- END README:x -->\n"
    page = "before\n<!-- BEGIN README:x (copied) -->\nold\n<!-- END README:x -->\nafter\n"
    fresh = copies.with_copies(page, copies.readme_blocks(readme))
    assert fresh == "before\n<!-- BEGIN README:x (copied) -->\nnew [a](a.md)\n<!-- END README:x -->\nafter\n"
    with pytest.raises(ValueError, match="no block marked 'x'"):
        copies.with_copies(page, {})


def _extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def test_installing_promises_no_package_index_and_names_real_extras():
    """Not on PyPI: every `pip install` of the package names a checkout, a git URL or a
    wheel; every extra named exists, and Installing lists them all."""
    for path in _markdown_files():
        for line in re.findall(r"pip install[^\n`]*django[-_]a2a[-_]agent[^\n`]*", path.read_text()):
            assert re.search(r"\./django-a2a-agent|@ git\+|\.whl", line), f"{path.relative_to(ROOT)}: {line}"
            for extras in re.findall(r"\[([a-z,]+)\]", line):
                assert set(extras.split(",")) <= _extras(), f"{path.relative_to(ROOT)}: {line}"
    installing = (ROOT / "docs" / "getting-started.md").read_text().split("### Installing", 1)[1].split("\n### ")[0]
    assert set(re.findall(r"^\| `([\w-]+)` \|", installing, flags=re.MULTILINE)) == _extras()
    assert "python -m build" in installing and "git+https://" in installing


def test_mkdocs_serve_is_where_a_reader_looks():
    for path in ("README.md", "docs/index.md"):
        assert "mkdocs serve" in (ROOT / path).read_text(), path


def test_the_index_links_every_page():
    """docs/index.md's "Where to read" is the way in: every page of docs/ is linked there."""
    index = (ROOT / "docs" / "index.md").read_text().split("## Where to read", 1)[1]
    pages = {str(path.relative_to(ROOT / "docs")) for path in (ROOT / "docs").rglob("*.md")} - {"index.md"}
    assert sorted(pages - set(_links(index))) == []
