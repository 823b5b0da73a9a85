"""The runner's deferred-creation protocol: a :func:`~a2a.handlers.direct_reply`
handler's task is not saved when the handler starts; its first task-visible act saves it.

The runner (:mod:`a2a.runtime.direct`) hands the unsaved task to the handler's request
(:meth:`HandlerRequest.defer <a2a.handlers.HandlerRequest.defer>`); the request's first
update, or its ``create()``, saves it through :class:`DeferredCreation` (``working``, with
the act applied: one event, the task's first, rather than a creation in ``working`` and
the act after it), then tells the runner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from a2a.core import lifecycle
from a2a.protocol.model import Task, set_status
from stores.base import TaskStore


class DeferredCreation:
    """A task not saved yet: :meth:`create` saves it once, then calls ``on_create`` with it."""

    def __init__(self, task: Task, on_create: Callable[[Task], None]) -> None:
        self._pending: Task | None = task
        self._on_create = on_create
        self._lock = threading.Lock()

    @property
    def pending(self) -> bool:
        """Not saved yet."""
        return self._pending is not None

    def create(self, store: TaskStore, change: lifecycle.Change | None = None) -> Task | None:
        """Save the task now (``working``, leased to this process, with ``change``
        applied: the handler's first act); the task saved, or None when it existed
        already (or ``change`` declined: the task is saved without it)."""
        with self._lock:
            task = self._pending
            if task is None:
                return None
            first = set_status(task, "working")
            changed = change(first) if change is not None else first
            saved = lifecycle.create_sync(store, changed if changed is not None else first, runs=1)
            self._pending = None
        self._on_create(dict(saved))
        return saved if changed is not None else None
