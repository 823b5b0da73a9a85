"""The file store's persisted listing index (``<dir>/.index/tasks``): a restarted process
loads it instead of reading every task file, and never trusts it blindly (torn, stale,
written behind its back: rebuilt or brought in line with the directory)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings

from stores.base import TaskQuery
from stores.file import FileTaskStore
from stores.file import fsio as file_module
from stores.file import store as store_module
from stores.file.index import SNAPSHOT_NAME
from stores.file.syscalls import Syscalls
from stores.index import TaskIndex
from tests.conftest import FILE_SYSCALLS, syscalls_backend
from tests.paging_checks import assert_pages_like_the_full_scan
from tests.test_store_index import make, ops, queries

ROOT = Path(__file__).resolve().parent.parent


def _ids(store, **query):
    return [t["id"] for t in store.list(TaskQuery(page_size=100, **query)).tasks]


class Reads:
    """Counts the task files a store reads (``stores.file.fsio.read_file`` under its directory)."""

    def __init__(self, directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        read_file = file_module.read_file
        prefix = str(directory) + os.sep

        def counting(path: str | os.PathLike[str], syscalls: Any, *, to_end: bool = False) -> bytes:
            name = os.fspath(path)
            if name.startswith(prefix) and name.endswith(".json") and os.sep + "." not in name[len(prefix) - 1 :]:
                self.n += 1
            return read_file(path, syscalls, to_end=to_end)

        monkeypatch.setattr(file_module, "read_file", counting)


def _fill(directory: Path, n: int, *, syscalls: Syscalls) -> FileTaskStore:
    store = FileTaskStore(directory, fsync=False, syscalls=syscalls)
    for i in range(n):
        store.save(make(f"t{i:03d}", i, f"c{i % 3}", "completed" if i % 2 else "working", "alice" if i % 5 else ""))
    return store


def test_a_restart_loads_the_snapshot_instead_of_reading_every_file(tmp_path, monkeypatch, file_syscalls):
    writer = _fill(tmp_path, 120, syscalls=file_syscalls)
    assert _ids(writer)[:2] == ["t119", "t118"]  # the first listing builds the index and persists it
    assert (tmp_path / ".index" / SNAPSHOT_NAME).exists()
    reads = Reads(tmp_path, monkeypatch)
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    page = restarted.list(TaskQuery(page_size=10))
    assert [t["id"] for t in page.tasks] == [f"t{i}" for i in range(119, 109, -1)]
    assert page.total_size == 120
    assert restarted._listing.last_build == "snapshot"
    assert reads.n == 10  # the page's own tasks, not the 120 files
    assert (
        restarted.list(TaskQuery(state="working", owner="alice")).total_size
        == writer.list(TaskQuery(state="working", owner="alice")).total_size
    )


def test_writes_since_the_snapshot_are_replayed_from_the_journal(tmp_path, monkeypatch, file_syscalls):
    writer = _fill(tmp_path, 30, syscalls=file_syscalls)
    writer.list()  # persisted at this point of the journal
    other = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)  # another process, writing since
    other.save(make("t001", 100, "c1", "failed", ""))
    other.save(make("new", 101, "c9", "working", ""))
    other.delete("t002")
    reads = Reads(tmp_path, monkeypatch)
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    first = restarted.list(TaskQuery(page_size=2))
    assert reads.n <= 2 * 2 + 2  # the tasks touched since (found changed, then replayed), the page
    assert [t["id"] for t in first.tasks] == ["new", "t001"]
    assert first.total_size == 30
    assert "t002" not in _ids(restarted)
    assert restarted.list(TaskQuery(state="failed")).total_size == 1
    assert restarted._listing.last_build == "snapshot"


def test_files_changed_behind_its_back_are_found_by_the_directory_check(tmp_path, file_syscalls):
    writer = _fill(tmp_path, 20, syscalls=file_syscalls)
    writer.list()
    # Written by something else (toolnexus, a copy, a writer killed before its journal line):
    (tmp_path / "foreign.json").write_bytes(orjson.dumps(make("foreign", 200, "c1", "completed", "")))
    replaced = tmp_path / ".replacement"
    replaced.write_bytes(orjson.dumps(make("t003", 300, "c1", "canceled", "")))
    os.replace(replaced, tmp_path / "t003.json")  # a new inode, as every atomic writer makes
    (tmp_path / "t004.json").unlink()
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    _ids(restarted)  # the directory is checked from here (in the background: the boot is the same)
    assert restarted._listing.checked.wait(10)
    assert _ids(restarted)[:2] == ["t003", "foreign"]
    assert restarted.list().total_size == 20
    assert restarted.list(TaskQuery(state="canceled")).total_size == 1
    assert "t004" not in _ids(restarted)
    assert restarted._listing.last_build == "snapshot"


def test_an_unchanged_directory_is_not_even_listed(tmp_path, monkeypatch, file_syscalls):
    """A restart after a quiet spell: the directory's mtime is the one the index last
    agreed with, so not even a directory listing; once anything changes in it, the
    listing runs again and finds what changed."""
    writer = _fill(tmp_path, 10, syscalls=file_syscalls)
    writer.list()
    time.sleep(1.1)  # the last change to the directory is a second old
    writer._listing.rebuild()
    writer.list()  # checked against the directory (and persisted) now
    writer._listing.persist()
    listings = []
    files = store_module._IndexSource.files
    monkeypatch.setattr(store_module._IndexSource, "files", lambda self: listings.append(1) or files(self))
    assert FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls).list().total_size == 10
    assert listings == []
    (tmp_path / "foreign.json").write_bytes(orjson.dumps(make("foreign", 200, "c1", "completed", "")))
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    _ids(restarted)
    assert restarted._listing.checked.wait(10)
    assert _ids(restarted)[0] == "foreign"
    assert listings == [1]


@pytest.mark.parametrize(
    "damage",
    ["truncate", "flip", "garbage", "empty", "other-format"],
)
def test_a_torn_or_damaged_snapshot_is_rebuilt_from_the_files(tmp_path, damage, caplog, file_syscalls):
    writer = _fill(tmp_path, 25, syscalls=file_syscalls)
    expected = _ids(writer)
    path = tmp_path / ".index" / SNAPSHOT_NAME
    data = path.read_bytes()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        i = len(data) - 40
        data = data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1 :]
    elif damage == "garbage":
        data = os.urandom(len(data))
    elif damage == "empty":
        data = b""
    else:  # records out of order, and the rest: tests/test_store_index_mapped.py
        data = data.replace(b"a2a-task-index 2", b"a2a-task-index 9", 1)
    path.write_bytes(data)
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    with caplog.at_level(logging.WARNING, logger="stores.file"):
        assert _ids(restarted) == expected
    assert restarted._listing.last_build == "full"
    assert "rebuilding" in caplog.text
    # ... and written again, whole: the next restart loads it
    again = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert _ids(again) == expected
    assert again._listing.last_build == "snapshot"


def test_a_snapshot_older_than_the_journal_is_rebuilt(tmp_path, file_syscalls):
    writer = _fill(tmp_path, 5, syscalls=file_syscalls)
    writer.list()
    other = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    other._listing.journal.max_bytes = 200  # a few lines a generation
    for i in range(40):  # several generations go by: the snapshot's position is gone
        other.save(make(f"t{i % 8:03d}", 50 + i, "c1", "completed", ""))
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert _ids(restarted) == ["t007", "t006", "t005", "t004", "t003", "t002", "t001", "t000"]
    assert restarted._listing.last_build == "full"


def test_a_journal_generation_reused_inode_is_not_taken_for_the_old_one(tmp_path, file_syscalls):
    """A position names its journal generation by the id on its first line, not by the
    file's inode number (which a later generation may be given again)."""
    writer = _fill(tmp_path, 3, syscalls=file_syscalls)
    writer.list()
    journal = tmp_path / ".locks" / "journal"
    lines = journal.read_bytes().split(b"\n", 1)
    assert lines[0].startswith(b"#")
    # the same file, another generation: as if the inode had been reused
    journal.write_bytes(b"#0000000000000000\n" + lines[1] + b"x" * 4096)
    FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls).save(make("t000", 90, "c1", "failed", ""))
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert _ids(restarted)[0] == "t000"
    assert restarted._listing.last_build == "full"


def test_a_journal_an_older_version_wrote_is_moved_aside(tmp_path, file_syscalls):
    writer = _fill(tmp_path, 3, syscalls=file_syscalls)
    journal = tmp_path / ".locks" / "journal"
    journal.write_bytes(b'0123456789ab "t001"\n')  # no generation line
    assert _ids(writer) == ["t002", "t001", "t000"]
    assert journal.read_bytes().startswith(b"#")
    assert FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls).list().total_size == 3


def test_the_snapshot_is_refreshed_as_changes_go_by(tmp_path, file_syscalls):
    store = _fill(tmp_path, 3, syscalls=file_syscalls)
    store.list()
    store._listing.snapshots.every = 5
    path = tmp_path / ".index" / SNAPSHOT_NAME
    before = path.read_bytes()
    for i in range(6):
        store.save(make(f"n{i}", 100 + i, "c1", "completed", ""))
    store.list()
    for _ in range(200):  # written in the background
        if path.read_bytes() != before:
            break
        time.sleep(0.01)
    assert path.read_bytes() != before
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert _ids(restarted)[0] == "n5"


def test_odd_file_names_survive_a_restart(tmp_path, monkeypatch, file_syscalls):
    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    for i, task_id in enumerate(["a.b", "nul\x00x", "é", "x" * 300, "plain"]):
        store.save(make(task_id, i, "c1", "completed", ""))
    expected = _ids(store)
    reads = Reads(tmp_path, monkeypatch)
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert _ids(restarted) == expected
    assert restarted._listing.last_build == "snapshot"
    assert reads.n == len(expected)  # the page only: every file matched its stamp


def test_restore_refuses_columns_that_are_not_an_index():
    index = TaskIndex()
    index.put(make("a", 1, "c", "working", ""))
    index.put(make("b", 2, "c", "working", "alice"))
    columns = index.export()
    restored = TaskIndex.restore(*columns)
    assert restored.total(TaskQuery()) == 2
    assert restored.total(TaskQuery(owner="alice", state="working")) == 1
    ids, updated, contexts, states, owners = columns
    for bad in (
        (ids, updated[::-1], contexts, states, owners),  # out of order
        (ids, updated, contexts[:1], states, owners),  # lengths
        ([ids[0], ids[0]], [updated[0], updated[0]], contexts, states, owners),  # an id twice
        (ids, updated, [1, 2], states, owners),  # not strings
        (ids, ["x\x00", "y"], contexts, states, owners),  # NUL in a timestamp
    ):
        with pytest.raises(ValueError):
            TaskIndex.restore(*bad)


@pytest.mark.parametrize("backend", FILE_SYSCALLS)
@settings(max_examples=40, deadline=None)
@given(ops, ops, queries)
def test_a_restarted_store_pages_like_the_full_scan(tmp_path_factory, backend, before, after, query_args):
    """Writes before the snapshot, more after it (some journaled, some behind its back),
    then a restart: every page as the full scan of the same tasks has it."""
    file_syscalls = syscalls_backend(backend)  # (not the fixture: Hypothesis runs each example in one test)
    directory = tmp_path_factory.mktemp("tasks")
    writer = FileTaskStore(directory, fsync=False, syscalls=file_syscalls)
    tasks: dict = {}

    def apply(operations, *, journaled: bool) -> None:
        for op in operations:
            if op[0] == "put":
                task = make(*op[1:])
                tasks[task["id"]] = task
                if journaled:
                    writer.save(task)
                else:
                    path = writer.path(task["id"])
                    tmp = directory / ".behind"
                    tmp.write_bytes(orjson.dumps(task))
                    os.replace(tmp, path)
            else:
                tasks.pop(op[1], None)
                if journaled:
                    writer.delete(op[1])
                else:
                    writer.path(op[1]).unlink(missing_ok=True)

    apply(before, journaled=True)
    writer.list()  # persisted here
    apply(after[: len(after) // 2], journaled=True)
    apply(after[len(after) // 2 :], journaled=False)
    reader = FileTaskStore(directory, fsync=False, syscalls=file_syscalls)
    reader.list(TaskQuery(page_size=1))  # the directory is checked in the background from here
    assert reader._listing.checked.wait(10)
    assert_pages_like_the_full_scan(reader.list, tasks, query_args)
    assert reader._listing.last_build == "snapshot"


def test_processes_sharing_the_directory_and_its_snapshot(tmp_path, file_syscalls):
    """Real processes: two write at once while a third lists and persists; a fourth
    starts from the snapshot and lists every task at its last state."""
    directory = tmp_path / "tasks"
    _fill(directory, 10, syscalls=file_syscalls).list()
    script = textwrap.dedent(
        """
        import sys
        from stores.file import FileTaskStore
        from tests.test_store_index import make
        store = FileTaskStore(sys.argv[1], fsync=False, syscalls=sys.argv[3])
        store._listing.snapshots.every = 7
        name = sys.argv[2]
        for i in range(60):
            store.save(make(f"{name}{i % 20}", 1000 + i, "c1", "completed" if i >= 40 else "working", ""))
            if i % 5 == 0:
                store.list()
        store._listing.close()
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(directory), name, file_syscalls.name], cwd=ROOT)
        for name in ("p", "q")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    restarted = FileTaskStore(directory, fsync=False, syscalls=file_syscalls)
    assert restarted.list().total_size == 50
    assert restarted.list(TaskQuery(state="working")).total_size == 5  # t000..t009: half working
    assert restarted.list(TaskQuery(state="completed")).total_size == 45
    assert restarted._listing.last_build == "snapshot"
