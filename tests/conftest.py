"""Shared fixtures: a fresh store of each kind, store parametrization, a database of its
own for a server a test runs, and what the event bus published."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings

from a2a.core.events import bus
from stores.backends import get_task_store, resolve_store
from stores.base import TaskStore
from stores.file.syscalls import COMPANION, Syscalls, backend_named
from tests.server import postgres_database

#: The test kit's fixtures (a2a_client, fake_model, fake_agent), as an installed package
#: loads them; the servers' output in a failed test's report (tests.server_logs).
pytest_plugins = ["a2a.testing.plugin", "tests.server_logs"]

#: The file store's system-call backends (stores/file/syscalls.py) every file-store test
#: runs on: "python" (``os``) and "c" (the companion django-a2a-agent-fsio, which `make
#: test` builds and installs; skipped only where it is not installed).
FILE_SYSCALLS = ["python", "c"]
#: The file store on each backend, as store kinds: "file" (Python) and "file-c".
FILE_KINDS = ["file", "file-c"]
#: Store kinds every contract test runs on; "orm-postgres" only when it is configured.
STORE_KINDS = ["memory", *FILE_KINDS, "orm-sqlite"] + (["orm-postgres"] if "postgres" in settings.DATABASES else [])


def syscalls_backend(name: str) -> Syscalls:
    """The backend ``name`` names; the test is skipped for "c" where the companion is not installed."""
    if name == "c" and COMPANION is None:
        pytest.skip("the file store's C companion (django-a2a-agent-fsio) is not installed here: `make test` builds it")
    return backend_named(name)


def file_store_spec(kind: str, directory) -> dict:
    """The TASK_STORE of the file store of ``kind`` ("file", "file-c") in ``directory``."""
    syscalls = syscalls_backend("c" if kind == "file-c" else "python")
    return {"BACKEND": f"file:{directory}", "OPTIONS": {"syscalls": syscalls.name}}


def make_store(kind: str, tmp_path) -> TaskStore:
    if kind in FILE_KINDS:
        return resolve_store(file_store_spec(kind, tmp_path / "tasks"))
    return resolve_store({"memory": "memory", "orm-sqlite": "orm", "orm-postgres": "orm:postgres"}[kind])


#: Mark for modules whose tests use the ORM stores from several threads: real
#: transactions on every configured database, so worker threads see committed rows.
ALL_DATABASES = pytest.mark.django_db(transaction=True, databases="__all__")


@pytest.fixture(params=STORE_KINDS)
def store_kind(request) -> str:
    return request.param


@pytest.fixture
def store(store_kind, tmp_path) -> TaskStore:
    """A fresh store of each kind (the ORM ones on an empty, migrated test database)."""
    return make_store(store_kind, tmp_path)


@pytest.fixture
def use_store(store, settings):
    """Make ``store`` the project's TASK_STORE for the test."""
    settings.TASK_STORE = store
    assert get_task_store() is store
    return store


@pytest.fixture
def database_url(store: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """For a server a test runs on the ``orm-postgres`` store (``store``: the module's
    store kind), a PostgreSQL database of its own named after the module
    (``a2a_crash_...`` for ``test_crash``), dropped after: its URL; "" on other stores."""
    if store != "orm-postgres":
        yield ""
        return
    if "postgres" not in settings.DATABASES:
        pytest.skip("A2A_TEST_POSTGRES_URL is not set")
    prefix = "a2a_" + request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    with postgres_database(settings.POSTGRES_URL, prefix) as url:
        yield url


@pytest.fixture(params=FILE_SYSCALLS)
def file_syscalls(request) -> Syscalls:
    """Each file-store test on both system-call backends: pass it to the store
    (``FileTaskStore(..., syscalls=file_syscalls)``)."""
    return syscalls_backend(request.param)


@pytest.fixture
def heard() -> Iterator[list[dict]]:
    """Every task version published on the bus while the test runs."""
    seen: list[dict] = []
    bus.add_listener(seen.append)
    yield seen
    bus.remove_listener(seen.append)


@pytest.fixture(scope="session", autouse=True)
def _end_stray_connections(django_db_setup, django_db_blocker):
    """Worker threads (the runner's, asyncio's) each keep a connection, as they do in
    production; end them so the PostgreSQL test database can be dropped."""
    yield
    from django.db import connections

    with django_db_blocker.unblock():
        for conn in connections.all():
            if conn.vendor == "postgresql":
                with conn.cursor() as cursor:  # this worker's test database only, never the server's own
                    cursor.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid() AND datname LIKE %s",
                        ["test\\_%"],
                    )


@pytest.fixture(autouse=True)
def _fresh_runner():
    """Each test gets a fresh runner: no handler thread (and its database connection)
    outlives the test that started it."""
    yield
    from a2a.runtime import runner

    if runner._runner is not None:
        runner._runner.shutdown(grace=5)
        runner._runner = None
