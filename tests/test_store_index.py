"""The listing index (stores/index.py) pages exactly as the reference full scan does."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.base import TaskQuery
from stores.index import TaskIndex
from stores.memory import MemoryTaskStore
from tests.conftest import FILE_SYSCALLS, syscalls_backend
from tests.paging_checks import apply_operations, assert_pages_like_the_full_scan

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
STATES = ["submitted", "working", "completed", "failed"]


def make(task_id: str, minute: int, context: str, state: str, owner: str) -> dict:
    stamp = (T0 + dt.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S.000Z") if minute >= 0 else None
    task = {"id": task_id, "contextId": context, "status": {"state": state}}
    if stamp:
        task["status"]["timestamp"] = stamp
    if owner:
        task["_owner"] = owner
    return task


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"),
            st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "a.b", "nul\x00x", "é"]),
            st.integers(min_value=-1, max_value=5),  # -1: no timestamp (toolnexus files)
            st.sampled_from(["c1", "c2", ""]),
            st.sampled_from(STATES),
            st.sampled_from(["", "alice"]),
        ),
        st.tuples(st.just("remove"), st.sampled_from(["a", "b", "c", "nul\x00x"])),
    ),
    max_size=40,
)
queries = st.builds(
    dict,
    context_id=st.sampled_from([None, "c1", "c2", "", "nope"]),
    state=st.sampled_from([None, *STATES]),
    owner=st.sampled_from([None, "", "alice"]),
    updated_after=st.sampled_from([None, T0 + dt.timedelta(minutes=2)]),
    page_size=st.integers(min_value=1, max_value=4),
).map(lambda q: {**q, "all_owners": q["owner"] is None})  # a context query names its owner, or all


@settings(max_examples=300, deadline=None)
@given(ops, queries)
def test_index_pages_like_the_full_scan(operations, query_args):
    index = TaskIndex()
    tasks = apply_operations(operations, make, index.put, index.remove)
    assert_pages_like_the_full_scan(lambda query: index.page(query, tasks.get), tasks, query_args, more=True)


def test_a_task_that_no_longer_loads_is_skipped_and_the_page_filled():
    index = TaskIndex()
    tasks = {f"t{i}": make(f"t{i}", i, "c", "completed", "") for i in range(5)}
    for task in tasks.values():
        index.put(task)
    page = index.page(TaskQuery(page_size=2), lambda i: None if i == "t4" else tasks[i])
    assert [t["id"] for t in page.tasks] == ["t3", "t2"]


def test_memory_store_keeps_compact_copies():
    import tracemalloc

    tasks = [make(f"task-{i:04d}", i, f"c{i}", "completed", "") for i in range(1000)]
    tracemalloc.start()
    try:
        store = MemoryTaskStore()
        for task in tasks:
            store.save(task)
        allocated = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # orjson's own bytes keep a 4 KB buffer each (4 MB here); the store's copies are
    # as big as the JSON, plus the index.
    assert allocated < 1_000_000


# --- the file store's shared index -----------------------------------------------------------


def _ids(store, **query):
    return [t["id"] for t in store.list(TaskQuery(page_size=100, **query)).tasks]


def test_file_store_lists_what_another_instance_writes(tmp_path, file_syscalls):
    from stores.file import FileTaskStore

    a, b = (
        FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls),
        FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls),
    )
    a.save(make("t1", 1, "c", "working", ""))
    assert _ids(a) == ["t1"]  # a's index is built now
    b.save(make("t2", 2, "c", "working", ""))
    b.save(make("t1", 3, "c", "completed", ""))  # t1 moves ahead of t2
    assert _ids(a) == ["t1", "t2"]
    assert _ids(a, state="completed") == ["t1"]
    assert a.list(TaskQuery(state="working")).total_size == 1
    b.delete("t2")
    assert _ids(a) == ["t1"]


def test_file_store_index_survives_journal_rotations(tmp_path, file_syscalls):
    from stores.file import FileTaskStore

    a, b = (
        FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls),
        FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls),
    )
    for store in (a, b):
        store._listing.journal.max_bytes = 200  # a few lines a generation
    assert _ids(a) == []
    for i in range(5):  # a reads every generation: it follows them
        b.save(make(f"t{i}", i, "c", "completed", ""))
        assert _ids(a) == [f"t{j}" for j in range(i, -1, -1)]
    for i in range(5, 40):  # many generations go by unread: a rebuilds
        b.save(make(f"t{i}", i, "c", "completed", ""))
    assert _ids(a)[:3] == ["t39", "t38", "t37"]
    assert a.list(TaskQuery()).total_size == 40


def test_file_store_lists_files_written_behind_its_back_after_a_rebuild(tmp_path, file_syscalls):
    import orjson

    from stores.file import FileTaskStore

    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    store.save(make("t1", 1, "c", "completed", ""))
    assert _ids(store) == ["t1"]
    (tmp_path / "t2.json").write_bytes(orjson.dumps(make("t2", 2, "c", "completed", "")))
    assert store.get("t2")["id"] == "t2"  # get reads the file at once
    store._listing.rebuild()
    assert _ids(store) == ["t2", "t1"]
    (tmp_path / "t2.json").unlink()
    assert _ids(store) == ["t1"]  # a task whose file is gone is dropped from the page


@pytest.mark.parametrize("backend", FILE_SYSCALLS)
@settings(max_examples=60, deadline=None)
@given(ops, queries)
def test_file_store_pages_like_the_full_scan(tmp_path_factory, backend, operations, query_args):
    from stores.file import FileTaskStore

    file_syscalls = syscalls_backend(backend)  # (not the fixture: Hypothesis runs each example in one test)

    directory = tmp_path_factory.mktemp("tasks")
    writer, reader = (
        FileTaskStore(directory, fsync=False, syscalls=file_syscalls),
        FileTaskStore(directory, fsync=False, syscalls=file_syscalls),
    )
    reader.list()  # built before the writes: everything it lists comes through the journal
    tasks = apply_operations(operations, make, writer.save, writer.delete)
    assert_pages_like_the_full_scan(reader.list, tasks, query_args)
