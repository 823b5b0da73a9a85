"""The client's steps, written once and without I/O: fetching the card, connecting, the
retry loop, the v1.0 fallback, the long-poll and the event reader.

Each step is a *plan*: a generator that yields the I/O it needs (an :class:`Effect`:
send this request, sleep, read a line...) and is sent back the result, or has the
transport error thrown in. :class:`~a2a.client.Client` runs the plans with blocking
calls, :class:`~a2a.client.AsyncClient` with ``await``: their own code is only that
(httpx's shared base client, taken one step further); each operation's signature,
docstring and plan are written once, in :mod:`a2a.client.operations`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

import httpx

from a2a.client import card as cards
from a2a.client.base import BaseClient, SSEDecoder, card_call, user_message
from a2a.client.bindings import Binding, Call
from a2a.client.errors import CardNotFoundError, RemoteAgentError
from a2a.client.generation import Order, generation_of
from a2a.core.retry import Discard, Sleep, retrying
from a2a.protocol.model import Message, Part, StreamItem, Task

T = TypeVar("T")

#: What the clients send: a text, parts, or a whole message.
Outgoing = str | list[Part] | Message


class SendOptions(TypedDict, total=False):
    """SendMessage's and SendStreamingMessage's keywords beside the message: the
    conversation (``context_id``) or task (``task_id``) it goes on with, and the request's
    configuration (``if_generation_match``: a follow-up taken only while the task is at
    that generation, on a 1.1 agent)."""

    context_id: str | None
    task_id: str | None
    history_length: int | None
    accepted_output_modes: list[str] | None
    push_config: dict[str, Any] | None
    metadata: dict[str, Any] | None
    if_generation_match: int | None


@dataclass(frozen=True)
class Send:
    """Send ``request`` (the response's body left unread when ``stream``)."""

    request: httpx.Request
    stream: bool
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Read:
    """Read the body of ``response`` (sent with ``stream``)."""

    response: httpx.Response


@dataclass(frozen=True)
class NextLine:
    """The next line of ``response``'s body; None at its end."""

    response: httpx.Response


@dataclass(frozen=True)
class Locked:
    """Run ``plan`` holding the client's lock (one card fetch for concurrent first calls)."""

    plan: Plan[Any]


@dataclass(frozen=True)
class Emit:
    """Hand ``item`` to the caller iterating a stream."""

    item: StreamItem


Effect = Send | Sleep | Discard | Read | NextLine | Locked | Emit
#: A step of the client: yields effects, is sent their results, returns ``T``.
Plan = Generator[Effect, Any, T]


class Steps(Generic[T]):
    """A plan being run, for the clients' run loops: iterating gives its effects, each
    sent the ``value`` the loop set for the last one, or the error that I/O raised
    within :meth:`outcome`; then ``result`` is what the plan returned. At the end of a
    ``with`` (``async with`` on the async client) the plan is closed, and so are the
    streamed responses the loop kept in ``opened`` (each with its lines' iterator)."""

    def __init__(self, plan: Plan[T]) -> None:
        self.plan = plan
        self.value: Any = None
        self.error: Exception | None = None
        self.result: T
        self.opened: dict[httpx.Response, Any] = {}

    def __iter__(self) -> Steps[T]:
        return self

    def __next__(self) -> Effect:
        value, error, self.value, self.error = self.value, self.error, None, None
        try:
            return self.plan.throw(error) if error is not None else self.plan.send(value)
        except StopIteration as stop:
            self.result = stop.value
            raise StopIteration from None

    @contextlib.contextmanager
    def outcome(self) -> Iterator[None]:
        """Around an effect's I/O: its error is handed to the plan, whose to judge it is."""
        try:
            yield
        except Exception as exc:
            self.error = exc

    def __enter__(self) -> Steps[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.plan.close()
        for response in self.opened:
            response.close()

    async def __aenter__(self) -> Steps[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.plan.close()
        for response in self.opened:
            await response.aclose()


class ClientCore(BaseClient):
    """:class:`BaseClient` with the client's steps as plans (see the module doc)."""

    def _fetch_card(self) -> Plan[dict[str, Any]]:
        urls = cards.card_urls(self.url)
        for url in urls:
            call = card_call(url)
            card = self.card_answer(call, (yield from self._send(call, None)))
            if card is not None:
                return card
        raise CardNotFoundError(f"{self.name}: no Agent Card at {' or '.join(urls)} (HTTP 404)")

    def _connect(self) -> Plan[Binding]:
        if self.binding is None:
            yield Locked(self._connect_locked())
        assert self.binding is not None
        return self.binding

    def _connect_locked(self) -> Plan[None]:
        if self.binding is None:  # (another caller may have fetched it meanwhile)
            yield from self._fetch_card()

    def _send(self, call: Call, binding: Binding | None) -> Plan[httpx.Response]:
        """``call`` sent, and again while :attr:`retry` says so (:func:`a2a.core.retry.retrying`);
        the response used."""

        def attempt() -> Plan[httpx.Response]:
            request = self.build(self.http, call, binding)
            return (yield Send(request, call.stream, self.send_options(call)))

        try:
            return (yield from retrying(self.retry, attempt, write=call.write))
        except httpx.TransportError as exc:
            raise self.transport_error(exc, call) from exc

    def _run(self, operation: str, *args: Any, **kwargs: Any) -> Plan[Any]:
        """The result of ``operation``; on a JSON-RPC agent that does not know its v0.3
        method name, sent again under its v1.0 name (see ``Binding.speak_v10_names``)."""
        binding = yield from self._connect()
        call: Call = getattr(binding, operation)(*args, **kwargs)
        try:
            return self.answer(call, (yield from self._send(call, binding)), binding)
        except RemoteAgentError as exc:
            if not binding.speak_v10_names(exc):
                raise
            refused = exc
        call = getattr(binding, operation)(*args, **kwargs)
        try:
            return self.answer(call, (yield from self._send(call, binding)), binding)
        except RemoteAgentError:
            binding.speak_v03_names()  # not the toolnexus dialect either: the first answer stands
            raise refused from None

    def _sending(self, operation: str, message: Outgoing, options: SendOptions, **more: Any) -> Plan[Any]:
        """``operation`` ("send" or "stream") of ``message`` as the user's, in the context
        or task ``options`` names, with the rest of ``options`` as its configuration."""
        config: dict[str, Any] = dict(options)
        sent = user_message(message, context_id=config.pop("context_id", None), task_id=config.pop("task_id", None))
        if operation == "stream":
            return self._events(operation, sent, **config, **more)
        return self._run(operation, sent, **config, **more)

    def _poll(self, task: Task, interval: float) -> Plan[Task]:
        number = generation_of(task)
        if number is None:
            yield Sleep(interval)
        result: Task = yield from self._run("get", task["id"], current_generation=number)
        return result

    def _events(self, operation: str, *args: Any, **kwargs: Any) -> Plan[None]:
        """The stream's items, emitted in their generations' order (1.1 agents): after a
        gap, the task as read again; an item already in it is dropped
        (:mod:`a2a.client.generation`). An agent that answers without a stream: its
        answer, as the one item."""
        binding = yield from self._connect()
        call: Call = getattr(binding, operation)(*args, **kwargs)
        response = yield from self._send(call, binding)
        order = Order()
        try:
            if not self.is_stream(response):
                yield Read(response)
                yield from self._emit(order, self.answer(call, response, binding))
                return
            decoder = SSEDecoder()
            while True:
                line = yield NextLine(response)
                data = decoder.feed(line) if line is not None else decoder.flush()
                if data is not None:
                    yield from self._emit(order, self.event(call, data, binding))
                if line is None:
                    return
        except httpx.TransportError as exc:
            raise self.transport_error(exc, call) from exc

    def _emit(self, order: Order, item: StreamItem) -> Plan[None]:
        verdict = order.see(item)
        if verdict == "old":
            return
        yield Emit(item)
        if verdict == "gap" and item.task is not None:
            task = yield from self._run("get", item.task["id"])
            order.fetched(task)
            yield Emit(StreamItem("task", task=task, seq=generation_of(task)))
