"""TASK_STORE resolution, the settings read from the environment, and system checks."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from a2a.conf import FEATURES, SECTIONS, SETTINGS, a2a_settings, from_environment
from a2a.ops.checks import OWNERS
from a2a.setting import Setting, SettingError
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


# --- Typed settings: each declared once (a2a/conf/), checked against its declaration ---------


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        # a wrong type
        ("A2A_PUSH_NOTIFICATIONS", "no", "A2A_PUSH_NOTIFICATIONS must be True or False, not 'no'."),
        ("A2A_EXTENDED_CARD", ["description"], "A2A_EXTENDED_CARD must be a dict or None, not ['description']."),
        ("A2A_API_KEY_HEADER", None, "A2A_API_KEY_HEADER must be a string, not None."),
        # out of bounds
        ("A2A_MAX_BATCH_SIZE", 0, "A2A_MAX_BATCH_SIZE must be an integer >= 1, not 0."),
        ("A2A_STREAM_KEEPALIVE", -1, "A2A_STREAM_KEEPALIVE must be a number >= 0, not -1."),
        ("A2A_MAX_CONNECTIONS", -5, "A2A_MAX_CONNECTIONS must be an integer >= 0, not -5."),
        # not one of the choices
        ("A2A_LLM_STYLE", "cohere", "A2A_LLM_STYLE must be one of 'openai', 'anthropic', not 'cohere'."),
    ],
)
def test_a_value_that_does_not_fit_its_declaration_fails_the_check(settings, name, value, message):
    setattr(settings, name, value)
    with pytest.raises(SystemCheckError) as raised:
        call_command("check", databases=[])
    assert message in str(raised.value)
    [error] = [m for m in run_checks() if message in m.msg]
    assert error.id == SETTINGS[name].check_id and error.is_serious()


@pytest.mark.parametrize("name", ["A2A_LLM_API_KEY", "A2A_CARD_SIGNING_KEY"])
def test_a_mistyped_secret_is_named_but_never_shown(settings, name):
    setattr(settings, name, 1234567890)  # a key pasted as a number
    [error] = [m for m in run_checks() if m.msg.startswith(name)]
    assert (
        error.msg == f"{name} must be a string, not a value of type int (a secret: not shown)."
        and "1234567890" not in error.msg
    )


def test_every_default_fits_and_every_setting_has_one_check():
    for name, setting in SETTINGS.items():
        setting.validate(name, setting.default)
    assert sorted(OWNERS) == sorted(SETTINGS)


def test_every_feature_module_is_read_and_every_check_module_registered():
    """Each module of a2a/conf/ is a feature of FEATURES (one left out would declare
    settings nothing reads), a section of its own whose names no other declares; each
    module of a2a/ops/checks/ is imported by the package (one left out registers no check)."""
    declared = {path.stem for path in (ROOT / "a2a" / "conf").glob("*.py")} - {"__init__"}
    assert sorted(feature.__name__.rpartition(".")[2] for feature in FEATURES) == sorted(declared)
    assert len(SECTIONS) == len(FEATURES) and sum(len(f.DECLARED) for f in FEATURES) == len(SETTINGS)
    package = ROOT / "a2a" / "ops" / "checks"
    tree = ast.parse((package / "__init__.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {f"a2a.ops.checks.{path.stem}" for path in package.glob("*.py")} - imported == {"a2a.ops.checks.__init__"}


def test_values_come_as_their_declared_type(settings):
    settings.A2A_BLOCKING_TIMEOUT = 5
    settings.A2A_HEADER_TIMEOUT = "2.5"
    settings.A2A_TRACING = 0
    settings.A2A_INPUT_MODES = ("text/plain",)
    assert type(a2a_settings.BLOCKING_TIMEOUT) is float and a2a_settings.BLOCKING_TIMEOUT == 5.0
    assert a2a_settings.HEADER_TIMEOUT == 2.5
    assert a2a_settings.TRACING is False
    assert a2a_settings.INPUT_MODES == ["text/plain"]


def test_a_value_of_another_type_is_refused_where_it_is_read(settings):
    settings.A2A_WORKERS = 1.5
    with pytest.raises(SettingError, match=r"A2A_WORKERS must be an integer >= 1, not 1\.5\.") as raised:
        a2a_settings.WORKERS  # noqa: B018
    assert raised.value.check_id == "a2a.E002" and isinstance(raised.value, ImproperlyConfigured)
    settings.A2A_LEASE_SECONDS = 0.5  # below the check's bound: a test may shorten it
    assert a2a_settings.LEASE_SECONDS == 0.5


@pytest.mark.parametrize(
    ("setting", "value", "fits"),
    [
        (Setting(float, 1.0, "", min=0), True, False),  # a bool is not a number
        (Setting(int, 1, "", min=0), 2.0, False),  # nor a float an integer
        (Setting(int, 1, "", min=0), " 3 ", True),
        (Setting(float, 1.0, "", min=0), float("nan"), False),
        (Setting(str, None, ""), None, True),
        (Setting(str, "", ""), None, False),
        (Setting(str, "a", "", choices=("a", "b")), "c", False),
        (Setting(bool, False, ""), 2, False),
        (Setting(object, None, ""), object(), True),
    ],
)
def test_a_declaration_decides_what_fits(setting, value, fits):
    try:
        setting.validate("A2A_X", value)
    except SettingError:
        assert not fits
    else:
        assert fits


def test_the_environment_is_read_by_the_declared_type():
    assert from_environment({"A2A_SKILLS_ENABLED": "a, b", "A2A_TRACING": "yes", "A2A_LLM_SYSTEM_PROMPT": "[x] y"}) == {
        "A2A_SKILLS_ENABLED": "a, b",
        "A2A_TRACING": True,
        "A2A_LLM_SYSTEM_PROMPT": "[x] y",  # a string setting takes its text as it is
    }
    with pytest.raises(ImproperlyConfigured, match="A2A_EXTENDED_CARD"):
        from_environment({"A2A_EXTENDED_CARD": "not json"})
