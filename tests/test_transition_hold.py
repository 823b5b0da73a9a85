"""A transition that keeps losing the compare-and-swap race holds the task.

Another process's writer that saves every few milliseconds (a handler reporting
progress, streaming tokens) can save between each of this process's reads and saves:
a cancel from here then lost every race and answered an internal error (seen in CI:
a cancel on server A of a task that server B ran). After ``HOLD_AFTER`` lost races the
transition reads and saves inside ``store.locked(task_id)``, which makes the other
writer wait; this module has that writer save from its own thread (its own database
connection) before each of our saves, on every store.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
from django.db import OperationalError, connections

from a2a.core import lifecycle
from a2a.protocol.errors import InternalError
from a2a.protocol.model import set_status
from stores.base import StaleTaskError, StoreError, TaskStore
from stores.memory import MemoryTaskStore
from stores.timestamps import now_iso
from tests.conftest import STORE_KINDS, make_store
from tests.db_marks import store_params
from tests.test_concurrency import RacingStore

#: The stores whose save of a task without a version takes its conversation's lock (the
#: memory store has no such lock; on SQLite the hold is the database's write lock).
CONVERSATION_LOCKING = ("file", "orm-postgres")

#: How long our save waits for the rival's: long enough for an unheld rival to save
#: on a loaded machine, and a held one waits this long once per transition.
RIVAL_HEAD_START = 0.5


@pytest.fixture(params=store_params(transaction=True))
def store_kind(request) -> str:
    """Each store; an ORM one in real transactions (the rival's thread sees its rows)."""
    return request.param


def working(task_id: str = "t1", version: int = 2) -> dict:
    status = {"state": "working", "timestamp": now_iso()}
    return {"kind": "task", "id": task_id, "contextId": "c", "status": status, "_version": version}


class RivalStore(RacingStore):
    """Wraps a store; before each of our saves, a rival writer (another process, as far
    as this process's locks know) saves a newer version of the task from its own thread."""

    def __init__(self, inner: TaskStore) -> None:
        super().__init__(inner)
        self.rival_saves = 0
        self.rivals: list[threading.Thread] = []

    def save(self, task, expected_version=None):
        rival = threading.Thread(target=self._rival, args=(task["id"],))
        self.rivals.append(rival)
        rival.start()
        rival.join(RIVAL_HEAD_START)  # still waiting after that: the task is held
        return self.inner.save(task, expected_version)

    def locked(self, task_id):
        return self.inner.locked(task_id)

    def _rival(self, task_id: str) -> None:
        try:
            current = self.inner.get(task_id)
            progress = set_status({**current, "_version": current["_version"] + 1}, "working", "progress")
            self.inner.save(progress, expected_version=current["_version"])
            self.rival_saves += 1
        except (StaleTaskError, StoreError):
            pass  # it waited for our save and then found the task moved on
        except OperationalError as exc:  # SQLite's shared-cache test database: "table is locked"
            if "locked" not in str(exc):
                raise
        finally:
            connections.close_all()

    def finish(self) -> None:
        for rival in self.rivals:
            rival.join(10)


def test_a_cancel_wins_against_a_writer_that_saves_before_each_of_its_saves(store):
    rival = RivalStore(store)
    store.save(working(), expected_version=0)
    try:
        canceled = lifecycle.transition_sync(rival, "t1", lambda task: set_status(task, "canceled"))
    finally:
        rival.finish()
    assert canceled is not None and canceled["status"]["state"] == "canceled"
    assert rival.rival_saves >= lifecycle.HOLD_AFTER  # it did win the races before the hold
    stored = store.get("t1")
    assert stored["status"]["state"] == "canceled" and stored["_version"] == canceled["_version"]


def test_without_the_hold_the_same_cancel_loses_every_race(store, monkeypatch):
    """The test above would fail without the hold: the rival wins all the races."""
    monkeypatch.setattr(lifecycle, "HOLD_AFTER", lifecycle.MAX_ATTEMPTS)
    monkeypatch.setattr(lifecycle, "MAX_ATTEMPTS", 3)
    rival = RivalStore(store)
    store.save(working(), expected_version=0)
    try:
        with pytest.raises(StaleTaskError):
            lifecycle.transition_sync(rival, "t1", lambda task: set_status(task, "canceled"))
    finally:
        rival.finish()
    assert store.get("t1")["status"]["state"] == "working"


@pytest.mark.parametrize("kind", store_params(kinds=[k for k in STORE_KINDS if k in CONVERSATION_LOCKING]))
def test_a_task_without_a_version_is_not_held_and_a_versioned_one_is(kind, tmp_path):
    """A task without ``_version`` (toolnexus wrote it, or a row from before versions)
    is saved as if new, which takes its conversation's lock before the task's: the hold
    must not take the task's first (a delete of the conversation takes them in that
    order). A versioned one is held: another writer waits, our own save goes through."""
    store = make_store(kind, tmp_path)
    legacy = {k: v for k, v in working().items() if k != "_version"}
    store.save(legacy)
    with store.locked("t1"):
        other = threading.Thread(target=_save_and_close, args=(store, legacy))
        other.start()
        other.join(5)
        assert not other.is_alive()  # another writer is not held out
    store.save(working(version=2), expected_version=0)
    with store.locked("t1"):
        waiting = threading.Thread(target=_save_and_close, args=(store, working(version=3)))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive()  # a versioned task is held
        store.save(working(version=3), expected_version=2)  # our own save goes through
    waiting.join(5)
    assert not waiting.is_alive()


def _save_and_close(store: TaskStore, task: dict) -> None:
    try:
        store.save(task)
    finally:
        connections.close_all()


class CommitLost(MemoryTaskStore):
    """A memory store whose hold's end fails, as a commit whose reply the database lost;
    ``apply``: whether the save inside it stays done."""

    def __init__(self, apply: bool) -> None:
        super().__init__()
        self.apply = apply

    @contextlib.contextmanager
    def locked(self, task_id):
        before = self.get(task_id)
        yield
        if not self.apply:
            self.save(before)
        raise StoreError("could not commit: server closed the connection unexpectedly")


def test_a_hold_whose_commit_fails_after_the_save_was_done_carries_on(monkeypatch):
    monkeypatch.setattr(lifecycle, "HOLD_AFTER", 0)
    store = CommitLost(apply=True)
    store.save(working(), expected_version=0)
    canceled = lifecycle.transition_sync(store, "t1", lambda task: set_status(task, "canceled"))
    assert canceled is not None and store.get("t1") == canceled


def test_a_hold_whose_commit_fails_before_the_save_was_done_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(lifecycle, "HOLD_AFTER", 0)
    store = CommitLost(apply=False)
    store.save(working(), expected_version=0)
    with pytest.raises(InternalError, match="could not commit"):
        lifecycle.transition_sync(store, "t1", lambda task: set_status(task, "canceled"))
    assert store.get("t1")["status"]["state"] == "working"
