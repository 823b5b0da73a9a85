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
import inspect
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from a2a.conf import a2a_settings
from a2a.protocol.errors import TaskNotFoundError
from stores.backends import BackendHandler, get_task_store
from stores.base import Task, TaskStore
from stores.fields import task_version

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
    #: The numbered stream events this save made (:mod:`a2a.core.replay`); empty for
    #: an event that does not say (a "sync" event, another version's process).
    entries: tuple[dict[str, Any], ...] = ()

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

    def __init__(
        self,
        task_id: str,
        *,
        remote: bool = False,
        listening: threading.Event | None = None,
        store: TaskStore | None = None,
    ) -> None:
        self.task_id = task_id
        self.store = store  # where the task is read again (None: the project's store)
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
        store = self.store if self.store is not None else get_task_store()  # an empty store is falsy (len)
        task = await store.aget(self.task_id)
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
    def subscribe(self, task_id: str, store: TaskStore | None = None) -> Iterator[Subscription]:
        """Hear every task version published while the ``with`` block is open, by this
        process or (with a shared event backend) any other: from other processes once
        ``await subscription.ready()`` returns (read the snapshot after it). ``store``:
        the task's (its agent's), where a subscriber that may have missed events reads it."""
        backend = get_event_backend()
        listening = getattr(backend, "listening", None)
        sub = Subscription(task_id, remote=backend.remote, listening=listening, store=store)
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


# --- Event backends: how events reach other processes (A2A_EVENTS) ----------------------


class EventBackend:
    """Carries published events to other processes (here: nowhere).

    ``remote``: whether events cross processes; False for the in-process default,
    where the bus alone delivers them.
    """

    remote: ClassVar[bool] = False

    def publish(self, event: TaskEvent) -> None:
        """Send ``event`` to the other processes. Any thread; returns at once; never raises."""

    def listen(self) -> None:
        """Make sure this process hears the other processes' events (any thread; idempotent)."""

    def close(self, grace: float = 5.0) -> None:
        """Send what is queued (``grace`` seconds at most), then close every connection."""


def _channel(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value.encode()) > 63 or "\x00" in value:
        raise ImproperlyConfigured(
            f"A2A_EVENTS_CHANNEL must be a non-empty string of at most 63 bytes (a PostgreSQL "
            f"identifier's limit), not {value!r}."
        )
    return value


_PACKAGES = {
    "a2a.core.eventbackends.redis.RedisEventBackend": ("redis", 'pip install "redis>=5"'),
    "a2a.core.eventbackends.postgres.PostgresEventBackend": ("psycopg", 'pip install "psycopg[binary]>=3.2"'),
}


class EventBackends(BackendHandler[EventBackend]):
    """``A2A_EVENTS`` (on channel ``A2A_EVENTS_CHANNEL``)::

    "memory"                         in-process only (the default)
    "redis://host:6379/0"            Redis pub/sub ("rediss://" and "unix://" too)
    "postgres" / "postgres:<alias>"  PostgreSQL LISTEN/NOTIFY on database "default" / <alias>
    "postgresql://user@host/db"      PostgreSQL LISTEN/NOTIFY on that database
    "pkg.module.Class"               an EventBackend subclass (given ``channel`` if it takes one)
    {"BACKEND": ..., "OPTIONS": {...}}
    an EventBackend instance         used as it is
    """

    setting = "A2A_EVENTS"
    also_reset_on = ("A2A_EVENTS_CHANNEL",)
    base = EventBackend
    default = "memory"
    error_id = "a2a.E060"
    accepted = (
        'A2A_EVENTS must be one of: "memory"; a "redis://", "rediss://" or "unix://" URL; "postgres" or '
        '"postgres:<database alias>"; a "postgresql://" URL; a dotted path to an EventBackend class; '
        "or an EventBackend instance"
    )

    def configured(self) -> Any:
        return a2a_settings.EVENTS

    def default_options(self) -> dict[str, Any]:
        return {"channel": _channel(a2a_settings.EVENTS_CHANNEL)}

    def expand(self, value: str) -> tuple[str, dict[str, Any]]:
        if value in ("", "memory"):
            return "a2a.core.eventbackends.memory.MemoryEventBackend", {}
        if value.startswith(("redis://", "rediss://", "unix://")):
            return "a2a.core.eventbackends.redis.RedisEventBackend", {"url": value}
        if value.startswith(("postgres://", "postgresql://")):
            return "a2a.core.eventbackends.postgres.PostgresEventBackend", {"conninfo": value}
        if value == "postgres" or value.startswith("postgres:"):
            alias = value.partition(":")[2] or "default"
            database = settings.DATABASES.get(alias)
            if database is None:
                raise ImproperlyConfigured(
                    f"A2A_EVENTS {value!r} names database {alias!r}, which is not in DATABASES "
                    f"({', '.join(settings.DATABASES) or 'none'})."
                )
            if "postgresql" not in str(database.get("ENGINE", "")):
                raise ImproperlyConfigured(
                    f"A2A_EVENTS {value!r} needs a PostgreSQL database, but {alias!r} is {database.get('ENGINE')!r}."
                )
            return "a2a.core.eventbackends.postgres.PostgresEventBackend", {"alias": alias}
        if "/" in value:
            raise self.error(f"Unknown A2A_EVENTS {value!r}.")
        return super().expand(value)

    def instantiate(self, path: str, options: dict[str, Any]) -> EventBackend:
        try:
            cls = import_string(path)
            if isinstance(cls, type) and "channel" not in inspect.signature(cls).parameters:
                options = {k: v for k, v in options.items() if k != "channel"}
            return super().instantiate(path, options)
        except ImportError as exc:  # a backend's optional package (it imports it when built)
            if path not in _PACKAGES:
                raise ImproperlyConfigured(f"A2A_EVENTS backend {path!r} cannot be imported: {exc}") from exc
            package, install = _PACKAGES[path]
            raise ImproperlyConfigured(
                f"A2A_EVENTS needs the {package} package, which is missing ({exc}): {install}"
            ) from exc

    def closed(self, backend: EventBackend) -> None:
        if backend.remote:
            backend.close(1.0)


#: The handler of ``A2A_EVENTS``.
event_backends = EventBackends()


def resolve_event_backend(spec: Any, channel: Any = "a2a_events") -> EventBackend:
    """Build the backend ``spec`` (an ``A2A_EVENTS`` value) names, on ``channel``.

    Raises ImproperlyConfigured, with the accepted forms, for anything else.
    """
    if isinstance(spec, EventBackend):
        return spec
    return event_backends.build(spec, {"channel": _channel(channel)})


def get_event_backend() -> EventBackend:
    """The project's event backend, resolved from ``A2A_EVENTS`` on first use."""
    return event_backends.get()


def close_event_backend(grace: float = 5.0) -> None:
    """Send what is queued and close the backend's connections (a later event opens them again)."""
    if event_backends.resolved:
        event_backends.get().close(grace)


def flush_events(timeout: float = 5.0) -> bool:
    """Block until every event this process published was sent to the broker (False
    after ``timeout`` seconds). A process that ends without running ``atexit``
    handlers (``os._exit``, as an RQ work-horse does) calls it first."""
    if not event_backends.resolved:
        return True
    flush = getattr(event_backends.get(), "flush", None)
    return flush(timeout) if callable(flush) else True
