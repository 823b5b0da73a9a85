"""The task-store contract, run on every backend (ORM on SQLite, and on PostgreSQL
when A2A_TEST_POSTGRES_URL is set): the seeds' examples, then listing and deletion."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest

from stores.base import StoreError, TaskQuery
from stores.file import FileTaskStore
from stores.timestamps import format_timestamp
from tests.conftest import ALL_DATABASES, STORE_KINDS, make_store

pytestmark = ALL_DATABASES

DURABLE_KINDS = [k for k in STORE_KINDS if k != "memory"]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def task(task_id: str, state: str = "completed", *, context: str = "ctx", minute: int = 0, **extra) -> dict:
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context,
        "status": {"state": state, "timestamp": format_timestamp(T0 + dt.timedelta(minutes=minute))},
        **extra,
    }


def test_save_then_get_back(store):
    saved = task("t1", artifacts=[{"artifactId": "a", "parts": [{"kind": "text", "text": "archived"}]}])
    assert store.save(saved) is saved
    loaded = store.get("t1")
    assert loaded == saved
    assert loaded["status"]["state"] == "completed"


def test_unknown_id_is_none_never_a_throw(store):
    assert store.get("nope") is None
    assert store.get("") is None


def test_save_replaces_the_previous_version(store):
    store.save(task("t1", "submitted"))
    store.save(task("t1", "working", minute=1))
    assert store.get("t1")["status"]["state"] == "working"
    assert store.list().total_size == 1


def test_stored_copy_is_isolated_from_the_caller(store):
    original = task("t1", "working")
    store.save(original)
    original["status"]["state"] = "mutated"
    got = store.get("t1")
    got["status"]["state"] = "mutated too"
    assert store.get("t1")["status"]["state"] == "working"


@pytest.mark.parametrize("bad", [None, "task", {"no": "id"}, {"id": ""}, {"id": 5}])
def test_save_refuses_a_task_without_an_id(store, bad):
    with pytest.raises(ValueError):
        store.save(bad)
    assert store.list().total_size == 0


@pytest.mark.parametrize("store_kind", DURABLE_KINDS)
def test_a_fresh_store_instance_sees_what_the_previous_one_saved(store_kind, tmp_path):
    first = make_store(store_kind, tmp_path)
    first.save(task("survivor", artifacts=[{"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]}]))
    again = make_store(store_kind, tmp_path)
    assert again is not first
    assert again.get("survivor")["artifacts"][0]["parts"][0]["text"] == "x"


def test_list_newest_first_with_filters(store):
    store.save(task("a", "completed", context="c1", minute=1))
    store.save(task("b", "working", context="c1", minute=3))
    store.save(task("c", "completed", context="c2", minute=2))
    assert [t["id"] for t in store.list().tasks] == ["b", "c", "a"]
    assert [t["id"] for t in store.list(TaskQuery(context_id="c1", owner="")).tasks] == ["b", "a"]
    assert [t["id"] for t in store.list(TaskQuery(context_id="c1", all_owners=True)).tasks] == ["b", "a"]
    assert [t["id"] for t in store.list(TaskQuery(state="completed")).tasks] == ["c", "a"]
    page = store.list(TaskQuery(updated_after=T0 + dt.timedelta(minutes=1, seconds=30)))
    assert [t["id"] for t in page.tasks] == ["b", "c"]
    assert page.total_size == 2


@pytest.mark.parametrize("year", [999, 1, 9])
def test_an_updated_after_before_the_year_1000_is_before_every_task(store, year):
    # Such a bound is written with a four-digit year ("0999-..."), as every stored
    # timestamp is: "999-..." would sort after "2026-..." and the store would find none.
    store.save(task("a", minute=0))
    store.save(task("b", minute=1))
    page = store.list(TaskQuery(updated_after=dt.datetime(year, 12, 31, tzinfo=dt.UTC)))
    assert [t["id"] for t in page.tasks] == ["b", "a"]
    assert page.total_size == 2


def test_list_pages_cover_everything_once(store):
    for i in range(23):
        # Several tasks share a timestamp: the id breaks the tie, so no task is lost.
        store.save(task(f"t{i:02d}", minute=i // 3))
    seen, token, pages = [], None, 0
    while True:
        page = store.list(TaskQuery(page_size=5, page_token=token))
        assert page.total_size == 23
        seen += [t["id"] for t in page.tasks]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert pages == 5
    assert len(seen) == len(set(seen)) == 23
    expected = sorted((f"t{i:02d}" for i in range(23)), key=lambda i: (int(i[1:]) // 3, i), reverse=True)
    assert seen == expected


def test_list_stays_correct_while_tasks_are_written(store):
    for i in range(10):
        store.save(task(f"t{i}", minute=i))
    first = store.list(TaskQuery(page_size=4))
    store.save(task("newer", minute=100))  # lands before the cursor: not on later pages
    rest = store.list(TaskQuery(page_size=100, page_token=first.next_page_token))
    assert [t["id"] for t in first.tasks] == ["t9", "t8", "t7", "t6"]
    assert [t["id"] for t in rest.tasks] == ["t5", "t4", "t3", "t2", "t1", "t0"]


@pytest.mark.parametrize(
    "query",
    [
        {"page_size": 0},
        {"page_size": 101},
        {"state": "sleeping"},
        {"page_token": "not-a-token!"},
        {"context_id": "c1"},  # whose context? (a context is per owner)
        {"context_id": "c1", "owner": "alice", "all_owners": True},
    ],
)
def test_list_rejects_bad_queries(query):
    with pytest.raises(ValueError):
        TaskQuery(**query)


def test_delete(store):
    store.save(task("t1"))
    assert store.delete("t1") is True
    assert store.get("t1") is None
    assert store.delete("t1") is False


def test_async_twins(store):
    async def go():
        await store.asave(task("t1", "working"))
        got = await store.aget("t1")
        page = await store.alist()
        deleted = await store.adelete("t1")
        return got, page, deleted

    got, page, deleted = asyncio.run(go())
    assert got["status"]["state"] == "working"
    assert [t["id"] for t in page.tasks] == ["t1"]
    assert deleted is True


@pytest.mark.parametrize("store_kind", DURABLE_KINDS)
def test_corrupt_record_reads_as_missing(store_kind, store, caplog):
    store.save(task("t1"))
    store.save(task("t2"))
    if store_kind.startswith("file"):
        store.path("t1").write_bytes(b'{"id": "t1", "status": {"sta')
    else:
        from django.db import connections

        with connections[store.using].cursor() as cursor:
            cursor.execute("UPDATE stores_taskrecord SET task = %s WHERE id = %s", ['"not a task"', "t1"])
    assert store.get("t1") is None
    assert "t1" in caplog.text
    assert [t["id"] for t in store.list().tasks] == ["t2"]  # listing skips it too
    assert store.get("t2")["id"] == "t2"


# --- file store specifics -----------------------------------------------------------


@pytest.mark.parametrize(
    "evil",
    ["../escape", "../../etc/passwd", "/etc/passwd", "a/b", "nul\x00byte", "..", ".", "x" * 5000, "é✓"],
)
def test_file_store_ids_never_escape_the_directory(tmp_path, evil, file_syscalls):
    directory = tmp_path / "tasks"
    store = FileTaskStore(directory, syscalls=file_syscalls)
    store.save(task(evil))
    files = [p for p in tmp_path.rglob("*") if p.is_file() and ".locks" not in p.parts]
    assert [p.parent for p in files] == [directory]
    assert len(files[0].name) <= 255
    assert store.get(evil)["id"] == evil


def test_file_store_ids_that_sanitize_alike_do_not_alias(tmp_path, file_syscalls):
    store = FileTaskStore(tmp_path, syscalls=file_syscalls)
    store.save(task("a.b"))
    assert store.get("a_b") is None  # same file name, different task
    assert store.get("a.b")["id"] == "a.b"


def test_file_store_reads_a_toolnexus_directory_and_writes_one_it_can_read(tmp_path, file_syscalls):
    # The shape toolnexus's FileTaskStore writes: <sanitized id>.json, no timestamp, no kind.
    (tmp_path / "3f2c-task.json").write_text(
        '{"id": "3f2c-task", "status": {"state": "completed"}, '
        '"artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "archived"}]}]}'
    )
    store = FileTaskStore(tmp_path, syscalls=file_syscalls)
    assert store.get("3f2c-task")["artifacts"][0]["parts"][0]["text"] == "archived"
    assert [t["id"] for t in store.list().tasks] == ["3f2c-task"]
    # And ours reads back there: toolnexus's get is json.load of <sanitize(id)>.json.
    store.save(task("ours-1"))
    import json

    assert json.loads((tmp_path / "ours-1.json").read_text())["status"]["state"] == "completed"


def test_file_store_creates_its_directory(tmp_path, file_syscalls):
    directory = tmp_path / "deep" / "er"
    FileTaskStore(directory, syscalls=file_syscalls).save(task("t1"))
    assert (directory / "t1.json").is_file()


def test_file_store_save_leaves_no_temp_files_and_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    store = FileTaskStore(tmp_path, syscalls="python")  # os.replace fails (the companion's: test_file_syscalls)
    store.save(task("t1", "working"))

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("stores.file.fsio.os.replace", broken_replace)
    with pytest.raises(StoreError, match="could not save the task: No space left on device"):
        store.save(task("t1", "completed"))
    monkeypatch.undo()
    assert store.get("t1")["status"]["state"] == "working"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["t1.json"]
    assert not list(tmp_path.glob(".tmp-*"))


def test_file_store_concurrent_readers_never_see_a_partial_file(tmp_path, file_syscalls):
    import threading

    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    big = "x" * 200_000  # large enough that a torn write would be visible
    store.save(task("hot", artifacts=[{"artifactId": "a", "parts": [{"kind": "text", "text": big}]}]))
    stop = threading.Event()
    bad: list[object] = []

    def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            store.save(
                task(
                    "hot",
                    minute=i % 50,
                    artifacts=[{"artifactId": "a", "parts": [{"kind": "text", "text": big}]}],
                    metadata={"writer": n, "i": i},
                )
            )

    def reader() -> None:
        for _ in range(400):
            got = store.get("hot")
            if got is None or got["artifacts"][0]["parts"][0]["text"] != big:
                bad.append(got)

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in writers + readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    for t in writers:
        t.join()
    assert bad == []
    assert [p.name for p in tmp_path.iterdir() if p.name != ".locks"] == ["hot.json"]


@pytest.mark.parametrize("store_kind", [k for k in STORE_KINDS if k == "orm-postgres"] or ["orm-sqlite"])
def test_orm_store_survives_a_dropped_connection(store_kind, store):
    """The database dropping the store's connection (a restart, an idle timeout) costs
    a reconnect, not an error."""
    from django.db import connections

    store.save(task("t1"))
    conn = connections[store.using]
    if conn.vendor == "postgresql":
        with conn.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        import psycopg
        from django.conf import settings

        with psycopg.connect(settings.POSTGRES_URL, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", [pid])
            # Termination is asynchronous: wait until the backend is really gone.
            for _ in range(500):
                if not killer.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                    break
                time.sleep(0.01)
    else:
        conn.connection.close()  # the SQLite handle goes away under Django's feet
    assert store.get("t1")["id"] == "t1"
    store.save(task("t2"))
    assert store.get("t2")["id"] == "t2"
