"""The queue executor (``A2A_EXECUTOR = "tasks"``) and the job its workers run.

:class:`TasksExecutor` enqueues :func:`fulfil`, a task of Django's Tasks framework:
web processes enqueue it, worker processes started with the backend's own command
(``manage.py db_worker``) run it. It hands the A2A task to the worker process's
runner (:mod:`a2a.runtime.runner`), which runs the handler exactly as in a web
process: the ``working`` and final transitions, the lease and its heartbeats,
cancellation (heard from the event backend, or noticed by the heartbeat), push
delivery by the process that saves each transition.

The job returns as soon as the runner has the task, once the runner has a free slot
(at most ``A2A_WORKERS`` tasks at once): one worker process runs ``A2A_WORKERS``
handlers concurrently, and waits, holding one job, while all are busy, so the other
workers take the rest of the queue. The queue's job result only says "handed over":
the task store is the record of the task. A worker that dies leaves its tasks leased
to it; the lease reaper of any other process fails or re-enqueues them
(:mod:`a2a.runtime.reaper`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from django.core.checks import CheckMessage, Error, Warning
from django.db import connections

from a2a.agents import DEFAULT_AGENT
from a2a.conf import a2a_settings
from a2a.runtime import retention
from a2a.runtime.executors import Executor, ExecutorError, Submits, queue_alias, tasks_api
from a2a.runtime.runner import get_runner
from stores.orm import refresh_connection

#: The import path of the job function the worker processes run.
JOB_PATH = "a2a.runtime.worker.fulfil"


_slots: threading.BoundedSemaphore | None = None
_slots_lock = threading.Lock()


def _free_slot() -> threading.BoundedSemaphore:
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(a2a_settings.WORKERS)
        return _slots


def fulfil(task_id: str, agent: str = "") -> str:
    """Run A2A task ``task_id`` of agent ``agent`` ("": the default agent) through this
    process's runner (returns once handed over)."""
    slots = _free_slot()
    slots.acquire()
    try:
        future = get_runner().submit(task_id, agent)
    except BaseException:
        slots.release()
        raise
    future.add_done_callback(lambda _: slots.release())
    return task_id


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
