"""The support matrix, one command: ``make matrix`` (``.venv/bin/nox``).

- ``nox -s thirdparty`` (a default): our wheel, built once, in a brand-new
  ``django-admin startproject`` project set up as the README says, served by uvicorn
  and driven over HTTP (tests/thirdparty/run.py), on every combination below. CI.
- ``nox -s layout`` (a default): the admin's layout browser test on Django 6.1 (the
  suite runs it on 5.2). CI.
- ``nox -s tests``: the whole pytest suite on every combination (the source tree,
  with that Python and Django). ``make test`` runs it on the default combination.
- ``nox -s "thirdparty(python='3.13', django='6.1')"``, ``nox -s tests -- -x -k push``: one
  combination, pytest arguments.

Why nox rather than tox: the matrix is not a cross product (Django 6 needs Python
3.12+), the wheel is built once and shared by every session, and the interpreters are
found where this machine keeps them (pyenv) before the sessions start; in a noxfile
each of those is a few lines of Python, where tox needs factor-conditional ini
entries, a plugin or a wrapper script.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from tests.thirdparty.run import build_dist  # noqa: E402

#: (Python, Django) pairs we support: 5.2 LTS on the oldest Python, every Django 6.x the
#: package admits (6.0 and the newest, 6.1) on the Pythons they support. The first is
#: the default (.venv, `make test`, CI).
MATRIX = [("3.11", "5.2"), ("3.12", "6.0"), ("3.12", "6.1"), ("3.13", "6.1")]

#: The admin's layout browser test (tests/test_admin_layout_browser.py) on the newest
#: Django: the suite's own run (``make test``) covers the oldest, 5.2.
LAYOUT = ("3.12", "6.1")

nox.options.sessions = ["thirdparty", "layout"]
nox.options.error_on_missing_interpreters = True  # a missing Python fails, never skips
nox.options.download_python = "never"  # no network but PyPI: use the machine's Pythons
nox.options.default_venv_backend = "virtualenv"


def django_requirement(version: str) -> str:
    return f"Django~={version}.0"  # that feature release, its newest patch


def _runs(command: str) -> bool:
    return (
        shutil.which(command) is not None and subprocess.run([command, "-c", ""], capture_output=True).returncode == 0
    )


def _version_key(path: Path) -> tuple[int, ...]:
    release = path.parent.parent.name  # <root>/versions/3.12.1/bin/python3.12
    return tuple(int(n) for n in release.split(".")) if release.replace(".", "").isdigit() else (0,)


def expose_interpreters() -> None:
    """Make ``pythonX.Y`` answer for each Python of the matrix. pyenv's shims answer
    only for the versions pyenv has activated, so for a Python that does not answer,
    the newest pyenv-installed patch is linked as ``.nox/_pythons/pythonX.Y``, first
    on PATH (only those names: ``python3`` and the rest stay as they were)."""
    missing = [python for python, _ in MATRIX if not _runs(f"python{python}")]
    roots = {Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")), Path.home() / ".pyenv"}
    links = ROOT / ".nox" / "_pythons"
    shutil.rmtree(links, ignore_errors=True)
    for python in missing:
        found = [p for root in roots for p in root.glob(f"versions/{python}.*/bin/python{python}") if p.is_file()]
        if found:
            links.mkdir(parents=True, exist_ok=True)
            link = links / f"python{python}"
            link.unlink(missing_ok=True)
            link.symlink_to(max(found, key=_version_key))
    if links.is_dir():
        os.environ["PATH"] = f"{links}{os.pathsep}{os.environ['PATH']}"


expose_interpreters()


#: Sessions of this run, for the closing "N passed, N failed" line CI's log ends with.
RESULTS = {"passed": 0, "failed": 0}


@contextlib.contextmanager
def counted() -> Iterator[None]:
    try:
        yield
    except BaseException:
        RESULTS["failed"] += 1
        raise
    RESULTS["passed"] += 1


@atexit.register
def _summary() -> None:
    if RESULTS["passed"] or RESULTS["failed"]:
        print(f"matrix: {RESULTS['passed']} passed, {RESULTS['failed']} failed")


@functools.cache
def wheel() -> str:
    """The wheel of the current tree, built once per nox run (sdist first, then the wheel from it)."""
    outdir = ROOT / ".nox" / "_dist"
    shutil.rmtree(outdir, ignore_errors=True)
    return str(build_dist(outdir).wheel)


@nox.session
@nox.parametrize(("python", "django"), MATRIX)
def thirdparty(session: nox.Session, django: str) -> None:
    """The wheel in a new Django project, set up as the README says (tests/thirdparty/run.py)."""
    with counted():
        session.run(
            sys.executable,
            str(ROOT / "tests" / "thirdparty" / "run.py"),
            "--venv",
            session.virtualenv.location,
            "--django",
            django_requirement(django),
            "--wheel",
            wheel(),
            "--workdir",
            session.create_tmp(),
            external=True,
        )


@nox.session
@nox.parametrize(("python", "django"), MATRIX)
def tests(session: nox.Session, django: str) -> None:
    """The whole suite from the source tree, on this Python and Django."""
    with counted():
        session.install("-r", "requirements-dev.txt", django_requirement(django))
        session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=LAYOUT[0])
def layout(session: nox.Session) -> None:
    """The admin's pages in Chromium at 1280 px on Django 6.1 (its page structure differs
    from 5.2's): only that browser test, with only what it needs (no full dev install)."""
    with counted():
        session.install(
            "-r", "requirements.txt", "pytest", "pytest-django", "playwright", django_requirement(LAYOUT[1])
        )
        session.run(
            "python", "-m", "pytest", "-p", "no:cacheprovider", "tests/test_admin_layout_browser.py", *session.posargs
        )
