"""Concurrency: compare-and-swap saves on every store, the state machine, and the
races the reliability issue names (cancel vs completion, two cancels, a continuation
vs completion, two processes starting one task), in threads and in OS processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
from django.db import connections

from a2a.core import lifecycle
from a2a.protocol.errors import TaskNotCancelableError, UnsupportedOperationError
from a2a.protocol.model import CancelParams, SendParams, new_task, set_status
from a2a.runtime.runner import Runner
from a2a.service import operations
from stores.base import STATES, TERMINAL_STATES, StaleTaskError, TaskStore
from stores.file import FileTaskStore
from stores.timestamps import now_iso
from tests.conftest import STORE_KINDS
from tests.db_marks import store_params
from tests.helpers import wait_for_state as wait_for
from tests.server import ROOT, site_env

pytestmark = pytest.mark.django_db


@pytest.fixture(params=store_params(transaction=True))
def store_kind(request) -> str:
    """Each store; an ORM one in real transactions (the runner's threads see its rows)."""
    return request.param


def a_task(task_id: str = "t1", state: str = "submitted", version: int | None = None) -> dict:
    task = {"kind": "task", "id": task_id, "contextId": "c", "status": {"state": state, "timestamp": now_iso()}}
    if version is not None:
        task["_version"] = version
    return task


def message(text: str, **extra) -> dict:
    return {"kind": "message", "messageId": f"m-{time.monotonic_ns()}", "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}  # fmt: skip


# === compare-and-swap, on every store ======================================================


def test_save_with_expected_version_is_a_compare_and_swap(store):
    store.save(a_task(version=1), expected_version=0)  # created
    with pytest.raises(StaleTaskError):
        store.save(a_task(version=1), expected_version=0)  # exists already
    with pytest.raises(StaleTaskError) as stale:
        store.save(a_task("t1", "working", version=3), expected_version=2)
    assert stale.value.found == 1
    store.save(a_task("t1", "working", version=2), expected_version=1)
    assert store.get("t1")["_version"] == 2
    with pytest.raises(StaleTaskError):
        store.save(a_task("nope", version=5), expected_version=4)  # no such task
    assert store.get("nope") is None
    store.save(a_task("t1", "completed", version=9))  # no expected_version: last writer wins
    assert store.get("t1")["_version"] == 9
    assert store.get("t1")["status"]["state"] == "completed"


def test_a_task_saved_without_a_version_is_version_0(store):
    store.save(a_task())
    store.save(a_task("t1", "working", version=1), expected_version=0)
    assert store.get("t1")["_version"] == 1


def race(count: int, attempt: Callable[[int], str], refused: type[Exception], refusal: str) -> list[str]:
    """``attempt(n)`` in ``count`` threads released together: what each returned, or
    ``refusal`` for each that raised ``refused``."""
    results: list[str] = []
    barrier = threading.Barrier(count)

    def run(n: int) -> None:
        barrier.wait()
        try:
            results.append(attempt(n))
        except refused:
            results.append(refusal)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_only_one_of_many_concurrent_writers_of_a_version_wins(store):
    store.save(a_task(version=1))

    def writer(n: int) -> str:
        store.save({**a_task("t1", "working", version=2), "metadata": {"writer": n}}, expected_version=1)
        return f"won:{n}"

    results = race(8, writer, StaleTaskError, "stale")
    winners = [r for r in results if r.startswith("won")]
    assert len(winners) == 1 and results.count("stale") == 7
    assert store.get("t1")["metadata"] == {"writer": int(winners[0][4:])}


@pytest.mark.skipif("orm-sqlite" not in STORE_KINDS, reason="no ORM")
def test_orm_row_saved_before_the_version_column_existed(tmp_path):
    """Migration 0003 gave existing rows version 0; their task JSON knows the real one."""
    from stores.models import TaskRecord
    from stores.orm import OrmTaskStore

    store = OrmTaskStore()
    store.save(a_task(version=3))
    TaskRecord.objects.filter(pk="t1").update(version=0)
    with pytest.raises(StaleTaskError):
        store.save(a_task("t1", "working", version=3), expected_version=2)
    store.save(a_task("t1", "working", version=4), expected_version=3)
    assert TaskRecord.objects.get(pk="t1").version == 4
    with pytest.raises(StaleTaskError):
        store.save(a_task("t1", "working", version=4), expected_version=3)


FILE_WRITER = """
import os, sys, time
from pathlib import Path
from stores.base import StaleTaskError
from stores.file import FileTaskStore
directory, n, go, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
store = FileTaskStore(directory, syscalls=sys.argv[5])
task = {"id": "t1", "contextId": "c", "status": {"state": "working"}, "_version": 2, "metadata": {"writer": n}}
while not os.path.exists(go):
    time.sleep(0.001)
try:
    store.save(task, expected_version=1)
    outcome = "won"
except StaleTaskError:
    outcome = "stale"
Path(out, f"{n}-{outcome}").touch()
"""


def test_file_store_compare_and_swap_holds_across_processes(tmp_path, file_syscalls):
    directory, out, go = tmp_path / "tasks", tmp_path / "out", tmp_path / "go"
    out.mkdir()
    FileTaskStore(directory, syscalls=file_syscalls).save(a_task(version=1))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FILE_WRITER, str(directory), str(n), str(go), str(out), file_syscalls.name], env=env
        )
        for n in range(6)
    ]
    time.sleep(1.0)  # let them all start and wait
    go.touch()
    for p in procs:
        assert p.wait(30) == 0
    outcomes = sorted(p.name.split("-")[1] for p in out.iterdir())
    assert outcomes == ["stale"] * 5 + ["won"]
    winner = next(int(p.name.split("-")[0]) for p in out.iterdir() if p.name.endswith("won"))
    assert FileTaskStore(directory, syscalls=file_syscalls).get("t1")["metadata"] == {"writer": winner}


# === the state machine ========================================================================


def test_state_machine():
    for terminal in TERMINAL_STATES:
        assert not any(lifecycle.can_transition(terminal, s) for s in STATES)  # final, even to itself
    assert lifecycle.can_transition("submitted", "working")
    assert lifecycle.can_transition("working", "input-required")
    assert lifecycle.can_transition("input-required", "submitted")  # a continuation
    assert lifecycle.can_transition("working", "submitted")  # re-queued after a lost lease
    assert lifecycle.can_transition("working", "working")  # progress
    assert not lifecycle.can_transition("submitted", "input-required")
    assert all(lifecycle.can_transition(s, "canceled") for s in STATES if s not in TERMINAL_STATES)


def test_a_change_that_leaves_a_terminal_state_is_refused(store, caplog):
    store.save(a_task("t1", "completed", version=4))

    def reopen(task):
        return set_status(task, "working")

    assert lifecycle.transition_sync(store, "t1", reopen) is None
    assert store.get("t1")["status"]["state"] == "completed" and store.get("t1")["_version"] == 4
    assert "a terminal state is final" in caplog.text


# === races, with another "process" writing between our read and our save ===================


class RacingStore(TaskStore):
    """Wraps a store; before one chosen save, another writer (as another process would,
    past this process's locks) saves its own version first."""

    supports_compare_and_swap = True  # it passes expected_version on to the inner store

    def __init__(self, inner: TaskStore) -> None:
        self.inner = inner
        self.nonblocking = inner.nonblocking
        self.before_save = None  # (task) -> None, run once

    def get(self, task_id):
        return self.inner.get(task_id)

    def save(self, task, expected_version=None):
        hook, self.before_save = self.before_save, None
        if hook is not None:
            hook(task)
        return self.inner.save(task, expected_version)

    def list(self, query=None):
        return self.inner.list(query)

    def delete(self, task_id):
        return self.inner.delete(task_id)


def _other_process_saves(store: TaskStore, task_id: str, state: str) -> None:
    current = store.get(task_id)
    store.save(set_status({**current, "_version": current["_version"] + 1}, state))


def test_completion_racing_a_cancel_from_another_process_keeps_canceled(store):
    racing = RacingStore(store)
    store.save(a_task("t1", "working", version=2))
    racing.before_save = lambda task: _other_process_saves(store, "t1", "canceled")
    from a2a.runtime.runner import _finish

    assert lifecycle.transition_sync(racing, "t1", _finish("completed", artifacts=[{"artifactId": "a"}])) is None
    final = store.get("t1")
    assert final["status"]["state"] == "canceled" and final["_version"] == 3 and "artifacts" not in final


def test_cancel_racing_a_completion_from_another_process_is_refused(use_store):
    racing = RacingStore(use_store)
    use_store.save(a_task("t1", "working", version=2))
    racing.before_save = lambda task: _other_process_saves(use_store, "t1", "completed")
    from django.test import override_settings

    with override_settings(TASK_STORE=racing), pytest.raises(TaskNotCancelableError):
        asyncio.run(operations.cancel_task(CancelParams(id="t1")))
    assert use_store.get("t1")["status"]["state"] == "completed"


def test_two_cancels_one_wins(use_store):
    racing = RacingStore(use_store)
    use_store.save(a_task("t1", "working", version=2))
    racing.before_save = lambda task: _other_process_saves(use_store, "t1", "canceled")
    from django.test import override_settings

    with override_settings(TASK_STORE=racing), pytest.raises(TaskNotCancelableError):
        asyncio.run(operations.cancel_task(CancelParams(id="t1")))  # the other one got there first
    assert use_store.get("t1")["_version"] == 3


def test_continuation_racing_a_completion_from_another_process_is_refused(use_store):
    """The task waits for input; another process settles it (say, canceled or reaped)
    between our read and our save: the follow-up is refused, nothing is appended."""
    racing = RacingStore(use_store)
    use_store.save({**a_task("t1", "input-required", version=3), "history": []})
    racing.before_save = lambda task: _other_process_saves(use_store, "t1", "completed")
    from django.test import override_settings

    with override_settings(TASK_STORE=racing), pytest.raises(UnsupportedOperationError):
        asyncio.run(operations.send_message(SendParams(message=message("more", taskId="t1"), blocking=False)))
    final = use_store.get("t1")
    assert final["status"]["state"] == "completed" and final["history"] == []


# === races through the runner, in one process ================================================

RUNS: list[str] = []
RUNS_LOCK = threading.Lock()


def counting_handler(request):
    with RUNS_LOCK:
        RUNS.append(request.task_id)
    if "ask" in request.text:
        from a2a.handlers import InputRequired

        raise InputRequired("more?")
    time.sleep(float(request.text.split(":")[-1]) if ":" in request.text else 0)
    return f"done: {request.text}"


@pytest.fixture
def counting(settings):
    settings.A2A_HANDLER = "tests.test_concurrency.counting_handler"
    RUNS.clear()
    return RUNS


def test_cancel_vs_completion_many_times(use_store, counting):
    """Cancel at about the moment the handler completes: every task ends in exactly the
    state the cancel's answer implies, and stays there."""
    outcomes = []
    for i in range(12):
        task = asyncio.run(operations.send_message(SendParams(message=message(f"x:{0.01 * (i % 6)}"), blocking=False)))
        time.sleep(0.001 * (i % 5))
        try:
            asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
            expected = "canceled"
        except TaskNotCancelableError:
            expected = "completed"
        outcomes.append(expected)
        assert wait_for(use_store, task["id"], {"completed", "canceled"})["status"]["state"] == expected
        time.sleep(0.02)
        assert use_store.get(task["id"])["status"]["state"] == expected  # and it stays so
    assert "canceled" in outcomes


def test_two_concurrent_cancels_exactly_one_succeeds(use_store, counting):
    task = asyncio.run(operations.send_message(SendParams(message=message("x:1"), blocking=False)))
    wait_for(use_store, task["id"], {"working"})

    def cancel(n: int) -> str:
        asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
        return "canceled"

    results = race(2, cancel, TaskNotCancelableError, "refused")
    assert sorted(results) == ["canceled", "refused"]


def test_two_concurrent_continuations_exactly_one_is_taken(use_store, counting):
    task = asyncio.run(operations.send_message(SendParams(message=message("ask"), blocking=True)))
    assert task["status"]["state"] == "input-required"

    def follow_up(n: int) -> str:
        asyncio.run(
            operations.send_message(SendParams(message=message(f"answer {n}", taskId=task["id"]), blocking=False))
        )
        return "taken"

    results = race(2, follow_up, UnsupportedOperationError, "refused")
    assert sorted(results) == ["refused", "taken"]
    final = wait_for(use_store, task["id"], {"completed"})
    assert [m["parts"][0]["text"] for m in final["history"] if m["role"] == "user"][1:] in (["answer 0"], ["answer 1"])
    assert RUNS[:] == [task["id"], task["id"]]  # the first run (ask), then exactly one more


def test_a_blocking_follow_up_answers_its_own_turn(use_store, counting):
    """Twenty callers answer one input-required task at once, each until its follow-up
    is taken: each blocking call answers the state its own turn reached (the handler
    asks again), with its own message the last the caller sent, never the next caller's
    turn (``submitted`` or ``working``), which it used to read from the store."""
    task = asyncio.run(operations.send_message(SendParams(message=message("ask"), blocking=True)))
    assert task["status"]["state"] == "input-required"
    deadline = time.monotonic() + 120  # a bound for a stuck run, not a measure

    def follow_up(n: int) -> dict:
        mine = message(f"ask {n}", taskId=task["id"])
        while True:
            try:
                return asyncio.run(operations.send_message(SendParams(message=mine, blocking=True)))
            except UnsupportedOperationError:  # another caller's turn is running: answer after it
                assert time.monotonic() < deadline, "never taken"
                time.sleep(0.001)

    callers = 20
    barrier = threading.Barrier(callers)
    answers: list[dict | None] = [None] * callers

    def run(n: int) -> None:
        barrier.wait()
        try:
            answers[n] = follow_up(n)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n, answer in enumerate(answers):
        assert answer is not None and answer["status"]["state"] == "input-required", (n, answer)
        sent = [m["parts"][0]["text"] for m in answer["history"] if m["role"] == "user"]
        assert sent[-1] == f"ask {n}", (n, sent)
    assert len(RUNS) == callers + 1  # the first turn, then each follow-up's


def test_two_runners_fulfil_a_task_once(use_store, counting):
    """Two runners (as in two processes) are handed the same submitted task."""
    use_store.save({**new_task(message("x:0.2"), context_id="c"), "id": "shared", "_version": 1})
    first, second = Runner(2), Runner(2)
    try:
        futures = [first.submit("shared"), second.submit("shared")]
        for f in futures:
            f.result(10)
    finally:
        first.shutdown(grace=1)
        second.shutdown(grace=1)
    assert RUNS[:] == ["shared"]
    assert use_store.get("shared")["status"]["state"] == "completed"


# === two OS processes start the same task ======================================================

RACER = """
import os, sys, time
import django
django.setup()
from a2a.runtime.runner import Runner
runner = Runner(1)
runner.start()
open(f"{sys.argv[2]}.ready.{os.getpid()}", "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.002)
runner.submit(sys.argv[1]).result(30)
runner.shutdown(grace=5)
"""


def _database_url(store) -> str:
    db = connections[store.using].settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "store_kind",
    store_params(kinds=["file", "file-c", "orm-postgres" if "orm-postgres" in STORE_KINDS else "orm-sqlite"]),
)
def test_two_processes_start_the_same_task_only_one_runs_it(store, tmp_path):
    runs, go = tmp_path / "runs", tmp_path / "go"
    task = {**new_task(message("race"), context_id="c"), "_version": 1}  # no lease: anyone may start it
    store.save(task)
    env = {
        **site_env(),
        "A2A_HANDLER": "tests.handlers.recording",
        "A2A_TEST_RUNS_FILE": str(runs),
        "A2A_LOG_LEVEL": "WARNING",
    }
    if isinstance(store, FileTaskStore):
        env["TASK_STORE"] = json.dumps(
            {"BACKEND": f"file:{store.directory}", "OPTIONS": {"syscalls": store.syscalls.name}}
        )
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    else:
        env["TASK_STORE"] = "orm"
        env["DATABASE_URL"] = _database_url(store)
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, task["id"], str(go)], env=env, cwd=ROOT, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("go.ready.*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # both import Django, start a runner and wait for the go
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()
    assert len(runs.read_text().splitlines()) == 1  # exactly one process ran the handler
    final = store.get(task["id"])
    assert final["status"]["state"] == "completed"
    assert "_lease" not in final
