"""A2A_EXECUTOR: fulfilment in this process ("thread") or on a queue of Django's Tasks
framework ("tasks"). Here the queue is the framework's dummy backend, which keeps the
jobs it is given; the test plays the worker by running each job (tests/test_distributed.py
runs real `manage.py db_worker` processes)."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured

from a2a.core import leases, lifecycle
from a2a.protocol.model import set_status
from a2a.runtime import executors, reaper, worker
from a2a.runtime.runner import get_runner
from stores.backends import get_task_store
from stores.timestamps import format_timestamp
from tests.helpers import send_direct, wait_for_state

pytestmark = pytest.mark.django_db

DUMMY = f"{worker.tasks_api().__name__}.backends.dummy.DummyBackend"


class Queue:
    """The jobs enqueued (heard through the framework's task_enqueued signal: each
    thread has its own dummy backend instance)."""

    def __init__(self) -> None:
        self.results: list = []

    def heard(self, sender, task_result, **kwargs) -> None:
        self.results.append(task_result)

    def clear(self) -> None:
        self.results.clear()


@pytest.fixture
def queue(settings):
    """A2A_EXECUTOR = "tasks" on a dummy queue (alias "a2a"); yields the jobs enqueued."""
    from importlib import import_module

    settings.TASKS = {"a2a": {"BACKEND": DUMMY}, "default": {"BACKEND": DUMMY}}
    settings.A2A_EXECUTOR = "tasks:a2a"
    settings.A2A_HANDLER = "tests.handlers.scripted"
    signal = import_module(f"{worker.tasks_api().__name__}.signals").task_enqueued
    jobs = Queue()
    signal.connect(jobs.heard)
    yield jobs
    signal.disconnect(jobs.heard)


def run_jobs(backend, *, background: bool = False) -> list[str]:
    """Be the worker: run every job waiting on the queue (each returns once its task
    ended its run); returns their task ids. ``background``: each job on a thread of
    its own, as a worker runs it while the test goes on."""
    jobs, backend.results[:] = list(backend.results), []
    for job in jobs:
        if background:
            threading.Thread(target=job.task.call, args=job.args, kwargs=job.kwargs, daemon=True).start()
        else:
            job.task.call(*job.args, **job.kwargs)
    return [job.args[0] for job in jobs]


def wait_for(task_id: str, states: set[str], timeout: float = 10.0) -> dict:
    return wait_for_state(get_task_store(), task_id, states, timeout)


@pytest.mark.parametrize(
    ("value", "kind", "backend"),
    [("thread", "thread", "default"), ("tasks", "tasks", "default"), ("tasks:bulk", "tasks", "bulk")],
)
def test_the_setting_is_parsed(value, kind, backend):
    built = executors.executors.build(value)
    assert built.queued == (kind == "tasks") and getattr(built, "backend", "default") == backend


@pytest.mark.parametrize("value", ["threads", "", None, "celery", ["tasks"], "task:x"])
def test_a_malformed_setting_is_a_system_check_error(settings, value):
    settings.A2A_EXECUTOR = value
    errors = [e for e in run_checks() if e.id == "a2a.E070"]
    assert len(errors) == 1 and "A2A_EXECUTOR must be" in errors[0].msg
    with pytest.raises(ImproperlyConfigured, match="A2A_EXECUTOR must be"):
        executors.get_executor()


def test_a_queue_missing_from_tasks_is_a_system_check_error(settings):
    settings.TASKS = {"default": {"BACKEND": DUMMY}}
    settings.A2A_EXECUTOR = "tasks:nowhere"
    errors = [e for e in run_checks() if e.id == "a2a.E070"]
    assert len(errors) == 1 and "'nowhere'" in errors[0].msg


def test_the_default_and_a_configured_queue_pass_the_check(queue, settings):
    settings.A2A_EVENTS = "redis://127.0.0.1:6379/0"
    assert not [e for e in run_checks() if e.id in ("a2a.E070", "a2a.W070")]
    settings.A2A_EXECUTOR = "thread"
    settings.A2A_EVENTS = "memory"
    assert not [e for e in run_checks() if e.id in ("a2a.E070", "a2a.W070")]


def test_a_queue_without_shared_events_is_a_system_check_warning(queue, settings):
    settings.A2A_EVENTS = "memory"
    warnings = [e for e in run_checks() if e.id == "a2a.W070"]
    assert len(warnings) == 1 and 'A2A_EVENTS = "memory"' in warnings[0].msg


def test_a_web_process_only_accepts_stores_and_enqueues(queue):
    task = send_direct("artifact:a", blocking=False)
    stored = get_task_store().get(task["id"])
    assert stored["status"]["state"] == "submitted"
    assert leases.is_queued(stored) and leases.held_elsewhere(stored) is None
    assert [r.args for r in queue.results] == [[task["id"]]]
    assert queue.results[0].task.module_path == worker.JOB_PATH
    assert get_runner().active == 0  # nothing runs here


def test_the_worker_runs_the_job_through_the_runner(queue):
    task = send_direct("progress:p;artifact:a", blocking=False)
    assert run_jobs(queue) == [task["id"]]
    done = wait_for(task["id"], {"completed"})
    assert "_lease" not in done  # settled: the lease is dropped
    assert [a["parts"][0]["text"] for a in done["artifacts"]] == ["a", "done: progress:p;artifact:a"]
    assert done["_version"] == 5  # submitted, working, progress, artifact, completed: each one transition


def test_a_second_job_for_one_task_runs_nothing(queue):
    task = send_direct("hi", blocking=False)
    executors.dispatch(task["id"])  # the reaper re-enqueued it meanwhile
    assert run_jobs(queue) == [task["id"], task["id"]]
    done = wait_for(task["id"], {"completed"})
    time.sleep(0.2)
    assert get_task_store().get(task["id"])["_version"] == done["_version"] == 3  # one run


def test_a_task_canceled_through_another_process_stops_its_handler_on_the_worker(queue, settings):
    settings.A2A_LEASE_SECONDS = 1.5  # heartbeats every 0.5 s
    task = send_direct("sleep:30", blocking=False)
    run_jobs(queue, background=True)
    wait_for(task["id"], {"working"})
    # Another process saved "canceled": this process's runner is not told directly.
    lifecycle.transition_sync(get_task_store(), task["id"], lambda t: set_status(t, "canceled"))
    deadline = time.monotonic() + 10
    while get_runner().active and time.monotonic() < deadline:
        time.sleep(0.05)
    assert get_runner().active == 0  # the heartbeat saw the cancel and stopped the handler
    assert get_task_store().get(task["id"])["status"]["state"] == "canceled"


def expire(task_id: str) -> None:
    def change(task):
        task["_lease"]["expires"] = format_timestamp(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
        return task

    lifecycle.transition_sync(get_task_store(), task_id, change, publish=False)


def test_a_task_that_waited_on_the_queue_past_its_lease_is_enqueued_again(queue):
    task = send_direct("hi", blocking=False)
    queue.clear()  # the job was lost (or never written: the web process died)
    expire(task["id"])
    reaped = reaper.reap(get_task_store(), runner=get_runner())
    assert [(r.task_id, r.outcome) for r in reaped] == [(task["id"], "requeued")]
    assert [r.args for r in queue.results] == [[task["id"]]]
    stored = get_task_store().get(task["id"])
    assert leases.is_queued(stored) and not leases.is_expired(stored)
    run_jobs(queue)
    wait_for(task["id"], {"completed"})


@pytest.mark.parametrize("retry", [False, True])
def test_a_task_whose_worker_died_is_failed_or_enqueued_again(queue, settings, retry):
    settings.A2A_RETRY_ON_LOST_LEASE = retry
    task = send_direct("hi", blocking=False)
    queue.clear()

    def died_while_working(t):  # as a worker that was killed leaves it
        t["_lease"] = {"owner": "gone:1:dead", "expires": format_timestamp(dt.datetime.now(dt.UTC)), "runs": 1}
        return set_status(t, "working")

    lifecycle.transition_sync(get_task_store(), task["id"], died_while_working)
    reaper.reap(get_task_store(), runner=get_runner())
    stored = get_task_store().get(task["id"])
    if not retry:
        assert stored["status"]["state"] == "failed" and not queue.results
        return
    assert stored["status"]["state"] == "submitted" and leases.is_queued(stored)
    assert [r.args for r in queue.results] == [[task["id"]]]
    run_jobs(queue)
    done = wait_for(task["id"], {"completed"})
    assert done["artifacts"][0]["parts"][0]["text"] == "done: hi"


def test_a_cancel_heard_from_another_process_stops_the_handler_before_any_heartbeat(queue, settings):
    """With a shared event backend the runner watches its running tasks' events: a
    cancel saved and published by another process (here a second Redis backend, as
    that process would be) stops the handler, though no heartbeat comes for 100 s."""
    import uuid

    from a2a.core.events import TaskEvent
    from tests.test_events import make_backend

    channel = f"a2a-test-{uuid.uuid4().hex}:"
    mine, other = make_backend("redis", channel), make_backend("redis", channel)
    other.origin = "another-process"
    settings.A2A_EVENTS = mine
    settings.A2A_LEASE_SECONDS = 300.0
    try:
        task = send_direct("sleep:60", blocking=False)
        run_jobs(queue, background=True)
        stored = wait_for(task["id"], {"working"})
        canceled = {**set_status(dict(stored), "canceled"), "_version": stored["_version"] + 1}
        get_task_store().save(canceled)  # saved by the other process, which publishes it:
        other.publish(TaskEvent(canceled))
        deadline = time.monotonic() + 20
        while get_runner().active and time.monotonic() < deadline:
            time.sleep(0.05)
        assert get_runner().active == 0, "the handler was not stopped"
        assert get_task_store().get(task["id"])["status"]["state"] == "canceled"
    finally:
        other.close(2)
        mine.close(2)


def test_the_job_returns_once_its_task_ended(queue):
    """A queue engine takes a job that returned for a job that is done (an RQ work-horse
    then exits, taking its threads with it): the job runs the task to its end first."""
    task = send_direct("sleep:0.4;artifact:a", blocking=False)
    (result,) = queue.results
    assert result.task.call(*result.args) == "completed"
    assert get_task_store().get(task["id"])["status"]["state"] == "completed"  # already, when it returned
    assert get_runner().active == 0


def test_a_task_that_asks_for_input_ends_its_job(queue):
    task = send_direct("ask:which one?", blocking=False)
    (result,) = queue.results
    assert result.task.call(*result.args) == "input-required"
    stored = get_task_store().get(task["id"])
    assert stored["status"]["state"] == "input-required" and "_lease" not in stored


def test_a_job_stopped_by_the_queue_fails_its_task_saying_so(queue):
    """RQ's job timeout (and Celery's soft time limit) raise in the job's thread from a
    signal handler: the task fails at once with a message naming it, its handler is
    stopped, and the exception goes on to the queue."""
    import signal

    class JobTimeoutException(Exception):  # as RQ's death penalty raises it
        pass

    def timeout(signum, frame):
        raise JobTimeoutException("Task exceeded maximum timeout value (1 seconds)")

    task = send_direct("sleep:30", blocking=False)
    (result,) = queue.results
    previous = signal.signal(signal.SIGALRM, timeout)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(JobTimeoutException):
            result.task.call(*result.args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    stored = get_task_store().get(task["id"])
    assert stored["status"]["state"] == "failed" and "_lease" not in stored
    assert stored["status"]["message"]["parts"][0]["text"] == worker.STOPPED_MESSAGE.format(
        reason="JobTimeoutException"
    )
    deadline = time.monotonic() + 10
    while get_runner().active and time.monotonic() < deadline:
        time.sleep(0.05)
    assert get_runner().active == 0  # the handler was stopped, not left running


def test_a_job_for_a_task_another_worker_runs_returns_at_once(queue):
    task = send_direct("hi", blocking=False)
    (result,) = queue.results

    def taken(t):  # another worker started it and holds its lease
        t["_lease"] = leases.new_lease(runs=1) | {"owner": "elsewhere:1:x"}
        return set_status(t, "working")

    lifecycle.transition_sync(get_task_store(), task["id"], taken)
    began = time.monotonic()
    assert result.task.call(*result.args) == "working"  # left to its worker
    assert time.monotonic() - began < 5
