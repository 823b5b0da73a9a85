"""The event bus: who hears a Task's saved transitions, in this process and in others.

Every save through :mod:`a2a.core.lifecycle` publishes the task here. The bus then

1. calls this process's **listeners** (push delivery, logs, metrics): only the
   process that made the transition calls them, so a webhook hears each version once
   however many processes there are;
2. hands the event to this process's **subscribers** of the task (streams, blocking
   ``SendMessage``), each on its own event loop;
3. hands it to the **event backend** (``A2A_EVENTS``, :mod:`a2a.core.eventbackends`), which
   carries it to the subscribers of every other process sharing the backend (Redis
   pub/sub or PostgreSQL ``LISTEN/NOTIFY``; the default, ``"memory"``, carries nothing).

Events may reach a subscriber late, twice or not at all (a dropped connection, a
NOTIFY too big to carry the task): subscribers order them by the task's ``_version``
and, when one is missing, read the task from the store (a ``"sync"`` event, see
:meth:`Subscription.get`). The store stays the single source of truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from stores.base import Task, task_version

logger = logging.getLogger(__name__)

#: Seconds a new subscription waits for the process's listener to hear the channel.
LISTEN_TIMEOUT = 5.0
#: This process, as event backends tell it apart from the others (its own events come back).
ORIGIN = uuid.uuid4().hex


def origin() -> str:
    """This process's origin (a forked child gets one of its own)."""
    return ORIGIN


def _new_origin() -> None:
    global ORIGIN
    ORIGIN = uuid.uuid4().hex


os.register_at_fork(after_in_child=_new_origin)


@dataclass(frozen=True)
class TaskEvent:
    """One saved version of a task and what changed in it.

    ``kind`` is "task" (just created), "status" (a status change), "artifact" (an
    artifact, or a chunk of one, was added: ``artifact``, ``append``, ``last_chunk``)
    or "sync" (the task as stored, read because events may have been missed: what
    changed since the subscriber's last version is not known).
    """

    task: Task
    kind: str = "status"
    artifact: dict[str, Any] | None = None
    append: bool = False
    last_chunk: bool = False
    #: Set when ``task`` came without its artifacts (too big for the broker): their
    #: shape, see :func:`artifacts_shape`.
    partial: list[Any] | None = None

    @property
    def version(self) -> int:
        return task_version(self.task)


def artifacts_shape(artifacts: list[dict[str, Any]] | None) -> list[Any]:
    """What an event too big to carry a task's artifacts says of them: each one's id
    and number of parts (enough to tell whether a subscriber rebuilt them right)."""
    return [[a.get("artifactId"), len(a.get("parts") or ())] for a in artifacts or ()]


def with_chunk(artifacts: list[dict[str, Any]] | None, chunk: dict[str, Any], append: bool) -> list[dict[str, Any]]:
    """``artifacts`` after ``chunk`` was added, as ``HandlerRequest.artifact`` adds it
    (a new artifact, parts appended to an existing one, or an existing one replaced)."""
    result = [dict(a) for a in artifacts or ()]
    existing = next((a for a in result if a.get("artifactId") == chunk.get("artifactId")), None)
    if existing is None:
        result.append(dict(chunk))
    elif append:
        existing["parts"] = [*existing.get("parts", ()), *chunk.get("parts", ())]
    else:
        existing.clear()
        existing.update(chunk)
    return result


class _Resync:
    """Queued for a subscriber that may have missed events: read the task from the store."""


RESYNC = _Resync()


class Subscription:
    """The events of one task, from the moment of subscribing.

    ``remote``: events come from other processes too, so one may be lost (the
    subscriber then checks the store now and then, see ``a2a.service.operations``).
    """

    def __init__(self, task_id: str, *, remote: bool = False, listening: threading.Event | None = None) -> None:
        self.task_id = task_id
        self.remote = remote
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[TaskEvent | _Resync] = asyncio.Queue()
        self._listening = listening

    async def ready(self, timeout: float = LISTEN_TIMEOUT) -> bool:
        """Wait until this process hears the other processes' events (at once, unless
        its listener is still connecting); False when it does not within ``timeout``
        seconds (the broker is down: the listener resyncs the subscription once it
        hears the channel again, so nothing is lost, only late)."""
        if self._listening is None or self._listening.is_set():
            return True
        return await asyncio.to_thread(self._listening.wait, timeout)

    async def get(self) -> TaskEvent:
        """The next event; where events may have been missed, a "sync" event with the
        task as stored (TaskNotFoundError when it is gone)."""
        item = await self.queue.get()
        if isinstance(item, TaskEvent):
            return item
        return await self.read()

    async def read(self) -> TaskEvent:
        """The task as stored now, as a "sync" event."""
        from a2a.protocol.errors import TaskNotFoundError
        from stores.backends import get_task_store

        task = await get_task_store().aget(self.task_id)
        if task is None:
            raise TaskNotFoundError(self.task_id)
        return TaskEvent(task, kind="sync")

    def _deliver(self, item: TaskEvent | _Resync) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody left to tell
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)


Listener = Callable[[Task], None]


class EventBus:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(task)`` for every task version this process publishes (any
        task), on the publisher's thread: it must return quickly and never raise (push
        delivery, metrics and logs hand their work off). Versions published by other
        processes are not heard here: their own listeners hear them."""
        with self._lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    @contextmanager
    def subscribe(self, task_id: str) -> Iterator[Subscription]:
        """Hear every task version published while the ``with`` block is open, by this
        process or (with a shared event backend) any other: from other processes once
        ``await subscription.ready()`` returns (read the snapshot after it)."""
        from a2a.core.eventbackends import get_event_backend

        backend = get_event_backend()
        sub = Subscription(task_id, remote=backend.remote, listening=getattr(backend, "listening", None))
        with self._lock:
            self._subscribers.setdefault(task_id, set()).add(sub)
        try:
            if backend.remote:
                backend.listen()  # the process's one listener; it resyncs us once it hears the channel
            yield sub
        finally:
            with self._lock:
                subs = self._subscribers.get(task_id)
                if subs is not None:
                    subs.discard(sub)
                    if not subs:
                        del self._subscribers[task_id]

    def publish(self, task: Task, event: TaskEvent | None = None) -> None:
        """Tell every listener (the task), every subscriber of ``task["id"]`` and the
        event backend (the event; a status update unless given) about this saved
        version. Never raises."""
        for listener in self._listeners:
            try:
                listener(task)
            except Exception:
                logger.exception("event listener %r failed", listener)
        event = event or TaskEvent(task)
        self.fanout(event)
        from a2a.core.eventbackends import get_event_backend

        try:
            backend = get_event_backend()
            if backend.remote:
                backend.publish(event)
        except Exception:  # the save is done; subscribers elsewhere recover from the store
            logger.exception("could not publish task %s to the event backend", task.get("id"))

    def fanout(self, event: TaskEvent) -> None:
        """Hand ``event`` to this process's subscribers of its task (any thread)."""
        subs = self._subscribers.get(event.task["id"])
        if not subs:
            return
        with self._lock:
            subs = set(subs)
        for sub in subs:
            sub._deliver(event)

    def resync(self, task_id: str | None = None) -> None:
        """Tell the subscribers of ``task_id`` (of every task when None) that they may
        have missed events: each reads its task from the store."""
        with self._lock:
            if task_id is None:
                subs = [sub for group in self._subscribers.values() for sub in group]
            else:
                subs = list(self._subscribers.get(task_id, ()))
        for sub in subs:
            sub._deliver(RESYNC)

    def has_subscribers(self, task_id: str) -> bool:
        return task_id in self._subscribers

    def subscriber_count(self, task_id: str) -> int:
        return len(self._subscribers.get(task_id, ()))


bus = EventBus()
