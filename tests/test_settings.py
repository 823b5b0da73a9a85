"""TASK_STORE resolution, the settings read from the environment, and system checks."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from a2a.conf import a2a_settings, from_environment
from stores.backends import get_task_store, resolve_store, task_stores
from stores.base import TaskStore
from stores.file import FileTaskStore
from stores.memory import MemoryTaskStore
from stores.orm import OrmTaskStore
from tests.server import ROOT, site_env


class NotAStore:
    pass


def test_memory_forms():
    assert isinstance(resolve_store(None), MemoryTaskStore)
    assert isinstance(resolve_store("memory"), MemoryTaskStore)
    assert isinstance(resolve_store(" memory "), MemoryTaskStore)


def test_file_forms(tmp_path, settings):
    store = resolve_store(f"file:{tmp_path}/a")
    assert isinstance(store, FileTaskStore) and store.directory == tmp_path / "a"
    settings.BASE_DIR = tmp_path
    assert resolve_store("file:./rel").directory == tmp_path / "rel"
    store = resolve_store({"BACKEND": f"file:{tmp_path}/b", "OPTIONS": {"fsync": False}})
    assert store.directory == tmp_path / "b" and store.fsync is False


def test_orm_forms():
    assert resolve_store("orm").using == "default"
    assert isinstance(resolve_store("orm:default"), OrmTaskStore)
    with pytest.raises(ImproperlyConfigured, match="'elsewhere', which is not in DATABASES"):
        resolve_store("orm:elsewhere")


def test_dotted_path_dict_and_instance(tmp_path):
    assert isinstance(resolve_store("stores.memory.MemoryTaskStore"), MemoryTaskStore)
    built = resolve_store({"BACKEND": "stores.file.FileTaskStore", "OPTIONS": {"directory": tmp_path}})
    assert isinstance(built, FileTaskStore)
    mine = MemoryTaskStore()
    assert resolve_store(mine) is mine


@pytest.mark.parametrize(
    "spec",
    [
        "redis://localhost",
        "file:",
        "nonsense",
        "no.such.module.Store",
        "tests.test_settings.NotAStore",
        42,
        ["memory"],
        {"BACKEND": 5},
        {"BACKEND": "memory", "OPTIONS": []},
        {"BACKEND": "memory", "EXTRA": 1},
        {"BACKEND": "stores.memory.MemoryTaskStore", "OPTIONS": {"unexpected": 1}},
    ],
)
def test_anything_else_is_improperly_configured(spec):
    with pytest.raises(ImproperlyConfigured) as exc:
        resolve_store(spec)
    assert "TASK_STORE" in str(exc.value)


def test_unknown_string_lists_the_accepted_forms():
    with pytest.raises(ImproperlyConfigured) as exc:
        resolve_store("nonsense")
    assert task_stores.accepted in str(exc.value)


def test_resolved_once_and_again_when_the_setting_changes(settings, tmp_path):
    first = get_task_store()
    assert get_task_store() is first
    settings.TASK_STORE = f"file:{tmp_path}"
    assert isinstance(get_task_store(), FileTaskStore)
    assert isinstance(get_task_store(), TaskStore)


def test_system_check_reports_a_bad_store(settings):
    settings.TASK_STORE = "nonsense"
    with pytest.raises(SystemCheckError, match=r"stores\.E001"):
        call_command("check", databases=[])  # Django 6 checks every database by default


@pytest.mark.parametrize(
    ("name", "value", "code"),
    [
        ("A2A_HANDLER", "no.such.handler", "a2a.E001"),
        ("A2A_HANDLER", "a2a.conf.DEFAULTS", "a2a.E001"),
        ("A2A_WORKERS", 0, "a2a.E002"),
        ("A2A_BLOCKING_TIMEOUT", "soon", "a2a.E002"),
        ("A2A_SKILLS", [{"name": "no id"}], "a2a.E003"),
        ("A2A_PUBLIC_URL", "agent.example.com", "a2a.E004"),
    ],
)
def test_system_checks_report_bad_a2a_settings(settings, name, value, code):
    setattr(settings, name, value)
    with pytest.raises(SystemCheckError, match=code.replace(".", r"\.")):
        call_command("check", databases=[])  # Django 6 checks every database by default


def test_settings_reload_when_overridden(settings):
    settings.A2A_WORKERS = 3
    assert a2a_settings.WORKERS == 3
    settings.A2A_WORKERS = 5
    assert a2a_settings.WORKERS == 5


def test_from_environment_parses_by_type():
    values = from_environment(
        {
            "TASK_STORE": "file:/var/tasks",
            "A2A_WORKERS": "16",
            "A2A_BLOCKING_TIMEOUT": "2.5",
            "A2A_INPUT_MODES": "text/plain, application/json",
            "A2A_SKILLS": '[{"id": "s", "name": "S", "description": "d", "tags": ["t"]}]',
            "UNRELATED": "x",
        }
    )
    assert values == {
        "TASK_STORE": "file:/var/tasks",
        "A2A_WORKERS": 16,
        "A2A_BLOCKING_TIMEOUT": 2.5,
        "A2A_INPUT_MODES": ["text/plain", "application/json"],
        "A2A_SKILLS": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}],
    }


@pytest.mark.parametrize("env", [{"A2A_WORKERS": "many"}, {"A2A_SKILLS": "[not json"}])
def test_from_environment_refuses_bad_values(env):
    with pytest.raises(ImproperlyConfigured, match=next(iter(env))):
        from_environment(env)


def test_the_site_reads_task_store_from_the_environment(tmp_path):
    def check(**env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", "check"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=site_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", **env),
        )

    bad = check(TASK_STORE="nonsense")
    assert bad.returncode != 0
    assert "stores.E001" in bad.stderr and "Unknown TASK_STORE 'nonsense'" in bad.stderr
    assert check(TASK_STORE=f"file:{tmp_path}/tasks").returncode == 0
    assert check(TASK_STORE="orm").returncode == 0
