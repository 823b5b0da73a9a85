"""The queue executor (``A2A_EXECUTOR = "tasks"``) and the job its workers run.

:class:`TasksExecutor` enqueues :func:`fulfil`, a task of Django's Tasks framework:
web processes enqueue it, worker processes started with the backend's own command
(``manage.py db_worker``, ``manage.py rqworker``, ``celery worker``) run it. It runs the
A2A task through the worker process's runner (:mod:`a2a.runtime.runner`), exactly as in
a web process: the ``working`` and final transitions, the lease and its heartbeats,
cancellation (heard from the event backend, or noticed by the heartbeat), push
delivery by the process that saves each transition.

The job returns only once the task has ended its run (a final state, or a state that
waits for the client, such as ``input-required``), its events sent and its webhooks
delivered: every queue engine takes a job that returned for a job that is done. RQ's
default worker runs each job in a forked work-horse that exits (``os._exit``) when the
job returns, and Celery's prefork pool recycles its children; a job that handed the
task to a thread and returned at once lost it with the process. In a forked
work-horse the parent's threads are not there: the runner's loop (and the event
backend's) start afresh in the child (:class:`a2a.core.loop.LoopThread`).

So a worker runs one task per job at a time: the engine's concurrency is the
deployment's (one per ``db_worker`` or RQ worker process, ``-c`` per Celery worker);
``A2A_WORKERS`` caps the tasks one process's runner runs at once, which only a
threaded pool reaches. A job stopped before its task ended (RQ's job timeout,
Celery's soft time limit, a second SIGTERM) fails the task with a message saying so;
a worker that dies leaves its task leased to it, and the lease reaper of any other
process fails or re-enqueues it (:mod:`a2a.runtime.reaper`).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from django.core.checks import CheckMessage, Error, Warning
from django.db import close_old_connections, connections

from a2a import push
from a2a.agents import DEFAULT_AGENT, store_of
from a2a.conf import a2a_settings
from a2a.core import leases, lifecycle
from a2a.core.events import flush_events
from a2a.protocol.model import text_part
from a2a.runtime import retention
from a2a.runtime.executors import Executor, ExecutorError, Submits, queue_alias, tasks_api
from a2a.runtime.runner import get_runner
from stores.base import Task, TaskStore
from stores.fields import task_state
from stores.orm_connection import refresh_connection

logger = logging.getLogger(__name__)

#: The import path of the job function the worker processes run.
JOB_PATH = "a2a.runtime.worker.fulfil"


#: The status message of a task whose job the queue stopped before the task ended.
STOPPED_MESSAGE = "The queue stopped this task's job ({reason}) before the task finished; send the message again."


def fulfil(task_id: str, agent: str = "") -> str:
    """Run A2A task ``task_id`` of agent ``agent`` ("": the default agent) through this
    process's runner, and return once its run ended: its state then (``completed``,
    ``failed``, ``input-required``...; or the state another worker's run left it in)."""
    close_old_connections()  # as Django does around a request (a database restarted meanwhile)
    store = store_of(agent)
    run = get_runner().submit(task_id, agent)
    try:
        run.result()
    except BaseException as exc:  # the job was stopped: a time limit, a second SIGTERM
        run.cancel()  # the runner's job for it, on the runner's loop
        _fail_stopped(store, task_id, exc)
        raise
    finally:
        _send_pending()
    try:
        task = store.get(task_id)
    except Exception:  # the store cannot be reached now: the job is done all the same
        return "unknown"
    finally:
        close_old_connections()
    return task_state(task) if task is not None else "deleted"


def _fail_stopped(store: TaskStore, task_id: str, exc: BaseException) -> None:
    """Fail the task this process was running, saying that its job was stopped (a task
    another process holds, or that ended meanwhile, is left alone)."""
    reason = type(exc).__name__
    change = lifecycle.settle("failed", parts=[text_part(STOPPED_MESSAGE.format(reason=reason))])

    def ours(task: Task) -> Task | None:
        return change(task) if leases.is_ours(task) else None

    try:
        lifecycle.transition_sync(store, task_id, ours)
    except Exception:  # its lease runs out instead, and the reaper says so
        logger.exception("task %s: its job was stopped (%s), and saving it failed did not work", task_id, reason)


def _send_pending() -> None:
    """Send this process's events and deliver its webhooks before the job returns (for
    at most the push grace): an RQ work-horse then ends with ``os._exit``, which runs no
    ``atexit`` handler, and a recycled Celery child the same."""
    flush_events(10.0)
    push.wait_idle(min(a2a_settings.SHUTDOWN_GRACE, a2a_settings.PUSH_TIMEOUT))


# The Tasks framework's job: its workers import "a2a.runtime.worker.fulfil" and need a Task there.
# Without the framework installed, A2A_EXECUTOR = "tasks" cannot be used (a2a.E070 says so).
with contextlib.suppress(ExecutorError):
    fulfil = tasks_api().task(backend=queue_alias())(fulfil)


def sweep_job() -> int:
    """A retention sweep of every store in use (:func:`a2a.runtime.retention.sweep_once`),
    as a job a queue deployment enqueues from a scheduler (``sweep_job.enqueue()``)."""
    return retention.sweep_once()


with contextlib.suppress(ExecutorError):
    sweep_job = tasks_api().task(backend=queue_alias())(sweep_job)


def job() -> Any:
    """The Tasks framework's handle on :func:`fulfil` (``.using(...).enqueue(task_id, agent)``)."""
    tasks_api()  # ExecutorError naming the package when the framework is missing
    return fulfil


class TasksExecutor(Executor):
    """Tasks run as jobs on the queue ``TASKS[backend]`` of Django's Tasks framework."""

    queued = True

    def __init__(self, backend: str = "default") -> None:
        self.backend = backend

    def __repr__(self) -> str:
        return f"<TasksExecutor backend={self.backend!r}>"

    def queue(self) -> Any:
        """The ``TASKS`` backend this executor enqueues on (ExecutorError if unusable)."""
        api = tasks_api()
        try:
            return api.task_backends[self.backend]
        except Exception as exc:  # InvalidTaskBackend(Error): not in TASKS, or cannot be imported
            raise ExecutorError(f"TASKS backend {self.backend!r} cannot be used: {exc}") from None

    def dispatch(self, task_id: str, runner: Submits | None = None, agent: str = "") -> None:
        # A database queue writes from this thread, which no request signal reaches:
        # drop a connection the database closed (a restart) first, as the task store does.
        for connection in connections.all(initialized_only=True):
            refresh_connection(connection.alias)
        # The default agent's job keeps the one argument it always had (jobs queued by an
        # earlier release still run); another agent's names it, its worker reads its store.
        args = (task_id,) if not agent or agent == DEFAULT_AGENT else (task_id, agent)
        job().using(backend=self.backend).enqueue(*args)

    def check(self) -> list[CheckMessage]:
        """``a2a.E070``: the queue cannot be used; ``a2a.W070``: events do not leave a process."""
        try:
            self.queue().validate_task(job())
        except Exception as exc:
            return [
                Error(
                    str(exc),
                    hint='e.g. A2A_EXECUTOR = "tasks" with TASKS = {"default": {"BACKEND": '
                    '"django_tasks_db.DatabaseBackend"}} and "django_tasks_db" in INSTALLED_APPS.',
                    id="a2a.E070",
                )
            ]
        if a2a_settings.EVENTS in ("", "memory"):
            return [
                Warning(
                    'A2A_EXECUTOR = "tasks" runs handlers in worker processes, but A2A_EVENTS = "memory" keeps '
                    "each process's events to itself: streams and blocking SendMessage in the web processes "
                    "never hear the workers' progress (a blocking send waits A2A_BLOCKING_TIMEOUT).",
                    hint='Share events between processes: A2A_EVENTS = "redis://..." or "postgres".',
                    id="a2a.W070",
                )
            ]
        return []
