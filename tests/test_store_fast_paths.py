"""The stores' fast paths (from the benchmark suite's profiles) keep their contracts."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import pytest

from stores.base import TaskQuery
from stores.cursors import decode_cursor, encode_cursor
from stores.file import FileTaskStore
from stores.file import fsio as file_module
from tests.conftest import STORE_KINDS, make_store

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def task(task_id: str, minute: int = 0, state: str = "completed") -> dict:
    stamp = (T0 + dt.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return {"id": task_id, "contextId": "c", "status": {"state": state, "timestamp": stamp}, "_version": 1}


# --- the file store answers aget from the page cache on the loop ------------------------------


@pytest.mark.parametrize("nowait", [True, False])
def test_file_store_aget(tmp_path, monkeypatch, nowait, file_syscalls):
    if not nowait:
        monkeypatch.delattr(file_module.os, "RWF_NOWAIT", raising=False)  # a platform without it
    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    store.save(task("a.b"))
    assert asyncio.run(store.aget("a.b"))["id"] == "a.b"
    assert asyncio.run(store.aget("a_b")) is None  # same file name, another task
    assert asyncio.run(store.aget("missing")) is None
    assert asyncio.run(store.aget("")) is None


def test_file_store_aget_of_a_damaged_file_reports_it(tmp_path, caplog, file_syscalls):
    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    store.save(task("t1"))
    store.path("t1").write_bytes(b'{"id": "t1", "stat')
    with caplog.at_level(logging.WARNING, logger="stores.file.taskfile"):
        assert asyncio.run(store.aget("t1")) is None
    assert "t1.json" in caplog.text


def test_read_if_cached(tmp_path):
    path = tmp_path / "x.json"
    assert file_module.read_if_cached(path) is None
    path.write_bytes(b"{}")
    assert file_module.read_if_cached(path) in (b"{}", file_module.NOT_CACHED)
    path.write_bytes(b"")
    assert file_module.read_if_cached(path) in (b"", file_module.NOT_CACHED)


# --- page tokens carry no count ----------------------------------------------------------------


def test_a_page_token_is_the_cursor_and_nothing_else():
    assert decode_cursor(encode_cursor("2026", "t1")) == ("2026", "t1")
    import base64

    import orjson

    for bad in (["a"], ["a", "b", 7], ["a", 1], {"a": 1}):  # [updated, id, total] was taken once: no more
        token = base64.urlsafe_b64encode(orjson.dumps(bad)).decode().rstrip("=")
        with pytest.raises(ValueError):
            decode_cursor(token)


# --- the ORM store ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_orm_store_creates_a_task_with_one_statement():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from stores.orm import OrmTaskStore

    store = OrmTaskStore()
    store.save(task("t0"))  # the connection is open
    with CaptureQueriesContext(connection) as queries:
        store.save(task("t1"), expected_version=0)
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["INSERT"]
    with pytest.raises(Exception, match="changed meanwhile"):
        store.save(task("t1"), expected_version=0)  # exists: a stale version


@pytest.mark.django_db(transaction=True)
def test_orm_store_create_inside_a_transaction_keeps_it_usable():
    from django.db import transaction

    from stores.base import StaleTaskError
    from stores.orm import OrmTaskStore

    store = OrmTaskStore()
    with transaction.atomic():
        store.save(task("t1"), expected_version=0)
        with pytest.raises(StaleTaskError):
            store.save(task("t1"), expected_version=0)
        assert store.get("t1")["id"] == "t1"  # the transaction still works


@pytest.mark.django_db(transaction=True)
def test_orm_store_deep_pages_count_from_the_counters_not_the_token():
    """Every page's total is the store's (a token holds none a client could alter); the
    triggers' counters answer it, so a deep page still runs no COUNT."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from stores.orm import OrmTaskStore

    store = OrmTaskStore()
    for i in range(7):
        store.save(task(f"t{i}", minute=i // 2))  # ties on updated_at: the id breaks them
    first = store.list(TaskQuery(page_size=3))
    assert first.total_size == 7
    seen = [t["id"] for t in first.tasks]
    token = first.next_page_token
    store.save(task("new", minute=99))  # after the first page: counted on the next ones, not listed
    while token:
        with CaptureQueriesContext(connection) as queries:
            page = store.list(TaskQuery(page_size=3, page_token=token))
        assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)
        assert page.total_size == 8
        seen += [t["id"] for t in page.tasks]
        token = page.next_page_token
    assert seen == ["t6", "t5", "t4", "t3", "t2", "t1", "t0"]


ORM_KINDS = [k for k in STORE_KINDS if k.startswith("orm-")]


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("kind", ORM_KINDS)
def test_orm_store_sql_paths_round_trip_what_the_orm_reads(kind, tmp_path):
    """get / CAS update / insert are SQL written by the store: what they store and read
    back is what the ORM stores and reads (the field's own JSON, exact big integers)."""
    from stores.models import TaskRecord

    store = make_store(kind, tmp_path)
    saved = task("t1") | {"metadata": {"big": 2**70 + 1, "ratio": 0.1, "text": "é\u2028"}}
    store.save(saved, expected_version=0)  # the INSERT
    assert store.get("t1") == saved
    row = TaskRecord.objects.using(store.using).get(pk="t1")
    assert (row.task, row.version, row.state, row.context_id) == (saved, 1, "completed", "c")
    assert row.created_at == row.updated_at == T0

    changed = saved | {"_version": 2, "status": {"state": "failed", "timestamp": "2026-01-01T00:05:00.000Z"}}
    store.save(changed, expected_version=1)  # the UPDATE ... AND version = 1
    row.refresh_from_db()
    assert (row.task, row.version, row.state) == (changed, 2, "failed")
    assert row.updated_at == T0 + dt.timedelta(minutes=5) and row.created_at == T0
    assert store.get("t1") == changed


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("kind", ORM_KINDS)
def test_orm_store_get_of_a_row_that_is_not_json_is_missing(kind, tmp_path, caplog):
    from django.db import connections

    store = make_store(kind, tmp_path)
    store.save(task("t1"))
    connection = connections[store.using]
    with connection.cursor() as cursor:  # another program wrote a JSON string, not an object
        cursor.execute("UPDATE stores_taskrecord SET task = %s WHERE id = %s", ['"t1"', "t1"])
    with caplog.at_level(logging.WARNING, logger="stores.orm"):
        assert store.get("t1") is None
    assert "corrupt" in caplog.text


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("kind", ORM_KINDS)
def test_orm_task_life_is_six_round_trips(kind, tmp_path):
    """submitted (one INSERT), working and completed with an artifact (each the
    lifecycle's read, then one compare-and-swap UPDATE, no re-read), GetTask (one
    SELECT of the task column): the counts ``python -m bench.micro --counts`` reports."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    from a2a.core import lifecycle
    from a2a.protocol.model import set_status

    store = make_store(kind, tmp_path)
    store.get("warm-up")  # the connection is open

    def completed(stored: dict) -> dict:
        stored["artifacts"] = [{"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}]
        return set_status(stored, "completed")

    new = {"kind": "task", "id": "t1", "contextId": "c", "status": {"state": "submitted", "timestamp": "x"}}
    steps = {
        "submitted": lambda: lifecycle.create_sync(store, new),
        "working": lambda: lifecycle.transition_sync(store, "t1", lambda t: set_status(t, "working")),
        "completed": lambda: lifecycle.transition_sync(store, "t1", completed),
        "GetTask": lambda: store.get("t1"),
    }
    verbs = {}
    for name, step in steps.items():
        with CaptureQueriesContext(connections[store.using]) as queries:
            step()
        verbs[name] = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert verbs == {
        "submitted": ["INSERT"],
        "working": ["SELECT", "UPDATE"],
        "completed": ["SELECT", "UPDATE"],
        "GetTask": ["SELECT"],
    }
    assert store.get("t1")["status"]["state"] == "completed" and store.get("t1")["_version"] == 3
    with pytest.raises(Exception, match="changed meanwhile"):  # still a compare-and-swap
        store.save(store.get("t1"), expected_version=2)


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("kind", ORM_KINDS)
def test_orm_plain_save_of_a_new_task_is_two_statements(kind, tmp_path, monkeypatch):
    """A save without a version: the UPDATE (which finds no row), then the lone INSERT
    (no BEGIN, lock, COMMIT round trips); a task created meanwhile by another writer is
    updated, last writer wins."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    store = make_store(kind, tmp_path)
    store.get("warm-up")
    with CaptureQueriesContext(connections[store.using]) as queries:
        store.save(task("n1"))
    assert [q["sql"].split()[0].upper() for q in queries.captured_queries] == ["UPDATE", "INSERT"]
    with CaptureQueriesContext(connections[store.using]) as queries:
        store.save(task("n1", minute=1))
    assert [q["sql"].split()[0].upper() for q in queries.captured_queries] == ["UPDATE"]

    real = store._insert
    theirs = task("n2") | {"metadata": {"by": "the other writer"}}

    def raced(task_id: str, fields: dict) -> bool:
        assert real(task_id, fields | {"task": theirs})  # the other writer's row, first
        return real(task_id, fields)

    monkeypatch.setattr(store, "_insert", raced)
    ours = task("n2") | {"metadata": {"by": "us"}}
    store.save(ours)
    assert store.get("n2") == ours
