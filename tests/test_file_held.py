"""The file store's descriptors kept open between saves (the task directory, the lock
stripes, the journal): each is let go and opened again when it no longer names the
file it was opened for, and a forked child never uses its parent's."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time

import pytest

import stores.file.fsio
from stores.file import FileTaskStore
from stores.file.journal import Journal
from stores.file.syscalls import PYTHON
from stores.file.taskfile import TaskLocks
from tests.syscalls_hooks import Hooked


def task(task_id: str, version: int = 1) -> dict:
    return {
        "kind": "task",
        "id": task_id,
        "contextId": "ctx",
        "status": {"state": "submitted", "timestamp": "2026-12-01T00:00:00.000Z"},
        "_version": version,
    }


def lines(path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if not line.startswith(b"#")]


def test_a_directory_replaced_is_the_one_synced(tmp_path, monkeypatch, file_syscalls):
    directory = tmp_path / "tasks"
    synced: list[tuple[int, int]] = []
    real = stores.file.fsio.fsync_directory

    def fsync_directory(path, fd=None):
        st = os.fstat(fd) if fd is not None else os.stat(path)
        synced.append((st.st_dev, st.st_ino))
        real(path, fd)

    def fsync_if_same(real_fsync_if_same, path, fd, device, inode):
        same = real_fsync_if_same(path, fd, device, inode)
        if same:
            st = os.fstat(fd)
            synced.append((st.st_dev, st.st_ino))
        return same

    store = FileTaskStore(directory, syscalls=Hooked(file_syscalls, fsync_if_same=fsync_if_same))
    store.save(task("a"), expected_version=0)
    monkeypatch.setattr(stores.file.fsio, "fsync_directory", fsync_directory)
    store.save(task("b"), expected_version=0)
    os.rename(directory, tmp_path / "moved")  # moved away, and a new one in its place
    directory.mkdir()
    store.save(task("c"), expected_version=0)
    new = os.stat(directory)
    assert synced[-1] == (new.st_dev, new.st_ino), "the fsync went to the directory moved away"
    assert synced[0] != synced[-1]
    assert store.get("c") is not None


def test_the_journal_line_lands_in_the_current_generation_after_a_rotation_elsewhere(tmp_path, file_syscalls):
    writer = Journal(tmp_path, file_syscalls)
    writer.append("first")  # opens the journal, kept open
    os.replace(tmp_path / "journal", tmp_path / "journal.old")  # another process rotated it ...
    os.replace(tmp_path / "journal.old", tmp_path / "gone")  # ... twice: this generation is read by no one
    moved: list[int] = []
    writer.moved = lambda: moved.append(1)
    writer.append("second")
    assert b'"second"' in b"".join(lines(tmp_path / "journal")), "the line went to a file no reader reads"
    assert moved == [1]
    writer.append("third")  # the new generation is kept open: no second move
    assert moved == [1]
    assert [line.split(b" ", 1)[1] for line in lines(tmp_path / "journal")] == [b'"second"', b'"third"']


def test_the_journal_appends_with_one_write_and_one_stat(tmp_path, monkeypatch):
    writer = Journal(tmp_path, PYTHON)  # its os calls counted (the companion's: test_file_syscalls' strace)
    writer.append("warm")
    opened: list[object] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    for n in range(5):
        writer.append(f"t{n}")
    assert opened == []
    assert len(lines(tmp_path / "journal")) == 6


def test_a_lock_directory_removed_is_made_again_and_its_locks_exclude_other_processes(tmp_path, file_syscalls):
    store = FileTaskStore(tmp_path / "tasks", syscalls=file_syscalls)
    store.save(task("a"), expected_version=0)
    shutil.rmtree(tmp_path / "tasks" / ".locks")
    store.save(task("a", 2), expected_version=1)  # the journal is found gone: the lock files are opened again
    store.save(task("a", 3), expected_version=2)
    lock = store._locks._stripes  # the stripe of "a" now holds the new lock file
    (stripe,) = [s for s in lock.values() if s.fd is not None]
    assert os.fstat(stripe.fd).st_nlink == 1
    assert os.path.samestat(os.fstat(stripe.fd), os.stat(stripe.path))


def test_threads_of_one_process_exclude_one_another_on_a_shared_descriptor(tmp_path):
    locks = TaskLocks(str(tmp_path))
    inside, most = [0], [0]
    guard = threading.Lock()

    def work() -> None:
        for _ in range(50):
            with locks.hold("same"):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.0005)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert most[0] == 1


def test_shared_holders_share_and_an_exclusive_one_waits_for_them(tmp_path):
    locks = TaskLocks(str(tmp_path))
    order: list[str] = []
    with locks.hold("c", shared=True), locks.hold("c", shared=True):  # side by side
        writer = threading.Thread(target=lambda: (locks.hold("c").__enter__(), order.append("exclusive")))
        writer.start()
        time.sleep(0.1)
        order.append("shared done")
    writer.join(5)
    assert order == ["shared done", "exclusive"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_takes_its_own_locks(tmp_path):
    """A child's flock through the parent's descriptor would be the parent's own lock
    (granted at once while the parent holds it); the child opens its own and waits."""
    locks = TaskLocks(str(tmp_path))
    with locks.hold("x"):
        pass  # the stripe's lock file is open now
    ready_r, ready_w = os.pipe()
    with locks.hold("x"):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                with locks.hold("x"):
                    os.write(ready_w, b"got it")
            finally:
                os._exit(0)
        time.sleep(0.3)
        os.set_blocking(ready_r, False)
        with pytest.raises(BlockingIOError):
            os.read(ready_r, 10)  # the child is still waiting while the parent holds it
    os.set_blocking(ready_r, True)
    assert os.read(ready_r, 10) == b"got it"
    os.waitpid(pid, 0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_appends_to_the_journal_and_syncs_through_its_own_descriptors(tmp_path, file_syscalls):
    store = FileTaskStore(tmp_path / "tasks", syscalls=file_syscalls)
    store.save(task("parent"), expected_version=0)
    parent_fds = {s.fd for s in store._locks._stripes.values()} | {store._listing.journal._appending[0]}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            held = {s.fd for s in store._locks._stripes.values()}
            appending = store._listing.journal._appending
            store.save(task("child"), expected_version=0)
            code = 0 if not held and appending is None else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.get("child") is not None
    assert all(fcntl.fcntl(fd, fcntl.F_GETFD) >= 0 for fd in parent_fds)  # the parent's are still its own


def test_a_task_file_is_read_with_one_read(tmp_path, monkeypatch):
    store = FileTaskStore(tmp_path / "tasks", syscalls="python")  # its os.read counted (the companion's: strace)
    store.save(task("a"), expected_version=0)
    reads: list[int] = []
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real(fd, n))
    assert store.get("a")["id"] == "a"
    assert len(reads) == 1  # shorter than asked: the end, no empty read to confirm it


def test_a_cut_short_read_is_read_to_the_end_before_the_file_is_called_damaged(tmp_path, monkeypatch, caplog):
    store = FileTaskStore(tmp_path / "tasks", syscalls="python")  # os.read cut short
    store.save(task("a"), expected_version=0)
    real = os.read
    cut = [True]

    def read(fd: int, n: int) -> bytes:
        data = real(fd, n)
        if cut[0] and data:  # one read that stops half way (a filesystem may)
            cut[0] = False
            os.lseek(fd, -(len(data) - len(data) // 2), os.SEEK_CUR)
            return data[: len(data) // 2]
        return data

    monkeypatch.setattr(os, "read", read)
    assert store.get("a")["id"] == "a"
    assert "reads as missing" not in caplog.text
    (tmp_path / "tasks" / "b.json").write_bytes(b'{"id": "b", ')  # damaged, read to the end: reported
    assert store.get("b") is None
    assert "b.json is corrupt" in caplog.text


def test_a_state_change_is_one_thread_hop_whatever_its_system_calls(tmp_path, monkeypatch, file_syscalls):
    """The read, the compare-and-swap save and its fsyncs run as one function on one
    worker thread: one hop per state change, not one per system call."""
    import asyncio

    from a2a.core import lifecycle
    from a2a.protocol.model import set_status

    store = FileTaskStore(tmp_path / "tasks", syscalls=file_syscalls)
    hops: list[str] = []
    real = asyncio.to_thread

    async def to_thread(function, /, *args, **kwargs):
        hops.append(function.__name__)
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", to_thread)

    async def life() -> None:
        new = {"kind": "task", "id": "t", "contextId": "c", "status": {"state": "submitted", "timestamp": "x"}}
        await lifecycle.create(store, new)
        await lifecycle.transition(store, "t", lambda t: set_status(t, "working"))
        await lifecycle.transition(store, "t", lambda t: set_status(t, "completed"))

    asyncio.run(life())
    assert hops == ["create_sync", "transition_sync", "transition_sync"]
    assert store.get("t")["status"]["state"] == "completed"
