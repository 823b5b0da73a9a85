"""The in-process event bus: who hears a Task's saved transitions.

Every save through :mod:`a2a.lifecycle` publishes the task here; a blocking
``SendMessage`` (and, later, streams and push delivery) subscribes by task id. The
publisher may be on any thread or event loop: each subscriber's queue is fed on its
own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from stores.base import Task

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskEvent:
    """One saved version of a task and what changed in it.

    ``kind`` is "task" (just created), "status" (a status change) or "artifact" (an
    artifact, or a chunk of one, was added: ``artifact``, ``append``, ``last_chunk``).
    """

    task: Task
    kind: str = "status"
    artifact: dict[str, Any] | None = None
    append: bool = False
    last_chunk: bool = False

    @property
    def version(self) -> int:
        return int(self.task.get("_version", 0))


class Subscription:
    """The events of one task, in order, from the moment of subscribing."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[TaskEvent] = asyncio.Queue()

    async def get(self) -> TaskEvent:
        return await self.queue.get()

    def _deliver(self, event: TaskEvent) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody left to tell
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)


Listener = Callable[[Task], None]


class EventBus:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(task)`` for every published task version (any task), on the
        publisher's thread: it must return quickly and never raise (push delivery,
        metrics and logs hand their work off)."""
        with self._lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    @contextmanager
    def subscribe(self, task_id: str) -> Iterator[Subscription]:
        """Hear every task version published while the ``with`` block is open."""
        sub = Subscription(task_id)
        with self._lock:
            self._subscribers.setdefault(task_id, set()).add(sub)
        try:
            yield sub
        finally:
            with self._lock:
                subs = self._subscribers.get(task_id)
                if subs is not None:
                    subs.discard(sub)
                    if not subs:
                        del self._subscribers[task_id]

    def publish(self, task: Task, event: TaskEvent | None = None) -> None:
        """Tell every listener (the task), and every subscriber of ``task["id"]`` (the
        event; a status update unless given), about this saved version."""
        for listener in self._listeners:
            try:
                listener(task)
            except Exception:
                logger.exception("event listener %r failed", listener)
        subs = self._subscribers.get(task["id"])
        if not subs:
            return
        with self._lock:
            snapshot = list(subs)
        event = event or TaskEvent(task)
        for sub in snapshot:
            sub._deliver(event)

    def subscriber_count(self, task_id: str) -> int:
        return len(self._subscribers.get(task_id, ()))


bus = EventBus()
