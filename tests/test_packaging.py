"""The package: its dependencies are exactly what the apps import, and the wheel and sdist
``python -m build`` makes (with no C compiler: ``CC=false``) hold the two apps whole
(modules, migrations, management commands, templates, static files, py.typed) and the
LICENSE, and nothing else, in one pure-Python ``py3-none-any`` wheel; the wheel installs
into a fresh virtualenv with no compiler, every module of both apps imports there and the
file store runs there from Python. The file store's C companion (companions/) builds into a
wheel of its own, per platform."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

import a2a
from tests.thirdparty import run

ROOT = run.ROOT
APPS = ("a2a", "stores")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: The file store's C companion, a distribution of its own (its `fsio` extra).
FSIO = ROOT / "companions" / "django-a2a-agent-fsio"
FSIO_NAME = tomllib.loads((FSIO / "pyproject.toml").read_text())["project"]["name"]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return canonical(re.match(r"[A-Za-z0-9._-]+", requirement.strip()).group(0))


def imported_top_level_modules() -> set[str]:
    """Every module the two apps import (at any depth), by its top-level name."""
    found: set[str] = set()
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - set(APPS) - {"__future__"}


def test_the_dependencies_are_exactly_what_the_apps_import():
    distributions = importlib.metadata.packages_distributions()
    declared = {requirement_name(r) for r in PYPROJECT["project"]["dependencies"]}
    # The extras' packages are imported only by the backends that need them (the event
    # backends: redis, psycopg), when the settings choose those backends.
    extras = {requirement_name(r) for group in PYPROJECT["project"]["optional-dependencies"].values() for r in group}

    def provider(module: str) -> str:
        """The distribution providing ``module``: of a namespace package that several
        provide (opentelemetry), the declared one; a module no installed distribution
        provides is named as it is (and shows as missing)."""
        names = [canonical(d) for d in distributions.get(module, [FSIO_NAME if module == "a2a_fsio" else module])]
        return next((n for n in names if n in declared | extras), names[0])

    needed = {provider(module) for module in imported_top_level_modules()}
    assert needed - declared - extras == set(), "imported by a2a/stores but not in pyproject's dependencies or extras"
    assert declared - needed == set(), "in pyproject's dependencies but imported by neither app"


def test_requirements_txt_has_every_dependency_with_the_same_bounds():
    """The example site's requirements.txt installs what the wheel would, and more."""
    listed = {
        requirement_name(line): re.sub(r"\s+", "", line.split("#")[0])
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "-"))
    }
    extras = PYPROJECT["project"]["optional-dependencies"]
    for requirement in PYPROJECT["project"]["dependencies"] + extras["postgres"] + extras["redis"]:
        name = requirement_name(requirement)
        assert name in listed, f"{requirement} is missing from requirements.txt"
        assert listed[name].lower() == re.sub(r"\s+", "", requirement).lower(), f"{requirement} != {listed[name]}"


def test_the_version_is_in_one_place_and_in_the_changelog():
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "a2a.__version__"}
    assert f"## [{a2a.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


def source_files() -> set[str]:
    """The files of the two apps in the source tree (no bytecode, no C extension built in place)."""
    return {
        p.relative_to(ROOT).as_posix()
        for app in APPS
        for p in (ROOT / app).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo", ".so")
    }


def must_have() -> set[str]:
    return {
        "a2a/py.typed",
        "stores/py.typed",
        "a2a/management/commands/__init__.py",
        "a2a/management/commands/a2a_tasks.py",
        "a2a/management/commands/a2a_send.py",
        "a2a/management/commands/a2a_grpc.py",
        "a2a/grpc/a2a.proto",
        "a2a/grpc/a2a_pb2.py",
        "a2a/grpc/a2a_pb2.pyi",
        "a2a/grpc/a2a_pb2_grpc.py",
        "stores/migrations/__init__.py",
        "stores/migrations/0001_initial.py",
        "stores/templates/admin/stores/task_list.html",
        "stores/templates/admin/stores/task_detail.html",
    }


def assert_nothing_else(names: set[str]) -> None:
    for name in names:
        assert not name.startswith(("toolnexus_site/", "tests/", "bench/", "manage.py")), name
        assert "__pycache__" not in name and not name.endswith(".pyc"), name


@pytest.mark.slow
def test_the_wheel_holds_both_apps_whole_and_nothing_else():
    with zipfile.ZipFile(run.built_dist().wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        licenses = {n: wheel.read(n) for n in names if n.endswith(".dist-info/licenses/LICENSE")}
    files = {n for n in names if ".dist-info/" not in n}
    print("\n".join(sorted(names)))
    assert source_files() - files == set(), "in the source tree but not in the wheel"
    assert must_have() <= files
    assert any(n.startswith("stores/migrations/0") for n in files)
    assert {n.split("/")[0] for n in files} == set(APPS)
    assert_nothing_else(names)
    assert run.built_dist().wheel.name.endswith("-py3-none-any.whl")  # pure Python: no compiler, any platform
    assert not [n for n in names if n.endswith((".so", ".c", ".pyd"))]
    assert f"Version: {a2a.__version__}\n" in metadata
    assert "Requires-Python: >=3.11\n" in metadata
    assert "License-Expression: MIT\n" in metadata and "License-File: LICENSE\n" in metadata
    assert list(licenses.values()) == [(ROOT / "LICENSE").read_bytes()], "no LICENSE in .dist-info/licenses/"
    required = {canonical(m) for m in re.findall(r"^Requires-Dist: ([A-Za-z0-9._-]+)", metadata, re.MULTILINE)}
    assert {requirement_name(r) for r in PYPROJECT["project"]["dependencies"]} <= required
    for classifier in (
        "Framework :: Django :: 5.2",
        "Framework :: Django :: 6.0",
        "Framework :: Django :: 6.1",
        "Programming Language :: Python :: 3.13",
    ):
        assert f"Classifier: {classifier}\n" in metadata


@pytest.mark.slow
def test_the_sdist_holds_both_apps_the_docs_and_nothing_else():
    sdist = run.built_dist().sdist
    with tarfile.open(sdist) as archive:
        prefix = sdist.name.removesuffix(".tar.gz") + "/"
        names = {m.name.removeprefix(prefix) for m in archive.getmembers() if m.isfile()}
    print("\n".join(sorted(names)))
    assert source_files() - names == set(), "in the source tree but not in the sdist"
    assert must_have() | {"README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml", "docs/stores.md"} <= names
    assert_nothing_else(names)


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_virtualenv_and_every_module_imports(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile"]
    # With the `grpc` and `testing` extras: a2a.grpc (and the command serving it) and the test
    # kit's plugin (a2a.testing.plugin: pytest) import their packages at the top; and each
    # framework's extra, whose adapter (a2a.handlers.frameworks.*) imports its framework.
    extras = "grpc,testing,pydantic-ai,langgraph,openai-agents"
    subprocess.run(
        [*pip, f"{run.built_dist().wheel}[{extras}]"],
        check=True,
        capture_output=True,
        env={**os.environ, **run.NO_COMPILER},
    )
    script = textwrap.dedent(
        """
        import importlib, importlib.metadata, pkgutil, sys
        import django
        from django.conf import settings

        settings.configure(
            INSTALLED_APPS=["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                            "django.contrib.sessions", "django.contrib.messages", "a2a", "stores"],
            DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
            TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
            ROOT_URLCONF="a2a.urls", SECRET_KEY="x",
        )
        django.setup()
        # No extra brings in the official SDK, whose top-level `a2a` would shadow ours.
        assert "a2a-sdk" not in {d.metadata["Name"].lower() for d in importlib.metadata.distributions()}
        import a2a, stores
        for package in (a2a, stores):
            assert "site-packages" in package.__file__, package.__file__
            for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                importlib.import_module(module.name)
        from django.core.management import call_command, get_commands
        from django.template.loader import get_template
        get_template("admin/stores/task_list.html")
        assert {"a2a_tasks", "a2a_send", "a2a_grpc"} <= set(get_commands())
        call_command("migrate", "stores", verbosity=0)
        # The file store, from Python (no companion here): a save, a read, a listing.
        import tempfile
        from stores.file import FileTaskStore
        store = FileTaskStore(tempfile.mkdtemp())
        assert store.syscalls.name == "python", store.syscalls
        store.save({"id": "t1", "contextId": "c", "status": {"state": "working"}}, expected_version=0)
        assert store.get("t1")["status"]["state"] == "working" and store.list().total_size == 1
        assert [m.msg for m in store.check()] == ["file store system calls: Python"]
        print("\\n".join(sorted(str(f) for f in importlib.metadata.files("django-a2a-agent"))))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    env.update(run.NO_COMPILER)
    done = subprocess.run([python, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    installed = set(done.stdout.split())
    print(done.stdout)
    assert must_have() <= installed
    assert source_files() <= installed


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler here")
def test_the_companion_builds_a_wheel_of_its_own_per_platform(tmp_path):
    """``pip wheel companions/django-a2a-agent-fsio``: a2a_fsio and its C extension, on the
    stable ABI (one wheel for Python 3.11+ on this platform), and nothing of the apps."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(FSIO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [wheel] = tmp_path.glob("*.whl")
    assert wheel.name.startswith("django_a2a_agent_fsio-") and "-cp311-abi3-" in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as archive:
        files = {n for n in archive.namelist() if ".dist-info/" not in n}
    assert files == {
        "a2a_fsio/__init__.py",
        "a2a_fsio/_syscalls.abi3.so",
        "a2a_fsio/_syscalls.pyi",
        "a2a_fsio/py.typed",
    }


def test_the_fsio_extra_names_the_companion():
    assert PYPROJECT["project"]["optional-dependencies"]["fsio"] == [f"{FSIO_NAME}>=0.1"]
    assert "ext-modules" not in PYPROJECT["tool"]["setuptools"]  # the package itself builds no C


def test_py_typed_markers_exist():
    for app in APPS:
        assert (Path(ROOT) / app / "py.typed").is_file()


def test_the_license_is_mit_as_pyproject_says():
    assert PYPROJECT["project"]["license"] == "MIT"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 The django-a2a-agent contributors" in text
