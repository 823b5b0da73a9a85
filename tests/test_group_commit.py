"""Group commit in the file store: concurrent saves share the directory fsync, and each
save still returns only after a directory fsync that began after its rename completed
(``stores.file.fsio.sync_directory`` / ``DirectorySync``)."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from pathlib import Path

import pytest

import stores.file.fsio
from stores.base import StoreError
from stores.file import DirectorySync, FileTaskStore
from tests.syscalls_hooks import Hooked

THREADS = 16
SAVES = 12


def task(n: int) -> dict:
    return {
        "kind": "task",
        "id": f"t{n}-{uuid.uuid4()}",
        "contextId": "ctx",
        "status": {"state": "submitted", "timestamp": "2026-12-01T00:00:00.000Z"},
    }


class Recorder:
    """Numbers the events of every thread in one order: renames, directory fsyncs'
    begins and ends, saves' returns."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.lock = threading.Lock()
        self.seq = itertools.count()
        self.events: list[tuple[int, str, object]] = []

    def note(self, kind: str, what: object) -> None:
        with self.lock:
            self.events.append((next(self.seq), kind, what))


@pytest.fixture
def recorded(tmp_path, monkeypatch, file_syscalls):
    """A store whose renames and directory fsyncs (the first, opening the directory, from
    Python; the next ones by its backend, on the descriptor kept) are recorded."""
    directory = tmp_path / "tasks"
    recorder = Recorder(directory)
    real_fsync_directory = stores.file.fsio.fsync_directory
    fsyncs = itertools.count()

    def write_replace(real, temp, target, data, fsync):
        inode = real(temp, target, data, fsync)
        if inode is not None and Path(target).parent == directory:
            recorder.note("renamed", threading.get_ident())
        return inode

    def synced(fsync):
        k = next(fsyncs)
        recorder.note("begin", k)
        time.sleep(0.003)  # a slow disk: saves pile up behind it
        done = fsync()
        recorder.note("end", k)
        return done

    def fsync_if_same(real, path, fd, device, inode):
        return synced(lambda: real(path, fd, device, inode))

    def fsync_directory(path, fd=None):
        synced(lambda: real_fsync_directory(path, fd))

    store = FileTaskStore(
        directory, syscalls=Hooked(file_syscalls, write_replace=write_replace, fsync_if_same=fsync_if_same)
    )
    monkeypatch.setattr(stores.file.fsio, "fsync_directory", fsync_directory)
    return store, recorder


def run_threads(store: FileTaskStore, recorder: Recorder) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(n: int) -> None:
        mine = task(n)
        start.wait()
        try:
            for i in range(SAVES):
                mine["status"]["message"] = {"kind": "message", "messageId": str(i), "role": "agent", "parts": []}
                store.save(mine)
                recorder.note("returned", threading.get_ident())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors


def test_every_save_returns_after_a_directory_fsync_that_began_after_its_rename(recorded):
    store, recorder = recorded
    run_threads(store, recorder)
    begins = {k: seq for seq, kind, k in recorder.events if kind == "begin"}
    ends = {k: seq for seq, kind, k in recorder.events if kind == "end"}
    assert begins.keys() == ends.keys()
    renamed: dict[object, int] = {}
    checked = 0
    for seq, kind, what in recorder.events:
        if kind == "renamed":
            renamed[what] = seq
        elif kind == "returned":
            rename = renamed.pop(what)
            covering = [k for k in begins if begins[k] > rename and ends[k] < seq]
            assert covering, f"a save returned (event {seq}) with no directory fsync begun after its rename ({rename})"
            checked += 1
    assert checked == THREADS * SAVES
    # One directory fsync at a time, each for everyone renamed before it began ...
    spans = sorted((begins[k], ends[k]) for k in begins)
    assert all(end < next_begin for (_, end), (next_begin, _) in itertools.pairwise(spans))
    # ... so concurrent saves shared them (before group commit: one per save).
    assert len(begins) < THREADS * SAVES / 2, f"{len(begins)} directory fsyncs for {THREADS * SAVES} saves"


def test_the_saved_tasks_are_all_there(recorded):
    store, recorder = recorded
    run_threads(store, recorder)
    assert store.list().total_size == THREADS


def test_a_failed_directory_fsync_fails_every_save_it_covered(tmp_path, monkeypatch, file_syscalls):
    directory = tmp_path / "tasks"
    real = stores.file.fsio.fsync_directory
    failing = threading.Event()
    failing.set()
    entered = threading.Event()
    release = threading.Event()

    def fsync_directory(path, fd=None):
        entered.set()
        release.wait(5)
        if failing.is_set():
            raise OSError(5, "Input/output error")
        real(path, fd)

    def fsync_if_same(real_fsync_if_same, path, fd, device, inode):
        entered.set()
        release.wait(5)
        if failing.is_set():
            raise OSError(5, "Input/output error")
        return real_fsync_if_same(path, fd, device, inode)

    store = FileTaskStore(directory, syscalls=Hooked(file_syscalls, fsync_if_same=fsync_if_same))
    monkeypatch.setattr(stores.file.fsio, "fsync_directory", fsync_directory)
    outcomes: list[object] = []

    def save(n: int) -> None:
        try:
            outcomes.append(store.save(task(n)))
        except StoreError as exc:
            outcomes.append(exc)

    first = threading.Thread(target=save, args=(0,))
    first.start()
    assert entered.wait(5)
    # These rename while the first (failing) fsync runs: the next fsync covers them.
    others = [threading.Thread(target=save, args=(n,)) for n in range(1, 4)]
    for t in others:
        t.start()
    time.sleep(0.2)
    release.set()  # the first fsync fails; the one after it too
    first.join(5)
    for t in others:
        t.join(5)
    assert len(outcomes) == 4
    assert all(isinstance(o, StoreError) and "Input/output error" in str(o) for o in outcomes), outcomes
    failing.clear()
    assert store.save(task(9))["id"].startswith("t9-")  # a later save starts a fresh fsync


def test_a_caller_never_counts_on_an_fsync_that_began_before_it_called(tmp_path, monkeypatch):
    """Directly: a sync() made while an fsync runs waits for the next one."""
    group = DirectorySync(tmp_path)
    started = threading.Event()
    release = threading.Event()
    calls: list[str] = []

    def fsync_directory(path, fd=None):
        calls.append("begin")
        if len(calls) == 1:
            started.set()
            release.wait(5)

    monkeypatch.setattr(stores.file.fsio, "fsync_directory", fsync_directory)
    first = threading.Thread(target=group.sync)
    first.start()
    assert started.wait(5)
    second_done = threading.Event()
    second = threading.Thread(target=lambda: (group.sync(), second_done.set()))
    second.start()
    time.sleep(0.05)
    release.set()
    first.join(5)
    second.join(5)
    assert second_done.is_set()
    assert calls == ["begin", "begin"]  # the second caller waited for (and ran) a second fsync
