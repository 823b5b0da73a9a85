"""The job a queue worker runs for each submitted Task (``A2A_EXECUTOR = "tasks"``).

:func:`fulfil` is a task of Django's Tasks framework: web processes enqueue it
(:func:`a2a.runtime.executors.dispatch`), worker processes started with the backend's own
command (``manage.py db_worker``) run it. It hands the A2A task to this process's
runner (:mod:`a2a.runtime.runner`), which runs the handler exactly as in a web process: the
``working`` and final transitions, the lease and its heartbeats, cancellation (heard
from the event backend, or noticed by the heartbeat), push delivery by the process
that saves each transition.

The job returns as soon as the runner has the task, once the runner has a free slot
(at most ``A2A_WORKERS`` tasks at once): one worker process runs ``A2A_WORKERS``
handlers concurrently, and waits, holding one job, while all are busy, so the other
workers take the rest of the queue. The queue's job result only says "handed over":
the task store is the record of the task. A worker that dies leaves its tasks leased
to it; the lease reaper of any other process fails or re-enqueues them
(:mod:`a2a.core.leases`).

Import this module only with a Tasks backend configured (it defines the job against
``TASKS[<alias>]`` of ``A2A_EXECUTOR``).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from a2a.conf import a2a_settings
from a2a.runtime.executors import ExecutorError, get_executor, tasks_api

_slots: threading.BoundedSemaphore | None = None
_slots_lock = threading.Lock()


def _free_slot() -> threading.BoundedSemaphore:
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(int(a2a_settings.WORKERS))
        return _slots


def _alias() -> str:
    executor = get_executor()
    return executor.backend if executor.queued else "default"


def fulfil(task_id: str) -> str:
    """Run A2A task ``task_id`` through this process's runner (returns once handed over)."""
    from a2a.runtime.runner import get_runner

    slots = _free_slot()
    slots.acquire()
    try:
        future = get_runner().submit(task_id)
    except BaseException:
        slots.release()
        raise
    future.add_done_callback(lambda _: slots.release())
    return task_id


# The Tasks framework's job: its workers import "a2a.runtime.worker.fulfil" and need a Task there.
# Without the framework installed, A2A_EXECUTOR = "tasks" cannot be used (a2a.E070 says so).
with contextlib.suppress(ExecutorError):
    fulfil = tasks_api().task(backend=_alias())(fulfil)


def job() -> Any:
    """The Tasks framework's handle on :func:`fulfil` (``.using(...).enqueue(task_id)``)."""
    tasks_api()  # ExecutorError naming the package when the framework is missing
    return fulfil
