"""Issue 14, item 5: a save that raised although it was done (the database committed,
then the connection broke before the reply; the file was replaced, then the
directory's fsync failed). The runner's ``working`` transition is the one that
hurt: taken as "not started", the task was left ``working`` with no handler, and the
lease check failed it a minute later. Now the task is read again after a failed
save; when it holds what was saved, the transition carries on.

Injected on every store: the ORM store's compare-and-swap runs its UPDATE and then
raises ``OperationalError``/``InterfaceError`` (SQLite and PostgreSQL); the file
store writes the file and then raises an ``OSError``; the memory store saves and
then raises ``StoreError``. In the second variant the store also cannot be read for
a moment after the failed save, so the re-read fails too: the runner tries again and
finds the task started under its own lease.
"""

from __future__ import annotations

import errno
import os
import threading
import time
import uuid

import pytest
from django.db import InterfaceError, OperationalError

from a2a.core import lifecycle
from a2a.protocol.model import new_task
from a2a.runtime.runner import Runner
from stores.base import StoreError, StoreUnavailable, TaskStore
from stores.file import FileTaskStore
from stores.file import fsio as file_store
from stores.orm import OrmTaskStore
from tests.db_marks import store_params

pytestmark = pytest.mark.django_db


@pytest.fixture(params=store_params(transaction=True))
def store_kind(request) -> str:
    return request.param


class AmbiguousSave:
    """The first save of a ``working`` task is done, then raises; with ``blackout``,
    the store cannot be read for that many seconds afterwards."""

    def __init__(self, store: TaskStore, monkeypatch: pytest.MonkeyPatch, *, blackout: float = 0.0) -> None:
        self.fired = threading.Event()
        self.until = 0.0
        self.blackout = blackout

        if isinstance(store, OrmTaskStore):
            update, select = OrmTaskStore._update_if_version, OrmTaskStore._select_task
            errors = iter([OperationalError, InterfaceError] * 10)

            def cas(self_, task_id, fields, expected):
                done = update(self_, task_id, fields, expected)
                if done and fields["state"] == "working" and self._fire():
                    raise next(errors)("server closed the connection unexpectedly")
                return done

            def read(self_, task_id):
                if time.monotonic() < self.until:
                    raise OperationalError("the database system is starting up")
                return select(self_, task_id)

            monkeypatch.setattr(OrmTaskStore, "_update_if_version", cas)
            monkeypatch.setattr(OrmTaskStore, "_select_task", read)
        elif isinstance(store, FileTaskStore):
            write, read_file = file_store.atomic_write, FileTaskStore._read

            def atomic_write(target, data, syscalls, *, fsync=True, **kwargs):
                write(target, data, syscalls, fsync=fsync, **kwargs)
                if b'"state":"working"' in data and self._fire():
                    raise OSError(errno.EIO, os.strerror(errno.EIO))  # the directory's fsync, say

            def read(self_, path, task_id=None):
                if time.monotonic() < self.until:
                    raise StoreUnavailable("could not read the task now: Too many open files; try again")
                return read_file(self_, path, task_id)

            monkeypatch.setattr(file_store, "atomic_write", atomic_write)
            monkeypatch.setattr(FileTaskStore, "_read", read)
        else:
            save, get = store.save, store.get

            def memory_save(task, expected_version=None):
                saved = save(task, expected_version)
                if task["status"]["state"] == "working" and self._fire():
                    raise StoreError("could not save the task: injected after the write")
                return saved

            def memory_get(task_id):
                if time.monotonic() < self.until:
                    raise StoreUnavailable("could not read the task now: injected; try again")
                return get(task_id)

            monkeypatch.setattr(store, "save", memory_save)
            monkeypatch.setattr(store, "get", memory_get)

    def _fire(self) -> bool:
        if self.fired.is_set():
            return False
        self.fired.set()
        self.until = time.monotonic() + self.blackout
        return True


def message(text: str) -> dict:
    parts = [{"kind": "text", "text": text}]
    return {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user", "parts": parts}


def settle(store, task_id, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            task = store.get(task_id)
        except StoreUnavailable:
            task = None
        if task and task["status"]["state"] in {"completed", "failed", "canceled"}:
            return task
        time.sleep(0.02)
    raise AssertionError(f"{task_id} never settled: {store.get(task_id)}")


@pytest.mark.parametrize("blackout", [0.0, 0.5], ids=["reread-works", "reread-fails-too"])
def test_a_start_saved_despite_an_error_runs_the_handler(use_store, settings, monkeypatch, blackout, caplog, heard):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_LEASE_SECONDS = 1.0
    settings.A2A_LEASE_CHECK_INTERVAL = 0.3
    fault = AmbiguousSave(use_store, monkeypatch, blackout=blackout)
    runner = Runner(1)
    try:
        task = {**new_task(message("sleep:0.2"), context_id="c"), "_version": 1}
        use_store.save(task)
        runner.submit(task["id"])
        done = settle(use_store, task["id"])
    finally:
        runner.shutdown(grace=2)
    assert fault.fired.is_set()
    assert done["status"]["state"] == "completed", done["status"]
    assert done["artifacts"][0]["parts"][0]["text"] == "done: sleep:0.2"  # the handler ran
    assert "_lease" not in done
    states = [t["status"]["state"] for t in heard if t["id"] == task["id"]]
    assert states.count("working") == 1 and "failed" not in states, states  # announced once, never failed
    assert "fulfilling task" not in caplog.text  # nothing failed outside the handler


def test_a_save_that_was_not_done_still_fails_with_its_reason(use_store, monkeypatch):
    """The other side: the write did not happen, so the error stands (and nothing changed)."""
    task = {**new_task(message("x"), context_id="c"), "_version": 1}
    use_store.save(task)
    calls = []

    def refuse(*args, **kwargs):
        calls.append(1)
        raise StoreError("could not save the task: No space left on device")

    monkeypatch.setattr(use_store, "save", refuse)
    with pytest.raises(lifecycle.InternalError, match="No space left on device"):
        lifecycle.transition_sync(use_store, task["id"], lambda t: {**t, "status": {**t["status"], "state": "working"}})
    monkeypatch.undo()
    assert calls == [1]
    assert use_store.get(task["id"])["status"]["state"] == "submitted"
    assert use_store.get(task["id"])["_version"] == 1
