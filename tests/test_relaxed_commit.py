"""Lease renewals, and only they, are saved as "not an acknowledgement"
(``stores.durability.not_an_acknowledgement``), which the ORM store on PostgreSQL commits with
``synchronous_commit`` off for that transaction alone (docs/stores.md, "What is durable
when")."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext

from a2a.core import lifecycle
from a2a.runtime.reaper import heartbeat
from stores.durability import acknowledged, not_an_acknowledgement
from stores.memory import MemoryTaskStore
from stores.orm import RELAXED_COMMIT
from tests.conftest import STORE_KINDS, make_store

ORM_KINDS = [k for k in STORE_KINDS if k.startswith("orm-")]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def task(task_id: str, state: str = "working", version: int = 1) -> dict:
    return {
        "id": task_id,
        "contextId": "c",
        "kind": "task",
        "status": {"state": state, "timestamp": "2026-01-01T00:00:00.000Z"},
        "_version": version,
    }


class Recording(MemoryTaskStore):
    """A memory store noting, for each save, whether it had to be durable on return."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[tuple[str, bool]] = []

    def save(self, task, expected_version=None):
        self.saves.append((task["status"]["state"], acknowledged()))
        return super().save(task, expected_version=expected_version)


class Runner:
    def __init__(self, *task_ids: str) -> None:
        self.ids = list(task_ids)
        self.canceled: list[str] = []

    def task_ids(self) -> list[str]:
        return list(self.ids)

    def cancel(self, task_id: str) -> None:
        self.canceled.append(task_id)


def test_the_context_is_scoped():
    assert acknowledged()
    with not_an_acknowledgement():
        assert not acknowledged()
    assert acknowledged()


def test_only_the_heartbeat_renewal_is_saved_as_no_acknowledgement():
    store = Recording()
    created = asyncio.run(lifecycle.create(store, task("t1", "submitted", 0)))
    assert created["_lease"]
    asyncio.run(heartbeat(Runner("t1"), store))  # renews t1's lease
    assert store.get("t1")["_version"] == 2

    def complete(t):
        t["status"] = {"state": "completed", "timestamp": "2026-01-01T00:01:00.000Z"}
        return t

    assert lifecycle.transition_sync(store, "t1", complete) is not None
    assert store.saves == [("submitted", True), ("submitted", False), ("completed", True)]
    assert acknowledged()  # nothing leaks out of the renewal


def test_a_failed_renewal_does_not_leak_the_context():
    class Failing(Recording):
        fail = False

        def save(self, task, expected_version=None):
            if self.fail:
                raise OSError("disk on fire")
            return super().save(task, expected_version=expected_version)

    store = Failing()
    asyncio.run(lifecycle.create(store, task("t1", "submitted", 0)))
    store.fail = True
    with pytest.raises(OSError):
        lifecycle.transition_sync(store, "t1", lambda t: t, publish=False, durable=False)
    assert acknowledged()


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("kind", ORM_KINDS)
def test_orm_relaxes_the_commit_of_a_renewal_only_on_postgresql(kind, tmp_path):
    store = make_store(kind, tmp_path)
    connection = connections[store.using]
    store.save(task("t1"), expected_version=0)
    with CaptureQueriesContext(connection) as normal:
        store.save(task("t1", version=2), expected_version=1)
    with CaptureQueriesContext(connection) as renewal, not_an_acknowledgement():
        store.save(task("t1", version=3), expected_version=2)
    assert store.get("t1")["_version"] == 3
    assert len(normal.captured_queries) == len(renewal.captured_queries) == 1  # one statement each
    assert RELAXED_COMMIT not in normal.captured_queries[0]["sql"]
    relaxed = RELAXED_COMMIT in renewal.captured_queries[0]["sql"]
    assert relaxed == (connection.vendor == "postgresql")
    if connection.vendor != "postgresql":
        return
    # The setting holds for the statement's own transaction, never for the session.
    with transaction.atomic(using=store.using):
        with not_an_acknowledgement():
            store.save(task("t1", version=4), expected_version=3)
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone()[0] == "off"
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] != "off"
    # A stale renewal still writes nothing.
    with pytest.raises(Exception) as stale, not_an_acknowledgement():
        store.save(task("t1", version=9), expected_version=7)
    assert type(stale.value).__name__ == "StaleTaskError"
    assert store.get("t1")["_version"] == 4
