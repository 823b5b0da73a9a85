"""The interface of an event backend, and the machinery the cross-process ones share.

A backend carries the events one process publishes (:meth:`EventBackend.publish`) to
the :data:`a2a.events.bus` of every other process listening on the same channel
(:meth:`EventBackend.listen`). The in-process part (listeners, subscribers) is the
bus's; a backend only moves bytes.

:class:`BrokerBackend` is the base of the Redis and PostgreSQL backends. Per process
it owns one daemon thread running an event loop, with

- one **publishing** connection: events queue up in publish order (callers never
  wait for the network) and are sent one after the other, resent after a
  reconnection; so the events of one process arrive in the order it saved them;
- one **listening** connection, opened by the first subscriber and shared by all:
  every message on the channel is decoded once and handed to the bus, which fans it
  out to the task's subscribers in this process. Each time the listener (re)starts
  hearing the channel it tells every subscriber to read its task from the store
  (:meth:`a2a.events.EventBus.resync`): whatever was published while it was deaf is
  there.

A subclass implements :meth:`BrokerBackend._connect_publisher`,
:meth:`BrokerBackend._send` and :meth:`BrokerBackend._messages`.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import logging
import random
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import orjson

from ..events import ORIGIN, TaskEvent, bus

logger = logging.getLogger("a2a.events")

#: Events waiting to be sent beyond which the oldest is dropped (the broker is down).
MAX_OUTBOX = 10_000
#: An event not sent after this many seconds (the broker is down) is dropped.
SEND_DEADLINE = 60.0
#: Seconds between reconnection attempts: the first, and the most (doubled in between).
RETRY_FIRST, RETRY_MAX = 0.1, 5.0


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

    def check(self) -> None:
        """Raise when the broker cannot be reached now (``/healthz``)."""


def encode(event: TaskEvent, origin: str = ORIGIN) -> bytes:
    """The message for ``event``: JSON, tagged with the publishing process's origin."""
    body: dict[str, Any] = {"o": origin, "k": event.kind, "t": event.task}
    if event.artifact is not None:
        body.update(a=event.artifact, p=event.append, l=event.last_chunk)
    return orjson.dumps(body)


def encode_reference(event: TaskEvent, origin: str = ORIGIN) -> bytes:
    """A message naming ``event``'s task and version only (the event is too big to
    carry): subscribers read the task from the store."""
    return orjson.dumps({"o": origin, "i": event.task["id"], "v": event.version})


def receive(payload: bytes | str, origin: str = ORIGIN) -> None:
    """Hand a message from the channel to this process's subscribers, unless this
    process (``origin``) sent it. Never raises."""
    try:
        body = orjson.loads(payload)
        if body.get("o") == origin:
            return  # this process's own event: the bus delivered it when it was published
        task = body.get("t")
        if task is None:
            task_id = body["i"]
            if bus.has_subscribers(task_id):
                bus.resync(task_id)
            return
        if bus.has_subscribers(task["id"]):
            bus.fanout(
                TaskEvent(task, body.get("k", "status"), body.get("a"), body.get("p", False), body.get("l", False))
            )
    except Exception:
        logger.exception("dropped a malformed event message (%d bytes)", len(payload))


def _backoff(delay: float) -> float:
    return min(RETRY_MAX, delay * 2) * random.uniform(0.8, 1.2)


class BrokerBackend(EventBackend):
    """A backend on a message broker, with one publishing and one listening connection
    per process (see the module docstring)."""

    remote = True
    #: Largest message the broker carries (bytes); a bigger event travels as a reference.
    max_payload: ClassVar[int | None] = None

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._outbox: collections.deque[tuple[float, bytes]] = collections.deque()
        self._wakeup: asyncio.Event | None = None
        self._sender: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        #: The listener hears the channel now (set after each successful subscription).
        self.listening = threading.Event()
        self.reconnections = 0
        #: Tells this process's messages from the others' (tests give two backends in
        #: one process different origins).
        self.origin = ORIGIN

    def __repr__(self) -> str:
        return f"<{type(self).__name__} channel={self.channel!r}>"

    # Any thread -------------------------------------------------------------------------

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name="a2a-events", daemon=True)
                self._thread.start()
                self._loop = loop
                asyncio.run_coroutine_threadsafe(self._begin(), loop).result(10)
                atexit.register(self.close)
            return self._loop

    async def _begin(self) -> None:
        self._wakeup = asyncio.Event()
        self._sender = asyncio.ensure_future(self._send_forever())

    def publish(self, event: TaskEvent) -> None:
        payload = encode(event, self.origin)  # here: the caller may change the task afterwards
        if self.max_payload is not None and len(payload) > self.max_payload:
            payload = encode_reference(event, self.origin)
        loop = self._start()
        with contextlib.suppress(RuntimeError):  # closed meanwhile
            loop.call_soon_threadsafe(self._enqueue, payload)

    def listen(self) -> None:
        loop = self._start()
        if self._listener is None:
            with self._lock:
                if self._listener is None:
                    self._listener = asyncio.run_coroutine_threadsafe(self._spawn_listener(), loop).result(10)

    async def _spawn_listener(self) -> asyncio.Task[None]:
        return asyncio.ensure_future(self._listen_forever())

    def close(self, grace: float = 5.0) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
            thread = self._thread
        if loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(grace), loop).result(grace + 10)
        except Exception:
            logger.exception("closing the event backend %r failed", self)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(10)
            if not thread.is_alive():
                loop.close()
        self._listener = None
        self.listening.clear()
        atexit.unregister(self.close)

    # The backend's loop ---------------------------------------------------------------------

    def _enqueue(self, payload: bytes) -> None:
        if len(self._outbox) >= MAX_OUTBOX:
            self._outbox.popleft()
            logger.warning("the event backend %r is backing up; dropped the oldest unsent event", self)
        self._outbox.append((time.monotonic(), payload))
        assert self._wakeup is not None
        self._wakeup.set()

    async def _send_forever(self) -> None:
        assert self._wakeup is not None
        delay = RETRY_FIRST
        connected = False
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._outbox:
                queued, payload = self._outbox[0]
                try:
                    if not connected:
                        await self._connect_publisher()
                        connected = True
                    await self._send(payload)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    connected = False
                    with contextlib.suppress(Exception):
                        await self._close_publisher()
                    if time.monotonic() - queued > SEND_DEADLINE:
                        self._outbox.popleft()
                        logger.error("dropped an event not sent for %.0fs: %s", SEND_DEADLINE, exc)
                    else:
                        logger.warning("could not publish an event (%s); retrying in %.2fs", exc, delay)
                        await asyncio.sleep(delay)
                        delay = _backoff(delay)
                else:
                    self._outbox.popleft()
                    delay = RETRY_FIRST

    async def _listen_forever(self) -> None:
        delay = RETRY_FIRST
        while True:
            try:
                async for payload in self._messages():
                    if payload is None:  # (re)subscribed: what was published meanwhile is in the store
                        self.listening.set()
                        bus.resync()
                        delay = RETRY_FIRST
                    else:
                        receive(payload, self.origin)
                raise ConnectionError("the listening connection ended")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.listening.clear()
                self.reconnections += 1
                logger.warning("event listener on %r lost its connection (%s); reconnecting in %.2fs", self, exc, delay)
                await asyncio.sleep(delay)
                delay = _backoff(delay)

    async def _shutdown(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        while self._outbox and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if self._outbox:
            logger.warning("closing with %d event(s) unsent", len(self._outbox))
        for job in (self._listener, self._sender):
            if job is not None:
                job.cancel()
                with contextlib.suppress(BaseException):
                    await job
        with contextlib.suppress(Exception):
            await self._close_publisher()

    # For subclasses -----------------------------------------------------------------------

    async def _connect_publisher(self) -> None:
        """Open the publishing connection."""
        raise NotImplementedError

    async def _close_publisher(self) -> None:
        """Close the publishing connection (if open)."""
        raise NotImplementedError

    async def _send(self, payload: bytes) -> None:
        """Publish one message on the channel."""
        raise NotImplementedError

    def _messages(self) -> AsyncIterator[bytes | str | None]:
        """Connect, subscribe, and yield None once the channel is heard (and again after
        each reconnection the client makes by itself), then each message; raise (or
        end) when the connection is lost. Closes its connection when closed."""
        raise NotImplementedError
