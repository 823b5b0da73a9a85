"""Leases: a task in flight is leased to the process running it, renewed by a
heartbeat, and settled by the reaper when the lease runs out (the process died);
``manage.py a2a_leases``; and the multi-worker check (a2a.W001) and start-up log."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import logging
import sys
import time
import types

import pytest
from django.core.management import call_command

from a2a.core import leases
from a2a.ops import bulk as maintenance
from a2a.ops import checks, deployment
from a2a.protocol.model import SendParams, new_task
from a2a.runtime import reaper
from a2a.runtime.runner import Runner
from a2a.service import operations
from stores.timestamps import format_timestamp, now_iso
from tests.db_marks import store_params
from tests.helpers import wait_for_state as wait_for

pytestmark = pytest.mark.django_db


@pytest.fixture(params=store_params(transaction=True))
def store_kind(request) -> str:
    """Each store; an ORM one in real transactions (the runner's threads see its rows)."""
    return request.param


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def message(text: str) -> dict:
    return {"kind": "message", "messageId": f"m-{time.monotonic_ns()}", "role": "user",
            "parts": [{"kind": "text", "text": text}]}  # fmt: skip


def leased(task_id: str, state: str = "working", *, expires: dt.datetime, owner: str = "gone:1:dead", runs: int = 1):
    task = {**new_task(message("work"), context_id="c"), "id": task_id, "_version": 2}
    task["status"] = {"state": state, "timestamp": now_iso()}
    task["_lease"] = {"owner": owner, "expires": format_timestamp(expires), "runs": runs}
    return task


@pytest.fixture
def short_lease(settings):
    settings.A2A_LEASE_SECONDS = 1.0  # renewed every third of a second
    settings.A2A_LEASE_CHECK_INTERVAL = 0.3
    return 1.0


# === the lease of a running task ============================================================


def test_a_running_task_is_leased_renewed_quietly_and_released(use_store, settings, short_lease, heard):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    task = asyncio.run(operations.send_message(SendParams(message=message("sleep:1.5"), blocking=False)))
    assert task["_lease"]["owner"] == leases.owner_id()  # leased from the moment it is accepted
    working = wait_for(use_store, task["id"], {"working"})
    assert working["_lease"]["owner"] == leases.owner_id() and working["_lease"]["runs"] == 1
    first = working["_lease"]["expires"]
    time.sleep(0.8)
    renewed = use_store.get(task["id"])
    assert renewed["_lease"]["expires"] > first  # the heartbeat pushed it forward
    assert renewed["status"] == working["status"]  # ...without a status change
    done = wait_for(use_store, task["id"], {"completed"})
    assert "_lease" not in done
    deadline = time.monotonic() + 2  # the save is published just after it is stored
    while done["_version"] not in [t["_version"] for t in heard] and time.monotonic() < deadline:
        time.sleep(0.01)
    published = [t["_version"] for t in heard if t["id"] == task["id"]]
    assert published == [1, 2, done["_version"]]  # submitted, working, completed: renewals are not announced
    assert done["_version"] > 3


# === the reaper ==============================================================================


def test_the_reaper_fails_a_working_task_whose_lease_expired(use_store, heard):
    expired = now() - dt.timedelta(seconds=5)
    use_store.save(leased("dead", expires=expired))
    use_store.save(leased("alive", expires=now() + dt.timedelta(seconds=60)))
    use_store.save({**leased("unleased", expires=now()), "_lease": None})
    use_store.save(leased("finished", "completed", expires=now() - dt.timedelta(seconds=5)))
    reaped = reaper.reap(use_store)
    assert [(r.task_id, r.outcome) for r in reaped] == [("dead", "failed")]
    dead = use_store.get("dead")
    assert dead["status"]["state"] == "failed" and "_lease" not in dead
    text = dead["status"]["message"]["parts"][0]["text"]
    assert text.startswith("The process running this task stopped (its lease expired at ")
    assert format_timestamp(expired) in text
    assert [t["status"]["state"] for t in heard if t["id"] == "dead"] == ["failed"]  # announced like any failure
    for other in ("alive", "unleased", "finished"):
        assert use_store.get(other)["_version"] == 2  # untouched
    assert reaper.reap(use_store) == []  # once


def test_dry_run_changes_nothing(use_store):
    use_store.save(leased("dead", expires=now() - dt.timedelta(seconds=5)))
    assert [(r.task_id, r.outcome) for r in reaper.reap(use_store, dry_run=True)] == [("dead", "expired")]
    assert use_store.get("dead")["status"]["state"] == "working"


def test_a_server_process_reruns_a_submitted_task_whose_owner_died(use_store, settings):
    """Accepted by a process that died before starting it: nothing ran, so it is run."""
    settings.A2A_HANDLER = "tests.handlers.scripted"
    use_store.save(leased("orphan", "submitted", expires=now() - dt.timedelta(seconds=1), runs=0))
    runner = Runner(1)
    try:
        assert [r.outcome for r in reaper.reap(use_store, runner=runner)] == ["requeued"]
        done = wait_for(use_store, "orphan", {"completed"})
    finally:
        runner.shutdown(grace=2)
    assert done["artifacts"][0]["parts"][0]["text"] == "done: work"
    assert "_lease" not in done


def test_without_a_server_a_submitted_orphan_is_failed(use_store):
    use_store.save(leased("orphan", "submitted", expires=now() - dt.timedelta(seconds=1), runs=0))
    assert [r.outcome for r in reaper.reap(use_store)] == ["failed"]
    text = use_store.get("orphan")["status"]["message"]["parts"][0]["text"]
    assert text.startswith("The process that accepted this task stopped before running it (its lease expired at ")


async def _no_lease_checks(runner) -> None:
    """In place of the runner's own lease checks (:func:`a2a.runtime.reaper._maintain`)."""
    await asyncio.Event().wait()


def test_with_retry_a_working_orphan_is_run_again_up_to_max_runs(use_store, settings, heard, monkeypatch):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_RETRY_ON_LOST_LEASE = True
    # The requeue starts the runner's loop, whose first lease check would race this reap
    # for the other task (seen in CI: "enough" failed by the runner, "skipped" here).
    monkeypatch.setattr(reaper, "_maintain", _no_lease_checks)
    use_store.save(leased("again", expires=now() - dt.timedelta(seconds=1), runs=1))
    use_store.save(leased("enough", expires=now() - dt.timedelta(seconds=1), runs=leases.MAX_RUNS))
    runner = Runner(1)
    try:
        outcomes = {r.task_id: r.outcome for r in reaper.reap(use_store, runner=runner)}
        assert outcomes == {"again": "requeued", "enough": "failed"}
        done = wait_for(use_store, "again", {"completed"})
    finally:
        runner.shutdown(grace=2)
    deadline = time.monotonic() + 2  # the save is published just after it is stored
    while done["_version"] not in [t["_version"] for t in heard if t["id"] == "again"] and time.monotonic() < deadline:
        time.sleep(0.01)
    states = [t["status"]["state"] for t in heard if t["id"] == "again"]
    assert states == ["submitted", "working", "completed"]
    requeued = next(t for t in heard if t["id"] == "again" and t["status"]["state"] == "submitted")
    assert "running the task again" in requeued["status"]["message"]["parts"][0]["text"]
    assert done["artifacts"][0]["parts"][0]["text"] == "done: work"
    assert use_store.get("enough")["status"]["state"] == "failed"


def test_without_retry_a_server_process_fails_a_working_orphan(use_store):
    use_store.save(leased("dead", expires=now() - dt.timedelta(seconds=1)))
    runner = Runner(1)
    try:
        assert [r.outcome for r in reaper.reap(use_store, runner=runner)] == ["failed"]
    finally:
        runner.shutdown(grace=1)


def test_the_runner_reaps_at_start_and_then_periodically(use_store, short_lease):
    use_store.save(leased("before", expires=now() - dt.timedelta(seconds=1)))
    runner = Runner(1)
    try:
        runner.start()
        wait_for(use_store, "before", {"failed"}, timeout=3)
        use_store.save(leased("later", expires=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=0.3)))
        wait_for(use_store, "later", {"failed"}, timeout=3)  # expiry + one check interval (with jitter)
    finally:
        runner.shutdown(grace=1)


def test_several_reapers_settle_a_task_once(use_store, heard):
    import threading

    use_store.save(leased("dead", expires=now() - dt.timedelta(seconds=1)))
    results: list[list] = []
    barrier = threading.Barrier(4)

    def reap():
        barrier.wait()
        results.append([r.outcome for r in reaper.reap(use_store) if r.outcome != "skipped"])
        from django.db import connections

        connections.close_all()

    threads = [threading.Thread(target=reap) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o for r in results for o in r) == ["failed"]
    assert [t["status"]["state"] for t in heard if t["id"] == "dead"] == ["failed"]


# === a heartbeat hears what other processes did ==============================================


def test_a_cancel_saved_by_another_process_stops_the_handler_here(use_store, settings, short_lease):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    runner = Runner(1)
    try:
        task = {**new_task(message("sleep:30"), context_id="c"), "_version": 1}
        use_store.save(task)
        runner.submit(task["id"])
        working = wait_for(use_store, task["id"], {"working"})
        # Another worker's CancelTask: saved in the store; this process's runner is not told.
        use_store.save({**working, "status": {"state": "canceled", "timestamp": now_iso()}, "_version": 99})
        deadline = time.monotonic() + 3
        while runner.active and time.monotonic() < deadline:
            time.sleep(0.02)
        assert runner.active == 0  # the heartbeat saw it and stopped the handler
    finally:
        runner.shutdown(grace=1)
    assert use_store.get(task["id"])["status"]["state"] == "canceled"


def test_a_task_taken_over_by_another_process_drops_the_late_result(use_store, settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    runner = Runner(1)
    try:
        task = {**new_task(message("sleep:0.5"), context_id="c"), "_version": 1}
        use_store.save(task)
        future = runner.submit(task["id"])
        working = wait_for(use_store, task["id"], {"working"})
        # Another process decided we were dead and took the task over.
        other = {"owner": "other:2:beef", "expires": format_timestamp(now() + dt.timedelta(minutes=5)), "runs": 2}
        use_store.save({**working, "_lease": other, "_version": working["_version"] + 1})
        future.result(5)
    finally:
        runner.shutdown(grace=1)
    final = use_store.get(task["id"])
    assert final["status"]["state"] == "working" and final["_lease"] == other  # our result was dropped


def test_a_task_the_runner_will_not_start_says_why(use_store, settings, caplog):
    """Leased by another live process: not started here, and the log says so (it used to
    wait silently for the lease to run out)."""
    settings.A2A_HANDLER = "tests.handlers.scripted"
    use_store.save(leased("theirs", "submitted", expires=now() + dt.timedelta(minutes=5), owner="other:2:beef"))
    runner = Runner(1)
    try:
        with caplog.at_level(logging.INFO, logger="a2a"):
            runner.submit("theirs").result(10)
    finally:
        runner.shutdown(grace=1)
    assert use_store.get("theirs")["status"]["state"] == "submitted"  # the other process's to run
    said = [r for r in caplog.records if "theirs" in r.getMessage() and "not started" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING, caplog.text
    assert "(submitted)" in said[0].getMessage() and "held by other:2:beef" in said[0].getMessage()


OWNER_RACE = """
import os, sys, threading
from a2a.core import leases

def first_use():
    # threads leasing at once, as a fresh server's first requests do
    barrier, owners = threading.Barrier(12), []
    def lease():
        barrier.wait()
        owners.append(leases.new_lease()["owner"])
    threads = [threading.Thread(target=lease) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return set(owners) | {leases.owner_id()}

for _ in range(20):  # each forked child is a new process, a new owner
    pid = os.fork()
    if pid == 0:
        os._exit(len(first_use()))
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
"""


def test_a_process_leases_under_one_owner_from_its_first_moment(tmp_path):
    """Twelve threads leasing at once in a fresh (forked) process: one owner name. It
    was minted lazily, and threads that minted it at once leased tasks under names that
    lost: those tasks never started (they waited for their lease to run out)."""
    import subprocess

    from tests.server import ROOT, site_env

    done = subprocess.run(
        [sys.executable, "-c", OWNER_RACE], env=site_env(), cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"] * 20


def test_fail_stale_spares_a_task_whose_lease_is_alive(use_store):
    old = now() - dt.timedelta(hours=3)
    alive = leased("alive", expires=now() + dt.timedelta(minutes=1))
    alive["status"]["timestamp"] = format_timestamp(old)
    use_store.save(alive)
    outcome, _ = maintenance.fail_stale(use_store, "alive", dt.timedelta(hours=1))
    assert outcome == "fresh"


# === manage.py a2a_leases ===================================================================


def test_management_command(use_store):
    use_store.save(leased("dead", expires=now() - dt.timedelta(seconds=5)))
    use_store.save(leased("alive", expires=now() + dt.timedelta(seconds=60)))
    out, err = io.StringIO(), io.StringIO()
    call_command("a2a_leases", "--dry-run", stdout=out, stderr=err)
    assert out.getvalue().startswith("dead: lease expired (working, lease expired at ")
    assert "Found 1 task" in err.getvalue()
    assert use_store.get("dead")["status"]["state"] == "working"
    out, err = io.StringIO(), io.StringIO()
    call_command("a2a_leases", stdout=out, stderr=err)
    assert out.getvalue().startswith("dead: failed (working, lease expired at ")
    assert use_store.get("dead")["status"]["state"] == "failed"
    assert use_store.get("alive")["status"]["state"] == "working"


# === several workers on a store that cannot be shared ======================================


def check_ids():
    return [m.id for m in checks.check_deployment()]


def test_w001_memory_store_with_several_workers(settings, monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    settings.TASK_STORE = "memory"
    assert "a2a.W001" not in check_ids()
    settings.A2A_EXPECT_WORKERS = 4
    warning = next(m for m in checks.check_deployment() if m.id == "a2a.W001")
    assert "A2A_EXPECT_WORKERS=4" in warning.msg and "file:" in warning.hint
    settings.A2A_EXPECT_WORKERS = 1
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    assert "a2a.W001" in check_ids()


def test_w001_not_for_a_shared_store(settings, monkeypatch, tmp_path):
    monkeypatch.setenv("WEB_CONCURRENCY", "4")
    settings.TASK_STORE = f"file:{tmp_path}"
    assert "a2a.W001" not in check_ids()


def test_lease_settings_are_checked(settings):
    settings.A2A_LEASE_SECONDS = 0
    settings.A2A_RETRY_ON_LOST_LEASE = "yes"
    messages = [m.msg for m in checks.check_deployment()]
    assert any("A2A_LEASE_SECONDS" in m for m in messages)
    assert any("A2A_RETRY_ON_LOST_LEASE" in m for m in messages)


def test_a_uvicorn_worker_sees_its_siblings(monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    assert deployment.several_workers() is None  # pytest: one process
    monkeypatch.setattr(deployment.multiprocessing, "parent_process", lambda: object())
    monkeypatch.setitem(sys.modules, "uvicorn", types.ModuleType("uvicorn"))
    monkeypatch.setattr(deployment, "_parent_arguments", lambda: ["python", "-m", "uvicorn", "app", "--workers", "4"])
    assert deployment.several_workers() == "uvicorn runs 4 workers"
    monkeypatch.setattr(deployment, "_parent_arguments", lambda: ["python", "-m", "uvicorn", "app", "--reload"])
    assert deployment.several_workers() is None


def test_start_up_log(settings, monkeypatch, caplog, tmp_path):
    monkeypatch.setattr(deployment, "several_workers", lambda: "uvicorn runs 4 workers")
    settings.TASK_STORE = "memory"
    with caplog.at_level(logging.INFO, logger="a2a"):
        deployment.log_startup()
    assert caplog.records[-1].levelname == "WARNING"
    assert "lives inside one process, but uvicorn runs 4 workers" in caplog.text
    caplog.clear()
    settings.TASK_STORE = f"file:{tmp_path}"
    with caplog.at_level(logging.INFO, logger="a2a"):
        deployment.log_startup()
    store_line = next(r for r in caplog.records if "FileTaskStore" in r.getMessage())
    assert store_line.levelname == "INFO"  # (the warning that follows is A2A_EVENTS's: tests/test_events.py)


class _NoTasks:
    """A runner with nothing in flight (what _maintain needs of one)."""

    def task_ids(self) -> set[str]:
        return set()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc")
def test_an_unusable_store_is_logged_once_not_on_every_check(settings, caplog):
    """A store that fails every check (a directory under /proc) logs its failure once,
    with the traceback, and once more when it works again: not a traceback per tick."""
    settings.TASK_STORE = "file:/proc/a2a-tasks"
    settings.A2A_LEASE_CHECK_INTERVAL = 0.01

    async def for_a_while(seconds: float) -> None:
        maintaining = asyncio.ensure_future(reaper._maintain(_NoTasks()))
        await asyncio.sleep(seconds)
        maintaining.cancel()

    with caplog.at_level(logging.DEBUG, logger="a2a.runtime.reaper"):
        asyncio.run(for_a_while(0.5))
        failed = [r for r in caplog.records if r.levelno >= logging.WARNING]
        again = [r for r in caplog.records if "failed again" in r.getMessage()]
        assert len(failed) == 1 and failed[0].exc_info, caplog.text
        assert "could not create /proc/a2a-tasks" in failed[0].getMessage()
        assert len(again) >= 3  # it kept checking, quietly
        caplog.clear()
        failures = reaper.Failures()
        failures.failed("checking", OSError("gone"))
        failures.succeeded("checking")
        failures.succeeded("checking")
    assert [r.getMessage() for r in caplog.records][1:] == ["checking works again"]
