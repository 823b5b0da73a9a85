"""Where a submitted Task is fulfilled: ``A2A_EXECUTOR`` picks, once per process.

- ``"thread"`` (the default): the runner of the process that accepted the task
  (:mod:`a2a.runtime.runner`), on its own event loop and thread pool. Nothing else to run.
- ``"tasks"`` or ``"tasks:<alias>"``: a job on a queue of Django's Tasks framework
  (``django.tasks`` on Django 6, the ``django-tasks`` backport on 5.2), backend
  ``TASKS[<alias>]`` (``"default"``). Web processes only accept, store and answer;
  worker processes, started with the backend's own command (``manage.py db_worker``
  for ``django_tasks_db.DatabaseBackend``), pick the job up and run the task through
  their own runner (:func:`a2a.runtime.worker.fulfil`): the same transitions, leases,
  cancellation and push delivery as the embedded default, written once.

A task waiting on the queue holds a *queued* lease (:func:`a2a.core.leases.new_lease`): any
worker may start it, and when it has waited longer than ``A2A_LEASE_SECONDS`` (the web
process died between saving it and enqueueing it, or the queue lost the job) the lease
reaper enqueues it again. A second job for one task is harmless: starting a task is a
compare-and-swap from ``submitted`` to ``working``, so exactly one job runs it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from django.core.checks import CheckMessage, Error, Warning, register
from django.core.signals import setting_changed
from django.db import connections

from a2a.conf import a2a_settings

if TYPE_CHECKING:
    from a2a.runtime.runner import Runner

logger = logging.getLogger(__name__)

#: The import path of the job function the worker processes run.
JOB_PATH = "a2a.runtime.worker.fulfil"


class ExecutorError(ValueError):
    """``A2A_EXECUTOR`` (or the queue it names) cannot be used."""


@dataclass(frozen=True)
class Executor:
    """The parsed ``A2A_EXECUTOR``: ``kind`` "thread" or "tasks", and for "tasks" the
    ``TASKS`` backend alias."""

    kind: str
    backend: str = "default"

    @property
    def queued(self) -> bool:
        """Tasks are fulfilled by worker processes, not by the process that accepts them."""
        return self.kind == "tasks"


def parse(value: Any) -> Executor:
    """``"thread"``, ``"tasks"`` or ``"tasks:<alias>"``; ExecutorError for anything else."""
    if value == "thread":
        return Executor("thread")
    if isinstance(value, str) and (value == "tasks" or value.startswith("tasks:")):
        alias = value.partition(":")[2] or "default"
        return Executor("tasks", alias)
    raise ExecutorError(f'A2A_EXECUTOR must be "thread", "tasks" or "tasks:<TASKS alias>", not {value!r}')


@functools.cache
def get_executor() -> Executor:
    """This process's executor (resolved once; a test's settings override resets it)."""
    return parse(a2a_settings.EXECUTOR)


def tasks_api() -> Any:
    """The Tasks framework module: ``django.tasks`` (Django 6+) or the ``django_tasks``
    backport (Django 5.2); ExecutorError naming the package when neither is installed."""
    try:
        import django.tasks as api  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            import django_tasks as api  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            raise ExecutorError(
                'A2A_EXECUTOR = "tasks" needs Django\'s Tasks framework: Django 6, or on Django 5.2 '
                'the backport (pip install "django-a2a-agent[tasks]")'
            ) from None
    import_module(f"{api.__name__}.signals")  # its handler of a changed TASKS setting (tests)
    return api


def queue_backend() -> Any:
    """The ``TASKS`` backend the executor enqueues on (ExecutorError if unusable)."""
    executor = get_executor()
    api = tasks_api()
    try:
        return api.task_backends[executor.backend]
    except Exception as exc:  # InvalidTaskBackend(Error): not in TASKS, or cannot be imported
        raise ExecutorError(f"TASKS backend {executor.backend!r} cannot be used: {exc}") from None


def dispatch(task_id: str, runner: Runner | None = None) -> None:
    """Have the task fulfilled: by ``runner`` (this process's by default), or through
    the queue. Returns at once (an enqueue is one write to the queue). Callable from
    any thread."""
    if not get_executor().queued:
        from a2a.runtime.runner import get_runner

        (runner or get_runner()).submit(task_id)
        return
    from a2a.runtime.worker import job
    from stores.orm import refresh_connection

    # A database queue writes from this thread, which no request signal reaches:
    # drop a connection the database closed (a restart) first, as the task store does.
    for connection in connections.all(initialized_only=True):
        refresh_connection(connection.alias)
    job().using(backend=get_executor().backend).enqueue(task_id)


async def adispatch(task_id: str) -> None:
    """:func:`dispatch` without blocking the event loop (the enqueue runs on a thread)."""
    if not get_executor().queued:
        dispatch(task_id)
        return
    await asyncio.to_thread(dispatch, task_id)


@register()
def check_executor(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``a2a.E070``: ``A2A_EXECUTOR`` is malformed, or names a queue that cannot be used.
    ``a2a.W070``: handlers run in workers, but events do not leave a process."""
    try:
        executor = parse(a2a_settings.EXECUTOR)
        if executor.queued:
            backend = queue_backend()
            from a2a.runtime.worker import job

            backend.validate_task(job())
    except Exception as exc:
        return [
            Error(
                str(exc),
                hint='e.g. A2A_EXECUTOR = "tasks" with TASKS = {"default": {"BACKEND": '
                '"django_tasks_db.DatabaseBackend"}} and "django_tasks_db" in INSTALLED_APPS.',
                id="a2a.E070",
            )
        ]
    if executor.queued and a2a_settings.EVENTS in ("", "memory"):
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


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("A2A_EXECUTOR", "TASKS"):
        get_executor.cache_clear()


setting_changed.connect(_on_setting_changed)
