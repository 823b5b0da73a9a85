"""TASK_STORE resolution, the settings read from the environment, system checks, and the
settings reference (docs/settings.md) held to the declarations (a2a/conf/declarations.py)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from a2a.conf import FEATURES, SETTINGS, a2a_settings, from_environment
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


def test_a_setting_read_once_is_a_plain_attribute_until_a_setting_changes(settings):
    settings.A2A_WORKERS = 3
    assert a2a_settings.WORKERS == 3
    assert vars(a2a_settings)["WORKERS"] == 3  # no failed lookup on the next read
    settings.A2A_MAX_PARTS = 7  # any A2A setting changed: every value is read again
    assert "WORKERS" not in vars(a2a_settings)
    assert a2a_settings.MAX_PARTS == 7 and a2a_settings.WORKERS == 3


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


def test_every_check_module_is_registered():
    """Each module of a2a/ops/checks/ is imported by the package (one left out registers no check)."""
    package = ROOT / "a2a" / "ops" / "checks"
    tree = ast.parse((package / "__init__.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {f"a2a.ops.checks.{path.stem}" for path in package.glob("*.py")} - imported == {"a2a.ops.checks.__init__"}


def test_every_setting_the_code_reads_is_declared():
    """A setting read anywhere in the apps (``a2a_settings.X``, ``settings.A2A_X``,
    ``getattr(settings, "A2A_X")``) is declared, hence documented."""
    read: set[str] = set()
    for app in ("a2a", "stores"):
        for path in (ROOT / app).rglob("*.py"):
            source = path.read_text()
            read.update(
                name if name == "TASK_STORE" else f"A2A_{name}"
                for name in re.findall(r"\ba2a_settings\.([A-Z][A-Z0-9_]*)", source)
            )
            read.update(re.findall(r"\bsettings\.((?:A2A_|TASK_STORE)[A-Z0-9_]*)", source))
            read.update(re.findall(r"getattr\(\s*settings,\s*[\"']((?:A2A_|TASK_STORE)[A-Z0-9_]*)", source))
    assert sorted(read - set(SETTINGS)) == [], "read by the code but not declared in a2a/conf/declarations.py"


# --- The settings reference (docs/settings.md): hand-written, held to the declarations --------

SETTINGS_PAGE = ROOT / "docs" / "settings.md"
#: An entry of the reference: its heading, a blank line, then its default and type.
_ENTRY = re.compile(r"#### `([A-Z][A-Z0-9_]*)`\n\n(.*)")
_SHOWN = re.compile(r"Default: `([^`]*)`(?: \(`([^`]*)`\))?\. Type: (.+)\.")
_MENTION = re.compile(r"\b(?:A2A|TASK)_[A-Z0-9_]*[A-Z0-9]\b")


def _written_defaults() -> dict[str, str]:
    """Setting name -> its default as a2a/conf/declarations.py writes it (``10 * 1024 * 1024``)."""
    source = (ROOT / "a2a" / "conf" / "declarations.py").read_text()
    return {
        key.value: ast.get_source_segment(source, value.args[1]) or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Dict)
        for key, value in zip(node.keys, node.values, strict=True)
        if isinstance(key, ast.Constant) and isinstance(value, ast.Call) and len(value.args) > 1
    }


def _shown_problems(name: str, shown: str, written: str) -> list[str]:
    """What the line ``Default: `...`. Type: ....`` of ``name``'s entry gets wrong."""
    setting = SETTINGS[name]
    match = _SHOWN.fullmatch(shown)
    if not match:
        return [f"{name}: no 'Default: `...`. Type: ....' line under its heading"]
    default, expression, kind = match.groups()
    problems = []
    try:
        value = ast.literal_eval(default)
    except (ValueError, SyntaxError):
        value = ...
    if value != setting.default or type(value) is not type(setting.default):
        problems.append(f"{name}: the page's default is {default}, the code's {setting.default!r}")
    if expression is not None and expression != written:
        problems.append(f"{name}: the page writes the default as {expression}, the code as {written}")
    if kind != (setting.describe() or "see below"):
        problems.append(f"{name}: the page's type is {kind!r}, the code's {setting.describe() or 'see below'!r}")
    return problems


def reference_problems(page: str) -> list[str]:
    """Where the reference of the settings page ``page`` and the declarations disagree: a
    declared setting missing or documented twice, a documented or named one that is not
    declared, one under another feature's section, a default or a type not the code's."""
    reference = page.partition("\n## Reference\n")[2]
    sections = re.split(r"^### .*$", reference, flags=re.MULTILINE)[1:]
    entries = [_ENTRY.findall(section) for section in sections]
    names = [name for section in entries for name, _ in section]
    written = _written_defaults()
    problems = [
        f"{name} is documented {names.count(name)} times" for name in sorted(set(names)) if names.count(name) > 1
    ]
    problems += [f"{name} is declared but not documented" for name in SETTINGS if name not in names]
    problems += [
        f"{name} is documented but not declared" for name in sorted(set(_MENTION.findall(reference)) - set(SETTINGS))
    ]
    sectioned = {feature: [name for name, _ in section] for feature, section in zip(FEATURES, entries, strict=False)}
    if len(sections) != len(FEATURES):
        problems.append(
            f"the reference has {len(sections)} sections, a2a/conf/declarations.py {len(FEATURES)} features"
        )
    problems += [
        f"the section of the feature {feature!r} documents {sectioned[feature]}, the code declares {list(declared)}"
        for feature, declared in FEATURES.items()
        if feature in sectioned and sectioned[feature] != list(declared)
    ]
    for name, shown in (entry for section in entries for entry in section):
        if name in SETTINGS:
            problems += _shown_problems(name, shown, written[name])
    return problems


def test_the_settings_page_documents_every_setting_as_it_is_declared():
    assert reference_problems(SETTINGS_PAGE.read_text()) == []


_WORKERS = "Default: `32`. Type: an integer >= 1."
_HEADING = "#### `A2A_WORKERS`"
_CARD = "### The Agent Card"

#: What the check says of the page with one edit (its text before, after).
_DRIFTS = {
    "the page's default is 33": (_WORKERS, _WORKERS.replace("32", "33")),
    "the page's default is 32.0": (_WORKERS, _WORKERS.replace("32", "32.0")),
    "the page's type is 'an integer >= 2'": (_WORKERS, _WORKERS.replace("1.", "2.")),
    "A2A_WORKERS: no 'Default": (_WORKERS, "Default: 8, an integer."),
    "writes the default as 10 * 1000 * 1000": ("`10 * 1024 * 1024`", "`10 * 1000 * 1000`"),
    "A2A_WORKERS is declared but not documented": (_HEADING, _HEADING.replace("WORKERS", "WORKER_COUNT")),
    "A2A_WORKER_COUNT is documented but not declared": (_HEADING, _HEADING.replace("WORKERS", "WORKER_COUNT")),
    "A2A_HANDLER is documented 2 times": (_HEADING, "#### `A2A_HANDLER`"),
    "A2A_HANDLERS is documented but not declared": ("Dotted path to the", "See A2A_HANDLERS: the"),
    "the reference has 21 sections": (_CARD, _CARD.lstrip("# ")),
    "the feature 'tasks' documents ['TASK_STORE'": (_CARD, _CARD.lstrip("# ")),
}


@pytest.mark.parametrize("problem", _DRIFTS)
def test_the_settings_page_is_refused_when_it_drifts_from_the_code(problem):
    old, new = _DRIFTS[problem]
    page = SETTINGS_PAGE.read_text()
    assert old in page
    problems = reference_problems(page.replace(old, new, 1))
    assert any(problem in found for found in problems), problems


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
        (Setting(float, 1.0, min=0), True, False),  # a bool is not a number
        (Setting(int, 1, min=0), 2.0, False),  # nor a float an integer
        (Setting(int, 1, min=0), " 3 ", True),
        (Setting(float, 1.0, min=0), float("nan"), False),
        (Setting(str, None), None, True),
        (Setting(str, ""), None, False),
        (Setting(str, "a", choices=("a", "b")), "c", False),
        (Setting(bool, False), 2, False),
        (Setting(object, None), object(), True),
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
