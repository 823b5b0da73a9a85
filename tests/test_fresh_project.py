"""What a Django user expects of their own project on the first try (issue 12): the
project's MIDDLEWARE sees the A2A routes by default, the agent is named after the
project, the admin has its CSS under an ASGI server with DEBUG on, settings come from
the environment, and a configuration error stops the server at start-up with the
system check's message. The fresh ``startproject`` itself: tests/thirdparty/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.db import connections

from a2a.conf import a2a_settings, from_environment, project_name
from a2a.testing.client import rpc_body
from stores.orm import OrmTaskStore
from tests.helpers import call
from tests.middleware import PROJECT_MIDDLEWARE
from tests.ports import free_port
from tests.server import ROOT, manage, running_server, site_env, uvicorn_command

SEND = rpc_body("SendMessage", {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}})
V10 = {"A2A-Version": "1.0"}


# --- MIDDLEWARE applies to the A2A routes by default --------------------------------------


def test_the_projects_middleware_sees_a2a_requests_by_default(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, PROJECT_MIDDLEWARE]
    assert a2a_settings.DIRECT_ASGI is False  # the default: no setting needed
    answer = call("POST", "/a2a/", json=SEND, headers=V10)
    assert answer.status_code == 200 and answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answer.headers["X-Project-Middleware"] == "/a2a/"
    task_id = answer.json()["result"]["task"]["id"]
    rest = call("GET", f"/a2a/rest/tasks/{task_id}", headers=V10)
    assert rest.status_code == 200 and rest.headers["X-Project-Middleware"] == f"/a2a/rest/tasks/{task_id}"
    card = call("GET", "/.well-known/agent-card.json")
    assert card.status_code == 200 and card.headers["X-Project-Middleware"] == "/.well-known/agent-card.json"
    # The project's security middleware too (the example site's MIDDLEWARE starts with it).
    assert card.headers["X-Content-Type-Options"] == "nosniff"


def test_the_fast_path_is_an_opt_in_that_skips_middleware(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, PROJECT_MIDDLEWARE]
    settings.A2A_DIRECT_ASGI = True
    answer = call("POST", "/a2a/", json=SEND, headers=V10)
    assert answer.status_code == 200 and "X-Project-Middleware" not in answer.headers


# --- The agent is named after the project -------------------------------------------------


def test_the_agent_is_named_after_the_project_when_a2a_agent_name_is_unset(settings):
    settings.A2A_AGENT_NAME = None  # as in a project that does not set it
    settings.ROOT_URLCONF = "toolnexus_site.urls"
    card = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    assert card["name"] == "toolnexus_site"
    settings.A2A_AGENT_NAME = "weather-agent"
    assert call("GET", "/.well-known/agent-card.json", headers=V10).json()["name"] == "weather-agent"


def test_project_name_falls_back_to_base_dir_then_a_generic_name(settings, tmp_path):
    settings.ROOT_URLCONF = "myproject.urls"
    assert project_name() == "myproject"
    del settings.ROOT_URLCONF
    settings.BASE_DIR = tmp_path / "weather"
    assert project_name() == "weather"
    del settings.BASE_DIR
    assert project_name() == "A2A agent"


def test_the_agent_name_comes_from_the_environment():
    assert from_environment({"A2A_AGENT_NAME": "from-env"}) == {"A2A_AGENT_NAME": "from-env"}


# --- Static files (the admin's CSS) under an ASGI server with DEBUG on ---------------------


def test_static_files_are_served_under_debug_as_runserver_does(settings):
    settings.DEBUG = True
    css = call("GET", "/static/admin/css/base.css")
    assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")
    assert call("POST", "/a2a/", json=SEND, headers=V10).status_code == 200  # everything else as before
    settings.DEBUG = False  # production: WhiteNoise or the web server (docs/deployment.md)
    assert call("GET", "/static/admin/css/base.css").status_code == 404


# --- Configuration errors stop the server at start-up --------------------------------------


def start_and_fail(env: dict[str, str], tmp_path: Path) -> str:
    """Start uvicorn with the example site and ``env``: it must exit non-zero on its own;
    return its output."""
    command = uvicorn_command(free_port())
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Application startup failed" in output, output
    assert "Uvicorn running" not in output, output  # it never served a request
    return output


@pytest.mark.slow
@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("TASK_STORE", "nowhere", "(stores.E001) Unknown TASK_STORE 'nowhere'."),
        ("A2A_HANDLER", "myproject.missing.handle", "(a2a.E001) A2A_HANDLER 'myproject.missing.handle' cannot be used"),
        (
            "A2A_AGENTS",
            '{"billing": {"HANDLER": "billing.missing.handle"}}',
            "(a2a.E001) A2A_AGENTS['billing']: A2A_HANDLER 'billing.missing.handle' cannot be used",
        ),
    ],
    ids=["task-store", "handler", "agent"],
)
def test_a_configuration_error_stops_uvicorn_at_start_up_with_the_checks_message(tmp_path, setting, value, message):
    output = start_and_fail(site_env(**{setting: value}), tmp_path)
    assert message in output, output
    assert "SystemCheckError: System check identified some issues" in output


#: Stores with a path this process cannot create or write, as root too (no chmod: root
#: bypasses permission bits): a directory under /proc, a path under a file. Each is an
#: error of `manage.py check` and stops the server, saying what to do.
UNUSABLE_PATHS = [
    ({"TASK_STORE": "file:/proc/a2a-tasks"}, "(stores.E003) TASK_STORE is the file store in /proc/a2a-tasks, which"),
    ({"TASK_STORE": "file:{tmp}/a-file/tasks"}, "is not a directory"),
    (
        {"TASK_STORE": "orm", "DATABASE_URL": "sqlite:////proc/a2a-db/db.sqlite3"},
        "(stores.E004) TASK_STORE is the ORM store on database 'default', a SQLite file in /proc/a2a-db",
    ),
    ({"TASK_STORE": "orm", "DATABASE_URL": "sqlite:////proc/db.sqlite3"}, "(stores.E004)"),
    ({"A2A_AGENTS": '{"billing": {"TASK_STORE": "file:/proc/billing"}}'}, "(stores.E003)"),
]


def _unusable_env(variables: dict[str, str], tmp_path: Path) -> dict[str, str]:
    (tmp_path / "a-file").write_text("")
    return site_env(**{name: value.replace("{tmp}", str(tmp_path)) for name, value in variables.items()})


@pytest.mark.parametrize(
    ("variables", "message"), UNUSABLE_PATHS, ids=["file", "under-a-file", "sqlite", "sqlite-root", "agent"]
)
def test_a_store_path_that_cannot_be_written_is_a_check_error(tmp_path, variables, message):
    command = [sys.executable, str(ROOT / "manage.py"), "check"]
    done = subprocess.run(command, env=_unusable_env(variables, tmp_path), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0, done.stdout
    assert message in done.stderr and "HINT: Point " in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("variables", "message"), UNUSABLE_PATHS[:3], ids=["file", "under-a-file", "sqlite"])
def test_a_store_path_that_cannot_be_written_stops_uvicorn(tmp_path, variables, message):
    output = start_and_fail(_unusable_env(variables, tmp_path), tmp_path)
    assert message in output and "Traceback" not in output, output


@pytest.mark.slow
def test_unapplied_orm_store_migrations_stop_uvicorn_and_migrate_still_runs(tmp_path):
    env = site_env(TASK_STORE="orm", DATABASE_URL=f"sqlite:///{tmp_path / 'new.sqlite3'}")
    output = start_and_fail(env, tmp_path)
    said = "(stores.E002) TASK_STORE is the ORM store on database 'default', where the stores app's migrations"
    assert said in output, output
    assert "stores.0001_initial" in output and "HINT: Run `python manage.py migrate`." in output
    # `manage.py check` and `migrate` do not query the database for it: the fix works.
    manage("check", "--fail-level", "WARNING", env=env)
    manage("migrate", "--noinput", env=env)
    with running_server(env, log=tmp_path / "server.log") as base:
        answer = httpx.post(f"{base}/a2a/", json=SEND, headers=V10, timeout=30)
        assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_the_orm_store_checks_migrations_only_when_given_its_database(db):
    store = OrmTaskStore()
    assert store.check() == []  # manage.py check, migrate: no database query
    assert store.check(databases=["default"]) == []  # the test database is migrated


def test_the_orm_store_on_a_sqlite_file_it_cannot_write_is_a_check_error(db, monkeypatch, tmp_path):
    """No query: the file's directory is tried, as the file store's (SQLite writes its
    journal beside the file); an in-memory database has no file to check."""
    settings_dict = connections["default"].settings_dict
    monkeypatch.setitem(settings_dict, "NAME", str(tmp_path / "a-file" / "db.sqlite3"))
    (tmp_path / "a-file").write_text("")
    [error] = OrmTaskStore().check()
    assert error.id == "stores.E004" and "does not exist" in error.msg
    monkeypatch.setitem(settings_dict, "NAME", str(tmp_path / "db.sqlite3"))
    assert OrmTaskStore().check() == []
    monkeypatch.setitem(settings_dict, "NAME", ":memory:")
    assert OrmTaskStore().check() == []
