"""Where a submitted Task is fulfilled: ``A2A_EXECUTOR`` picks, once per process.

- ``"thread"`` (the default, :class:`a2a.runtime.runner.ThreadExecutor`): the runner
  of the process that accepted the task, on its own event loop and thread pool.
  Nothing else to run.
- ``"tasks"`` or ``"tasks:<alias>"`` (:class:`a2a.runtime.worker.TasksExecutor`): a
  job on a queue of Django's Tasks framework (``django.tasks`` on Django 6, the
  ``django-tasks`` backport on 5.2), backend ``TASKS[<alias>]`` (``"default"``). Web
  processes only accept, store and answer; worker processes, started with the
  backend's own command (``manage.py db_worker`` for
  ``django_tasks_db.DatabaseBackend``), pick the job up and run the task through their
  own runner: the same transitions, leases, cancellation and push delivery as the
  embedded default, written once.
- ``{"BACKEND": "<dotted Executor class>", "OPTIONS": {...}}``: any other.

A task waiting on the queue holds a *queued* lease (:func:`a2a.core.leases.new_lease`):
any worker may start it, and when it has waited longer than ``A2A_LEASE_SECONDS`` (the
web process died between saving it and enqueueing it, or the queue lost the job) the
lease reaper enqueues it again. A second job for one task is harmless: starting a task
is a compare-and-swap from ``submitted`` to ``working``, so exactly one job runs it.
"""

from __future__ import annotations

import asyncio
from importlib import import_module
from typing import Any, Protocol

from django.core.checks import CheckMessage
from django.core.exceptions import ImproperlyConfigured

from a2a.conf import a2a_settings
from stores.backends import BackendHandler


class Submits(Protocol):
    """What an executor hands a task to in this process (a runner)."""

    def submit(self, task_id: str, agent: str = "") -> Any: ...


class Executor:
    """Has submitted tasks fulfilled. ``queued``: by worker processes, not by the
    process that accepted them (their leases say so)."""

    queued: bool = False

    def dispatch(self, task_id: str, runner: Submits | None = None, agent: str = "") -> None:
        """Have the task fulfilled (by ``runner`` where the executor runs tasks in
        this process); returns at once. Callable from any thread. ``agent``: the name
        of the task's agent ("" or "default": the default agent), whose store holds it."""
        raise NotImplementedError

    async def adispatch(self, task_id: str, agent: str = "") -> None:
        """:meth:`dispatch` without blocking the event loop."""
        await asyncio.to_thread(self.dispatch, task_id, None, agent)

    def check(self) -> list[CheckMessage]:
        """System-check messages about this executor."""
        return []


class Executors(BackendHandler[Executor]):
    """``A2A_EXECUTOR``: ``"thread"``, ``"tasks"`` / ``"tasks:<TASKS alias>"``, or a
    ``BACKEND``/``OPTIONS`` dict."""

    setting = "A2A_EXECUTOR"
    also_reset_on = ("TASKS",)
    base = Executor
    default = "thread"
    error_id = "a2a.E070"
    accepted = 'A2A_EXECUTOR must be "thread", "tasks" or "tasks:<TASKS alias>" (or a BACKEND/OPTIONS dict).'

    def configured(self) -> Any:
        return a2a_settings.EXECUTOR

    def parse(self, value: Any) -> tuple[str, dict[str, Any]]:
        if value is None:
            raise self.error("A2A_EXECUTOR cannot be None.")
        return super().parse(value)

    def expand(self, value: str) -> tuple[str, dict[str, Any]]:
        if value == "thread":
            return "a2a.runtime.runner.ThreadExecutor", {}
        if value == "tasks" or value.startswith("tasks:"):
            return "a2a.runtime.worker.TasksExecutor", {"backend": value.partition(":")[2] or "default"}
        if "." not in value:
            raise self.error(f"A2A_EXECUTOR cannot be {value!r}.")
        return super().expand(value)


#: The handler of ``A2A_EXECUTOR``.
executors = Executors()


class ExecutorError(ValueError):
    """The queue ``A2A_EXECUTOR`` names cannot be used."""


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
                'the backport (the "tasks" extra)'
            ) from None
    import_module(f"{api.__name__}.signals")  # its handler of a changed TASKS setting (tests)
    return api


def queue_alias() -> str:
    """The ``TASKS`` alias ``A2A_EXECUTOR`` names ("default" for any other executor)."""
    try:
        path, options = executors.parse(a2a_settings.EXECUTOR)
    except ImproperlyConfigured:
        return "default"
    return str(options.get("backend", "default")) if path.endswith(".TasksExecutor") else "default"


def get_executor() -> Executor:
    """This process's executor (built once; a test's settings override resets it)."""
    return executors.get()


def dispatch(task_id: str, runner: Submits | None = None, agent: str = "") -> None:
    """Have the task fulfilled by this process's executor (see :meth:`Executor.dispatch`)."""
    get_executor().dispatch(task_id, runner, agent)


async def adispatch(task_id: str, agent: str = "") -> None:
    """:func:`dispatch` without blocking the event loop."""
    await get_executor().adispatch(task_id, agent)
