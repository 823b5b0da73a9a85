"""The file store's mapped listing index (stores/file/snapshot.py, ``MappedIndex``): a
snapshot used in place plus the changes since answers every query as an index of the
same tasks built from scratch, and a damaged snapshot is found out as it is read."""

from __future__ import annotations

import logging
import os
import threading
import time
import zlib
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings

from stores.base import TaskQuery
from stores.file import FileTaskStore
from stores.file import snapshot as snapshot_module
from stores.file.index import SNAPSHOT_NAME
from stores.file.mapped import MappedIndex
from stores.file.snapshot import BLOCK, MAGIC, MappedSnapshot, SnapshotDamaged, write_snapshot
from stores.file.syscalls import Syscalls
from stores.index import TaskIndex
from tests.test_store_index import make, ops, queries


def _mapped(index: MappedIndex, path: Path) -> MappedSnapshot:
    path.write_bytes(b"".join(write_snapshot(index.rows(), {})))
    return MappedSnapshot(path)


def _apply(tasks: dict, operations, *targets) -> None:
    for op in operations:
        if op[0] == "put":
            task = make(*op[1:])
            tasks[task["id"]] = task
            for target in targets:
                target.put(task)
        else:
            tasks.pop(op[1], None)
            for target in targets:
                target.remove(op[1])


def _same_pages(got_index, want_index, tasks: dict, query_args: dict) -> None:
    token = None
    for _ in range(len(tasks) + 2):
        query = TaskQuery(page_token=token, **query_args)
        got = got_index.page(query, tasks.get)
        want = want_index.page(query, tasks.get)
        assert [t["id"] for t in got.tasks] == [t["id"] for t in want.tasks]
        assert got.total_size == want.total_size
        assert got.next_page_token == want.next_page_token
        token = got.next_page_token
        if not token:
            break


@settings(max_examples=300, deadline=None)
@given(ops, ops, ops, queries)
def test_a_mapped_snapshot_and_its_changes_page_like_a_fresh_index(tmp_path_factory, before, after, later, query_args):
    """Tasks in a snapshot, changes since (puts, removes); then the snapshot written
    again with the changes kept over it (a rebase) and more changes: every page, token
    and total as a TaskIndex of the same tasks has them."""
    directory = tmp_path_factory.mktemp("snap")
    tasks: dict = {}
    want, built = TaskIndex(), MappedIndex()
    _apply(tasks, before, want, built)
    mapped = MappedIndex(_mapped(built, directory / "one"))
    _apply(tasks, after, want, mapped)
    assert len(mapped) == len(want)
    _same_pages(mapped, want, tasks, query_args)
    # a snapshot of it taken here, the later changes made while it is written, kept over it
    written = _mapped(mapped, directory / "two")
    _apply(tasks, later, want, mapped)
    rebased = mapped.rebased(written, [op[1] for op in later])
    assert len(rebased) == len(want) == len(mapped)
    _same_pages(rebased, want, tasks, query_args)
    _same_pages(mapped, want, tasks, query_args)


def test_stamps_follow_the_changes(tmp_path):
    built = MappedIndex()
    built.put(make("a", 1, "c", "working", ""), 11)
    built.put(make("b", 2, "c", "working", ""), 12)
    mapped = MappedIndex(_mapped(built, tmp_path / "s"))
    assert (mapped.stamp_of("a"), mapped.stamp_of("b"), mapped.stamp_of("z")) == (11, 12, None)
    mapped.put(make("a", 3, "c", "completed", ""), 21)
    mapped.remove("b")
    assert (mapped.stamp_of("a"), mapped.stamp_of("b")) == (21, None)
    assert dict(mapped.stamps()) == {"a": 21}
    assert "a" in mapped and "b" not in mapped


# --- damage, found as it is read ----------------------------------------------------------


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` as every writer of a snapshot does (rename: a mapped copy of the
    one before stays as it was)."""
    tmp = path.with_name(".tmp-test")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _fill(directory: Path, n: int, *, syscalls: Syscalls) -> FileTaskStore:
    store = FileTaskStore(directory, fsync=False, syscalls=syscalls)
    for i in range(n):
        store.save(make(f"t{i:03d}", i, f"c{i % 3}", "completed" if i % 2 else "working", "alice" if i % 5 else ""))
    return store


def _ids(store, **query):
    return [t["id"] for t in store.list(TaskQuery(page_size=100, **query)).tasks]


def _parts(data: bytes) -> tuple[dict, int, int]:
    """(header, where the block checksums start, where the data starts)."""
    end = data.index(b"\n", len(MAGIC))
    header = orjson.loads(data[len(MAGIC) + 9 : end])
    blocks = -(-header["size"] // BLOCK)
    return header, end + 1, (end + 1 + 4 * blocks + 7) & ~7


def _checksummed(data: bytes, header: dict | None = None) -> bytes:
    """``data`` with every checksum made right again (as a careful forger would)."""
    old, _, start = _parts(data)
    header = header or old
    body = data[start:]
    crcs = b"".join(zlib.crc32(body[i : i + BLOCK]).to_bytes(4, "little") for i in range(0, len(body), BLOCK))
    header = {**header, "crcs_crc32": zlib.crc32(crcs)}
    raw = orjson.dumps(header)
    head = MAGIC + b"%08x " % zlib.crc32(raw) + raw + b"\n" + crcs
    return head + b"\0" * (((len(head) + 7) & ~7) - len(head)) + body


def _damage(data: bytes, how: str) -> bytes:
    header, _, start = _parts(data)
    records_at, records_size = header["sections"]["records"]
    if how == "flip-newest":  # a byte of the newest record: the first page reads it
        i = start + records_at + records_size - 3
        return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1 :]
    if how == "flip-context-order":
        at, size = header["sections"]["by_context"]
        i = start + at + size - 2
        return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1 :]
    if how == "out-of-order":  # whole and checksummed, but the newest record sorts first
        i = data.index(b"2026-01-01T00:24", start + records_at)
        return _checksummed(data[:i] + b"1" + data[i + 1 :])
    if how == "header-crc":
        i = len(MAGIC) + 20
        return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1 :]
    if how == "counts":
        header["counts"] = header["counts"][:1]
        return _checksummed(data, header)
    if how == "truncate":
        return data[: len(data) - 100]
    raise AssertionError(how)


@pytest.mark.parametrize(
    ("how", "query"),
    [
        ("flip-newest", {}),
        ("flip-context-order", {"context_id": "c1", "all_owners": True}),
        ("out-of-order", {}),
        ("header-crc", {}),
        ("counts", {}),
        ("truncate", {}),
    ],
)
def test_a_damaged_snapshot_is_found_out_when_read_and_rebuilt(tmp_path, how, query, caplog, file_syscalls):
    writer = _fill(tmp_path, 25, syscalls=file_syscalls)
    expected = _ids(writer, **query)
    path = tmp_path / ".index" / SNAPSHOT_NAME
    _replace(path, _damage(path.read_bytes(), how))
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    with caplog.at_level(logging.WARNING, logger="stores.file"):
        assert _ids(restarted, **query) == expected
    assert restarted._listing.last_build == "full"
    assert "rebuilding" in caplog.text
    assert restarted.list(TaskQuery(**query)).total_size == len(expected)
    again = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)  # ... and written again, whole
    assert _ids(again, **query) == expected
    assert again._listing.last_build == "snapshot"


def test_a_damaged_record_is_refused(tmp_path):
    built = MappedIndex()
    for i in range(300):
        built.put(make(f"t{i:03d}", i, "c", "working", ""), i + 1)
    path = tmp_path / "s"
    data = b"".join(write_snapshot(built.rows(), {}))
    _, _, start = _parts(data)
    i = start + 100
    path.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1 :])
    mapped = MappedIndex(MappedSnapshot(path))  # the header checks out: nothing else read yet
    assert mapped.page(TaskQuery(page_size=2), lambda task_id: {"id": task_id}).total_size == 300
    with pytest.raises(SnapshotDamaged):
        list(mapped.stamps())  # reaches the damaged block


def test_rows_out_of_order_are_not_written():
    with pytest.raises(ValueError):
        write_snapshot([(b"2\0a", b"", "working", "", 1), (b"1\0b", b"", "working", "", 2)], {})


# --- a snapshot of another format ---------------------------------------------------------

#: The first bytes of a snapshot of the format before the current one.
FORMAT_1_MAGIC = b"a2a-task-index 1\n"


def _format_1(store: FileTaskStore) -> bytes:
    """The store's index as the format before the current one wrote it."""
    index = store._listing.live.index
    rows = index.rows()
    ids = [key.partition(b"\0")[2].decode() for key, *_ in rows]
    updated = [key.partition(b"\0")[0].decode() for key, *_ in rows]
    coded = []
    for column in ([r[1].decode() for r in rows], [r[2] for r in rows], [r[3] for r in rows]):
        values = list(dict.fromkeys(column))
        coded += [values, [values.index(v) for v in column]]
    body = orjson.dumps([ids, updated, *coded, [r[4] for r in rows], dict(store._listing.live.odd)])
    with store._listing.live.lock:
        position = {"current": store._listing.journal.position()["current"], "old": None}
    header = {"tasks": len(ids), "bytes": len(body), "crc32": zlib.crc32(body), "journal": position}
    return FORMAT_1_MAGIC + orjson.dumps(header) + b"\n" + body


def test_a_snapshot_of_the_format_before_is_rebuilt_from_the_files(tmp_path, caplog, file_syscalls):
    """Not the current format: rebuilt from the task files, as a damaged one is."""
    writer = _fill(tmp_path, 30, syscalls=file_syscalls)
    expected = _ids(writer)
    path = tmp_path / ".index" / SNAPSHOT_NAME
    _replace(path, _format_1(writer))
    writer.save(make("t001", 100, "c1", "failed", ""))  # since that snapshot
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    with caplog.at_level(logging.WARNING, logger="stores.file"):
        assert _ids(restarted) == ["t001", *(i for i in expected if i != "t001")]
    assert restarted._listing.last_build == "full"
    assert "rebuilding" in caplog.text
    assert path.read_bytes().startswith(MAGIC)  # written again, in the current format
    again = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert again.list(TaskQuery(state="failed")).total_size == 1
    assert again._listing.last_build == "snapshot"


# --- the directory check: before the first page after a reboot, else in the background ----


def _behind_its_back(directory: Path) -> None:
    """What no store acknowledged: a foreign file, a file replaced, a file removed."""
    (directory / "foreign.json").write_bytes(orjson.dumps(make("foreign", 200, "c1", "completed", "")))
    replaced = directory / ".replacement"
    replaced.write_bytes(orjson.dumps(make("t003", 300, "c1", "canceled", "")))
    os.replace(replaced, directory / "t003.json")
    (directory / "t004.json").unlink()


def test_after_a_reboot_the_directory_is_checked_before_the_first_page(tmp_path, monkeypatch, file_syscalls):
    """A snapshot written before the machine booted: the journal's tail may have been
    lost with the page cache (never fsynced), so files saved and acknowledged then
    are found by the directory listing before anything is listed."""
    _fill(tmp_path, 20, syscalls=file_syscalls).list()
    _behind_its_back(tmp_path)
    monkeypatch.setattr(snapshot_module, "boot_id", lambda: "another-boot")
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert _ids(restarted)[:2] == ["t003", "foreign"]  # no waiting
    assert restarted.list().total_size == 20
    assert "t004" not in _ids(restarted)
    assert restarted._listing.checked.is_set()


def test_since_the_boot_every_acknowledged_save_is_listed_at_once(tmp_path, file_syscalls):
    """Same boot: the first page comes before the directory listing, and still lists
    every save a store acknowledged (the journal has them all, this process's own
    saves made before its first listing too); the listing then adds what no store
    acknowledged."""
    writer = _fill(tmp_path, 20, syscalls=file_syscalls)
    writer.list()
    other = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    other.save(make("t001", 100, "c1", "failed", ""))
    other.delete("t002")
    _behind_its_back(tmp_path)
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    restarted.save(make("mine", 150, "c1", "working", ""))  # before its first listing
    listing = restarted._listing
    gate = threading.Event()
    pause = listing.checker.pause
    listing.checker.pause = lambda: gate.wait(10) and pause()  # type: ignore[method-assign]
    first = _ids(restarted)
    assert first[:2] == ["mine", "t001"]
    assert "t002" not in first
    assert not listing.checked.is_set()
    gate.set()
    assert listing.checked.wait(10)
    assert _ids(restarted)[:4] == ["t003", "foreign", "mine", "t001"]
    assert restarted.list().total_size == 20
    assert "t004" not in _ids(restarted)


def test_the_background_check_leaves_tasks_written_since_it_began(tmp_path, monkeypatch, file_syscalls):
    """The check read a file, then a store saved a newer version before the check
    applied what it read: the newer one stays indexed."""
    _fill(tmp_path, 10, syscalls=file_syscalls).list()
    _behind_its_back(tmp_path)
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    source = restarted._listing.source
    read_file = source.read_file

    def read_then_saved(name):
        read = read_file(name)
        if name == "t003":
            restarted.save(make("t003", 400, "c2", "failed", ""))  # newer than what was read
        return read

    monkeypatch.setattr(source, "read_file", read_then_saved)
    restarted.list()
    assert restarted._listing.checked.wait(10)
    assert _ids(restarted)[0] == "t003"
    assert restarted.list(TaskQuery(state="failed")).total_size == 1
    assert restarted.list(TaskQuery(state="canceled")).total_size == 0


def test_a_failed_background_check_is_run_again(tmp_path, monkeypatch, caplog, file_syscalls):
    _fill(tmp_path, 10, syscalls=file_syscalls).list()
    _behind_its_back(tmp_path)
    restarted = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    source = restarted._listing.source
    files = source.files
    calls = []

    def failing():
        calls.append(1)
        if len(calls) == 1:
            raise OSError("the directory could not be listed")
        return files()

    monkeypatch.setattr(source, "files", failing)
    with caplog.at_level(logging.WARNING, logger="stores.file"):
        restarted.list()
        for _ in range(500):
            if restarted._listing.live.index is None:
                break
            time.sleep(0.01)
    assert "could not be listed" in caplog.text
    assert _ids(restarted)  # built again, checked again
    assert restarted._listing.checked.wait(10)
    assert _ids(restarted)[:2] == ["t003", "foreign"]


def test_a_persisted_index_pages_through_the_file_it_wrote(tmp_path, file_syscalls):
    store = _fill(tmp_path, 30, syscalls=file_syscalls)
    store.list()
    index = store._listing.live.index
    assert index.base is not None and index.base.n == 30
    assert len(index._changes) == 0  # the full build's tasks are in the mapped file, not in memory
    store.save(make("new", 100, "c1", "working", ""))
    store.delete("t005")
    assert store._listing.persist()
    index = store._listing.live.index
    assert index.base.n == 30 and len(index._changes) == 0
    assert _ids(store)[0] == "new" and "t005" not in _ids(store)
    assert store.list().total_size == 30


def _damaged(*args, **kwargs):
    raise SnapshotDamaged("block 7 damaged (CRC-32)")


def _restarted(directory: Path, *, syscalls: Syscalls) -> FileTaskStore:
    _fill(directory, 10, syscalls=syscalls).list()
    store = FileTaskStore(directory, fsync=False, syscalls=syscalls)
    store.list()
    assert store._listing.checked.wait(10)
    return store


def test_a_save_never_fails_for_a_damaged_snapshot(tmp_path, monkeypatch, caplog, file_syscalls):
    """The task is saved; the index, finding its snapshot damaged, is rebuilt."""
    store = _restarted(tmp_path, syscalls=file_syscalls)
    monkeypatch.setattr(MappedSnapshot, "find", _damaged)
    with caplog.at_level(logging.WARNING, logger="stores.file"):
        store.save(make("t001", 100, "c1", "failed", ""))
    monkeypatch.undo()
    assert "rebuilding" in caplog.text
    assert store.get("t001")["status"]["state"] == "failed"
    assert _ids(store)[0] == "t001"
    assert store._listing.last_build == "full"


def test_a_snapshot_found_damaged_while_written_again_is_rebuilt(tmp_path, monkeypatch, caplog, file_syscalls):
    store = _restarted(tmp_path, syscalls=file_syscalls)
    store.save(make("t001", 100, "c1", "failed", ""))
    monkeypatch.setattr(MappedSnapshot, "rows", _damaged)
    with caplog.at_level(logging.WARNING, logger="stores.file"):
        assert not store._listing.persist()
    monkeypatch.undo()
    assert "rebuilding" in caplog.text
    assert _ids(store)[0] == "t001"
    assert store._listing.last_build == "full"
    assert store.list().total_size == 10


def test_the_check_of_a_dropped_index_leaves_the_next_one_alone(tmp_path, file_syscalls):
    """An index dropped while its background check ran (a failure, a rebuild): when
    that check ends, the next index's own check is still to run, and the next index
    is not taken for checked."""
    _fill(tmp_path, 10, syscalls=file_syscalls).list()
    _behind_its_back(tmp_path)
    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    listing = store._listing
    gates = [threading.Event(), threading.Event()]
    done = [threading.Event(), threading.Event()]
    builds: list[set] = []  # each index's set of ids written since its check began
    which = threading.local()
    pause, check = listing.checker.pause, listing.checker.in_background

    def gated_pause():
        gates[which.build].wait(10)
        pause()

    def recorded_check(directory, touched):
        for _ in range(1000):  # until the test has noted which build this is
            if any(b is touched for b in builds):
                break
            time.sleep(0.01)
        which.build = next(i for i, b in enumerate(builds) if b is touched)
        check(directory, touched)
        done[which.build].set()

    listing.checker.pause = gated_pause  # type: ignore[method-assign]
    listing.checker.in_background = recorded_check  # type: ignore[method-assign]
    store.list()  # the first index, its check waits
    with listing.live.lock:
        builds.append(listing.live.touched)
        listing.live.index = None  # dropped (as a failed check drops it)
    store.list()  # the second, its check waits too
    with listing.live.lock:
        builds.append(listing.live.touched)
    gates[0].set()
    assert done[0].wait(10)  # the first check ended: it found the index it checked gone
    assert not listing.checked.is_set()
    gates[1].set()
    assert done[1].wait(10)
    assert listing.checked.is_set()
    assert _ids(store)[:2] == ["t003", "foreign"]
