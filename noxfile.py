"""The support matrix, one command: ``make matrix`` (``.venv/bin/nox``).

- ``nox -s thirdparty`` (the default): our wheel, built once, in a brand-new
  ``django-admin startproject`` project set up as the README says, served by uvicorn
  and driven over HTTP (tests/thirdparty/run.py), on every combination below. CI.
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

#: (Python, Django) pairs we support: 5.2 LTS on the oldest Python, the newest Django
#: 6.x on the Pythons it supports. The first is the default (.venv, `make test`, CI).
MATRIX = [("3.11", "5.2"), ("3.12", "6.1"), ("3.13", "6.1")]

nox.options.sessions = ["thirdparty"]
nox.options.error_on_missing_interpreters = True  # a missing Python fails, never skips
nox.options.download_python = "never"  # no network but PyPI: use the machine's Pythons
nox.options.default_venv_backend = "virtualenv"


def django_requirement(version: str) -> str:
    return f"Django~={version}.0"  # that feature release, its newest patch


def _runs(command: str) -> bool:
    return (
        shutil.which(command) is not None and subprocess.run([command, "-c", ""], capture_output=True).returncode == 0
    )


def expose_pyenv_interpreters() -> None:
    """pyenv's shims answer only for the versions pyenv has activated; make the newest
    installed patch of each Python of the matrix answer too (PYENV_VERSION)."""
    missing = [python for python, _ in MATRIX if not _runs(f"python{python}")]
    if not missing or not shutil.which("pyenv"):
        return
    installed = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
    chosen = []
    for python in missing:
        patches = [v for v in installed if v.startswith(f"{python}.") and v.replace(".", "").isdigit()]
        if patches:
            chosen.append(max(patches, key=lambda v: tuple(map(int, v.split(".")))))
    current = subprocess.run(["pyenv", "version-name"], capture_output=True, text=True).stdout.strip().split(":")
    os.environ["PYENV_VERSION"] = ":".join(v for v in dict.fromkeys([*current, *chosen]) if v)


expose_pyenv_interpreters()


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
        session.run("python", "-m", "pytest", *session.posargs, env={"PYTHONPATH": str(ROOT)})
