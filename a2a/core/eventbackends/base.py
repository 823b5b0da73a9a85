"""The machinery the cross-process event backends share.

A backend carries the events one process publishes (:meth:`EventBackend.publish`) to
the :data:`a2a.core.events.bus` of every other process listening on the same channel
(:meth:`EventBackend.listen`). The in-process part (listeners, subscribers) is the
bus's; a backend only moves bytes.

:class:`BrokerBackend` is the base of the Redis and PostgreSQL backends. Per process
it owns one daemon thread running an event loop, with

- one **publishing** connection: events queue up in publish order (callers never
  wait for the network) and are sent in that order, those that queued up meanwhile
  in one round trip, resent after a reconnection; so the events of one process
  arrive in the order it saved them;
- one **listening** connection, opened by the first subscriber and shared by all:
  every message on the channel is decoded once and handed to the bus, which fans it
  out to the task's subscribers in this process. Each time the listener (re)starts
  hearing the channel it tells every subscriber to read its task from the store
  (:meth:`a2a.core.events.EventBus.resync`): whatever was published while it was deaf is
  there.

A subclass implements :meth:`BrokerBackend._connect_publisher`,
:meth:`BrokerBackend._send` and :meth:`BrokerBackend._messages`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import orjson

from a2a.core import events, retry
from a2a.core.events import EventBackend, TaskEvent, artifacts_shape, bus
from a2a.core.loop import LoopThread
from stores.fields import EVENT_LOG

logger = logging.getLogger("a2a.core.events")

#: Events waiting to be sent beyond which the oldest is dropped (the broker is down).
MAX_OUTBOX = 10_000
#: Most events sent in one round trip.
MAX_BATCH = 100
#: An event not sent after this many seconds (the broker is down) is dropped.
SEND_DEADLINE = 60.0
#: Seconds between reconnection attempts: the first, and the most (doubled in between).
RETRY_FIRST, RETRY_MAX = 0.1, 5.0


#: What an event's message leaves out of its task.
_NOT_CARRIED = frozenset({"history", EVENT_LOG})


def encode(event: TaskEvent, origin: str, limit: int | None = None) -> bytes:
    """The message for ``event``, tagged with the publishing process's origin.

    It carries the task without its history (no stream update shows it) and without
    its event log, but with the stream events this save made. Beyond
    ``limit`` bytes, it carries the task without its artifacts either, and their shape
    (the artifact chunk of an artifact event stays: subscribers rebuild the artifacts
    from the ones they have); beyond that, only the task's id and version (subscribers
    read the task from the store).
    """
    task = {k: v for k, v in event.task.items() if k not in _NOT_CARRIED}
    body: dict[str, Any] = {"o": origin, "k": event.kind, "t": task}
    if event.artifact is not None:
        body.update(a=event.artifact, p=event.append, l=event.last_chunk)
    if event.entries:  # this save's stream events (the task's log stays behind: subscribers have the rest)
        body["e"] = event.entries
    payload = orjson.dumps(body)
    if limit is None or len(payload) <= limit:
        return payload
    body["f"] = artifacts_shape(task.pop("artifacts", None))
    payload = orjson.dumps(body)
    if len(payload) <= limit:
        return payload
    return orjson.dumps({"o": origin, "i": event.task["id"], "v": event.version})


def receive(payload: bytes | str, origin: str) -> None:
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
            kind, artifact = body.get("k", "status"), body.get("a")
            made = tuple(body.get("e") or ())
            bus.fanout(TaskEvent(task, kind, artifact, body.get("p", False), body.get("l", False), body.get("f"), made))
    except Exception:
        logger.exception("dropped a malformed event message (%d bytes)", len(payload))


def _backoff(failures: int) -> float:
    return retry.backoff(failures, base=RETRY_FIRST, cap=RETRY_MAX)


class BrokerBackend(EventBackend):
    """A backend on a message broker, with one publishing and one listening connection
    per process (see the module docstring)."""

    remote = True
    #: Largest message the broker carries (bytes); a bigger event travels as a reference.
    max_payload: ClassVar[int | None] = None

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self._loop_thread = LoopThread("a2a-events", on_start=self._started, on_fork=self._forked, at_exit=self.close)
        #: Tells this process's messages from the others' (tests give two backends in
        #: one process different origins; by default, this process's).
        self._origin: str | None = None
        self._reset()

    def _reset(self) -> None:
        """The per-process state: what is queued and who listens."""
        self._lock = threading.Lock()
        # Published, not sent yet: the outbox (appended by any thread), then the batch
        # being sent (the loop's); each item (time published, message).
        self._outbox: collections.deque[tuple[float, bytes]] = collections.deque()
        self._batch: list[tuple[float, bytes]] = []
        self._wake_pending = False
        self._wakeup: asyncio.Event | None = None
        self._sender: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        #: The listener hears the channel now (set after each successful subscription).
        self.listening = threading.Event()
        self.reconnections = 0
        #: The publishing connection (the subclass's client), on the backend's loop.
        self._publisher: Any = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} channel={self.channel!r}>"

    # Any thread -------------------------------------------------------------------------

    @property
    def origin(self) -> str:
        return self._origin or events.origin()

    @origin.setter
    def origin(self, value: str) -> None:
        self._origin = value

    def _started(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.run_coroutine_threadsafe(self._begin(), loop).result(10)

    def _forked(self) -> None:
        """In a forked child (e.g. an RQ work-horse), the parent's thread is not there:
        start afresh, dropping what was the parent's to send or hear."""
        self._reset()

    def flush(self, timeout: float = 5.0) -> bool:
        """Block until every event published here was sent (False after ``timeout``
        seconds): for a process about to end without running ``atexit`` handlers."""
        deadline = time.monotonic() + timeout
        while self.unsent() and self._loop_thread.loop is not None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        return True

    async def _begin(self) -> None:
        self._wakeup = asyncio.Event()
        self._wake_pending = False  # (a wake-up sent to a loop closed meanwhile never came)
        if self._outbox or self._batch:
            self._wakeup.set()  # left unsent by a closed loop: this one sends them
        self._sender = asyncio.ensure_future(self._send_forever())

    def publish(self, event: TaskEvent) -> None:
        payload = encode(event, self.origin, self.max_payload)  # now: the caller may change the task later
        loop = self._loop_thread.start()
        self._outbox.append((time.monotonic(), payload))  # (a deque: safe from any thread)
        if not self._wake_pending:  # one wake-up for a burst, not one per event
            self._wake_pending = True
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(self._wake)

    def listen(self) -> None:
        loop = self._loop_thread.start()
        if self._listener is None:
            with self._lock:
                if self._listener is None:
                    self._listener = asyncio.run_coroutine_threadsafe(self._spawn_listener(), loop).result(10)

    async def _spawn_listener(self) -> asyncio.Task[None]:
        return asyncio.ensure_future(self._listen_forever())

    def close(self, grace: float = 5.0) -> None:
        if self._loop_thread.stop(lambda: self._shutdown(grace), timeout=grace + 10):
            self._listener = None
            self.listening.clear()

    # The backend's loop ---------------------------------------------------------------------

    def _wake(self) -> None:
        self._wake_pending = False  # before the sender drains: a later publish wakes it again
        assert self._wakeup is not None
        self._wakeup.set()

    def unsent(self) -> int:
        """Events published here and not sent yet."""
        return len(self._outbox) + len(self._batch)

    async def _send_forever(self) -> None:
        assert self._wakeup is not None
        failures = 0
        connected = False
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._outbox or self._batch:
                if not self._batch:  # whatever queued up meanwhile goes in one round trip, in order
                    dropped = 0
                    while len(self._outbox) > MAX_OUTBOX:
                        self._outbox.popleft()
                        dropped += 1
                    if dropped:
                        logger.warning("the event backend %r is backing up; dropped %d unsent event(s)", self, dropped)
                    while self._outbox and len(self._batch) < MAX_BATCH:
                        self._batch.append(self._outbox.popleft())
                try:
                    if not connected:
                        await self._connect_publisher()
                        connected = True
                    await self._send([payload for _, payload in self._batch])
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    # Resent whole: a subscriber drops a version it already has.
                    connected = False
                    with contextlib.suppress(Exception):
                        await self._close_publisher()
                    expired = [item for item in self._batch if time.monotonic() - item[0] > SEND_DEADLINE]
                    if expired:
                        del self._batch[: len(expired)]
                        logger.error("dropped %d event(s) not sent for %.0fs: %s", len(expired), SEND_DEADLINE, exc)
                    else:
                        failures += 1
                        delay = _backoff(failures)
                        logger.warning("could not publish events (%s); retrying in %.2fs", exc, delay)
                        await asyncio.sleep(delay)
                else:
                    self._batch.clear()
                    failures = 0

    async def _listen_forever(self) -> None:
        failures = 0
        while True:
            try:
                async for payload in self._messages():
                    if payload is None:  # (re)subscribed: what was published meanwhile is in the store
                        self.listening.set()
                        bus.resync()
                        failures = 0
                    else:
                        receive(payload, self.origin)
                raise ConnectionError("the listening connection ended")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.listening.clear()
                self.reconnections += 1
                failures += 1
                delay = _backoff(failures)
                logger.warning("event listener on %r lost its connection (%s); reconnecting in %.2fs", self, exc, delay)
                await asyncio.sleep(delay)

    async def _shutdown(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        while self.unsent() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if self.unsent():
            logger.warning("closing with %d event(s) unsent", self.unsent())
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

    async def _send(self, payloads: list[bytes]) -> None:
        """Publish messages on the channel, in this order, in one round trip."""
        raise NotImplementedError

    def _messages(self) -> AsyncIterator[bytes | str | None]:
        """Connect, subscribe, and yield None once the channel is heard (and again after
        each reconnection the client makes by itself), then each message; raise (or
        end) when the connection is lost. Closes its connection when closed."""
        raise NotImplementedError
