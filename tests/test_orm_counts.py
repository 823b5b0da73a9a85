"""The ORM store's listing at scale: ``totalSize`` from counters the database's triggers
keep (``stores.TaskCount``), exact under concurrent writers, and listing queries that
use an index (``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN`` on PostgreSQL)."""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import re
import threading
from collections import Counter

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from stores.base import StaleTaskError, TaskQuery
from stores.cursors import encode_cursor
from stores.models import TaskCount, TaskRecord
from stores.orm import OrmTaskStore
from tests.db_marks import store_params

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
STATES = ["submitted", "working", "completed", "failed"]


def _kinds() -> list[str]:
    from tests.conftest import STORE_KINDS

    return [k for k in STORE_KINDS if k.startswith("orm")]


def _store(kind: str) -> OrmTaskStore:
    return OrmTaskStore("postgres" if kind == "orm-postgres" else "default")


def task(task_id: str, minute: int, state: str, owner: str = "", context: str = "c", version: int = 1) -> dict:
    stamp = (T0 + dt.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    out = {"id": task_id, "contextId": context, "status": {"state": state, "timestamp": stamp}, "_version": version}
    if owner:
        out["_owner"] = owner
    return out


def counted(store: OrmTaskStore) -> Counter:
    """What the counters say, per (owner, state) (zero rows left out)."""
    out: Counter = Counter()
    for owner, state, n in TaskCount.objects.using(store.using).values_list("owner", "state", "n"):
        out[(owner, state)] += n
    return Counter({key: n for key, n in out.items() if n})  # a negative count stays visible


def actual(store: OrmTaskStore) -> Counter:
    return Counter(TaskRecord.objects.using(store.using).values_list("owner", "state"))


def totals_agree(store: OrmTaskStore) -> None:
    """Every (owner, state) total the listing can ask for, counters against a count."""
    assert counted(store) == actual(store)
    rows = TaskRecord.objects.using(store.using)
    for owner in (None, "", "alice", "bob"):
        for state in (None, *STATES):
            query = TaskQuery(owner=owner, state=state, all_owners=owner is None)
            expected = rows.filter(**{k: v for k, v in (("owner", owner), ("state", state)) if v is not None}).count()
            assert store.list(query).total_size == expected, (owner, state)


@pytest.mark.parametrize("kind", store_params(transaction=True, kinds=_kinds()))
def test_counters_follow_every_kind_of_write(kind):
    store = _store(kind)
    assert store.list().total_size == 0
    store.save(task("a", 1, "submitted"))
    store.save(task("b", 2, "submitted", owner="alice"))
    store.save(task("c", 3, "working", owner="alice"), expected_version=0)
    totals_agree(store)
    store.save(task("a", 4, "working", version=2), expected_version=1)  # a transition
    store.save(task("a", 5, "working", version=3), expected_version=2)  # same state: no count moves
    store.save(task("b", 6, "completed", owner="bob"))  # another owner, another state
    totals_agree(store)
    with pytest.raises(StaleTaskError):
        store.save(task("a", 7, "failed", version=9), expected_version=7)  # refused: nothing counted
    store.delete("c")
    totals_agree(store)
    # Writes that do not go through the store are counted too (triggers, not the store):
    TaskRecord.objects.using(store.using).filter(pk="a").update(state="canceled")
    TaskRecord.objects.using(store.using).filter(owner="bob").delete()
    assert counted(store) == Counter({("", "canceled"): 1})
    assert store.list(TaskQuery(state="canceled")).total_size == 1
    assert store.list().total_size == 1


@pytest.mark.parametrize("kind", store_params(transaction=True, kinds=_kinds()))
def test_emptying_the_tables_in_any_order_leaves_the_counts_right(kind):
    """Django's flush empties the tables in no set order (``DELETE FROM`` each on SQLite,
    one ``TRUNCATE`` on PostgreSQL); the counts end at what the task table holds."""
    store = _store(kind)
    for i in range(3):
        store.save(task(f"t{i}", i, "working"))
    with connections[store.using].cursor() as cursor:
        cursor.execute("DELETE FROM stores_taskrecord_count")  # first: ignored on SQLite
        if kind == "orm-postgres":
            cursor.execute("TRUNCATE stores_taskrecord")
        else:
            cursor.execute("DELETE FROM stores_taskrecord")
    store.save(task("new", 9, "working"))
    assert counted(store) == Counter({("", "working"): 1})
    assert store.list().total_size == 1


@pytest.mark.parametrize("kind", store_params(transaction=True, kinds=_kinds()))
def test_the_first_page_does_not_count_the_tasks(kind):
    """The first page's total is a sum of counter rows: no COUNT over the task table."""
    store = _store(kind)
    for i in range(5):
        store.save(task(f"t{i}", i, "completed", owner="alice"))
    connection = connections[store.using]
    for query in (TaskQuery(), TaskQuery(owner="alice"), TaskQuery(owner="alice", state="completed")):
        with CaptureQueriesContext(connection) as queries:
            assert store.list(query).total_size == 5
        counts = [q["sql"] for q in queries if "COUNT(" in q["sql"].upper()]
        assert not counts, counts
    with CaptureQueriesContext(connection) as queries:  # a context's total still counts, through its index
        assert store.list(TaskQuery(owner="alice", context_id="c")).total_size == 5
    assert any("COUNT(" in q["sql"].upper() for q in queries)


@pytest.mark.skipif("orm-postgres" not in _kinds(), reason="needs A2A_TEST_POSTGRES_URL")
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_counters_stay_exact_under_concurrent_saves_and_deletes_on_postgresql():
    """Eight threads, each its own connection, create, transition (compare-and-swap and
    plain saves), re-own and delete tasks drawn from one small pool, so they collide on
    rows and on counter rows. At the end the counters equal a count, and no writer met
    a deadlock or lost an update of a count."""
    store = _store("orm-postgres")
    ids = [f"t{i}" for i in range(40)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(n: int) -> None:
        rng = random.Random(n)
        try:
            barrier.wait()
            for step in range(150):
                task_id = rng.choice(ids)
                op = rng.random()
                if op < 0.15:
                    store.delete(task_id)
                    continue
                current = store.get(task_id)
                version = current["_version"] if current else 0
                new = task(
                    task_id, step, rng.choice(STATES), owner=rng.choice(["", "alice", "bob"]), version=version + 1
                )
                if op < 0.6:
                    with contextlib.suppress(StaleTaskError):
                        store.save(new, expected_version=version)
                else:
                    store.save(new)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections["postgres"].close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sum(actual(store).values()) > 0
    totals_agree(store)


# --- query plans at 10^5 rows --------------------------------------------------------------

N = 100_000


def _fill(store: OrmTaskStore) -> None:
    connection = connections[store.using]
    columns = "id, context_id, state, task, created_at, updated_at, owner, version"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"INSERT INTO stores_taskrecord ({columns}) SELECT 'task-' || lpad(i::text, 8, '0'), "
                "'ctx-' || (i %% 1000), (ARRAY['submitted','working','completed','failed'])[1 + i %% 4], "
                "'{}'::jsonb, %s::timestamptz + i * interval '1 millisecond', "
                "%s::timestamptz + i * interval '1 millisecond', "
                "(ARRAY['', 'alice', 'bob'])[1 + i %% 3], 3 FROM generate_series(0, %s) AS i",
                [T0, T0, N - 1],
            )
            cursor.execute("ANALYZE stores_taskrecord")
        else:
            sql = f"INSERT INTO stores_taskrecord ({columns}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            rows = []
            for i in range(N):
                when = T0 + dt.timedelta(milliseconds=i)
                rows.append(
                    (
                        f"task-{i:08d}",
                        f"ctx-{i % 1000}",
                        STATES[i % 4],
                        "{}",
                        when,
                        when,
                        ["", "alice", "bob"][i % 3],
                        3,
                    )
                )
            cursor.executemany(sql, rows)


def _queries() -> list[TaskQuery]:
    middle = (T0 + dt.timedelta(milliseconds=N // 2)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    token = encode_cursor(middle, f"task-{N // 2:08d}")
    return [
        TaskQuery(page_size=50),
        TaskQuery(page_size=50, page_token=token),
        TaskQuery(page_size=50, owner="alice"),
        TaskQuery(page_size=50, owner="alice", page_token=token),
        TaskQuery(page_size=50, state="working", all_owners=True),
        TaskQuery(page_size=50, owner="alice", context_id="ctx-7"),
        TaskQuery(page_size=50, owner="alice", state="working"),
    ]


def _plans(store: OrmTaskStore, explain: str) -> list[tuple[str, str]]:
    """(SQL, plan) of every statement each listing of :func:`_queries` runs."""
    connection = connections[store.using]
    out = []
    for query in _queries():
        with CaptureQueriesContext(connection) as captured:
            page = store.list(query)
        assert page.tasks or query.context_id, query
        for q in captured:
            with connection.cursor() as cursor:
                cursor.execute(f"{explain} {q['sql']}")
                out.append((q["sql"], "\n".join(" ".join(map(str, row)) for row in cursor.fetchall())))
    return out


@pytest.mark.django_db(databases=["default"])
def test_sqlite_listing_plans_use_an_index_at_1e5_rows():
    store = _store("orm-sqlite")
    _fill(store)
    assert store.list().total_size == N  # the counters followed the bulk insert
    for sql, plan in _plans(store, "EXPLAIN QUERY PLAN"):
        assert "TEMP B-TREE" not in plan, (sql, plan)
        assert not re.search(r"\bSCAN stores_taskrecord\b(?! USING)", plan), (sql, plan)  # a full table scan


@pytest.mark.skipif("orm-postgres" not in _kinds(), reason="needs A2A_TEST_POSTGRES_URL")
@pytest.mark.django_db(databases=["postgres"])
def test_postgresql_listing_plans_use_an_index_at_1e5_rows():
    store = _store("orm-postgres")
    _fill(store)
    assert store.list().total_size == N
    for sql, plan in _plans(store, "EXPLAIN"):
        assert not re.search(r"Seq Scan on stores_taskrecord\s", plan), (sql, plan)  # the counters' few rows may be
        if re.search(r"^\s*(->\s*)?(Incremental )?Sort\b", plan, re.M):
            # only a context's rows (found through its index) may be sorted: few, whatever the table
            assert "Index Cond: ((context_id)" in plan, (sql, plan)
