"""The synchronous client: :class:`Client`, on ``httpx.Client``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from itertools import count
from typing import Any

import httpx

from a2a.client import card as cards
from a2a.client.base import BaseClient, SSEDecoder, card_call, user_message
from a2a.client.bindings import Binding, Call
from a2a.client.errors import CardNotFoundError, RemoteAgentError
from a2a.client.generation import Order, generation_of
from a2a.protocol.model import Message, Part, StreamItem, Task
from stores.base import TaskPage


class Client(BaseClient):
    """An A2A client for one remote agent (sync; :class:`~a2a.client.AsyncClient` is the
    same with ``await``).

    ``agent`` is the card's URL (or the agent's base URL: its well-known card is read),
    the card itself (a dict), or an :class:`~a2a.client.Interface` to speak without a
    card. The card is fetched on first use. ``http`` is an ``httpx.Client`` to send with
    (kept open: the caller owns it), ``transport`` an httpx transport for a client of
    our own (``httpx.MockTransport``, ``httpx.WSGITransport``...). The other options are
    :class:`~a2a.client.base.BaseClient`'s: ``auth`` (:mod:`a2a.client.auth`),
    ``headers``, ``timeout`` (seconds, each request), ``stream_timeout`` (seconds without
    a byte on a stream; None: wait), ``retry`` (:class:`~a2a.client.retry.RetryPolicy`),
    ``binding`` / ``version`` (only these), ``verify_signature`` with ``signature_keys``.

    Results are canonical (:mod:`a2a.protocol.model`), whatever the agent's version.
    """

    http_class = httpx.Client
    lock_class = threading.Lock
    http: httpx.Client

    def close(self) -> None:
        """Close the connections (of a client this one made)."""
        if self.owns_http:
            self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the card and the wire -------------------------------------------------------------

    def fetch_card(self) -> dict[str, Any]:
        """Fetch (again) the agent's card, check it, pick its interface; the card."""
        urls = cards.card_urls(self.url)
        for url in urls:
            call = card_call(url)
            card = self.card_answer(call, self._send(call, None))
            if card is not None:
                return card
        raise CardNotFoundError(f"{self.name}: no Agent Card at {' or '.join(urls)} (HTTP 404)")

    def connect(self) -> Binding:
        """The binding spoken, the card fetched first if need be."""
        with self.lock:
            if self.binding is None:
                self.fetch_card()
            assert self.binding is not None
            return self.binding

    def _send(self, call: Call, binding: Binding | None) -> httpx.Response:
        for attempt in count(1):
            request = self.build(self.http, call, binding)
            try:
                response = self.http.send(request, stream=call.stream, **self.send_options(call))
            except httpx.TransportError as exc:
                delay = self.retry.after_error(exc, attempt, write=call.write)
                if delay is None:
                    raise self.transport_error(exc, call) from exc
                time.sleep(delay)
                continue
            delay = self.retry.after_response(response, attempt, write=call.write)
            if delay is None:
                return response
            response.close()
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _run(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        binding = self.connect()
        call: Call = getattr(binding, operation)(*args, **kwargs)
        try:
            return self.answer(call, self._send(call, binding), binding)
        except RemoteAgentError as exc:
            if not binding.speak_v10_names(exc):
                raise
            refused = exc
        call = getattr(binding, operation)(*args, **kwargs)
        try:
            return self.answer(call, self._send(call, binding), binding)
        except RemoteAgentError:
            binding.speak_v03_names()  # not the toolnexus dialect either: the first answer stands
            raise refused from None

    def _events(self, operation: str, *args: Any, **kwargs: Any) -> Iterator[StreamItem]:
        """The stream's items in their generations' order (1.1 agents): after a gap, the
        task as read again; an item already in it is dropped (:mod:`a2a.client.generation`)."""
        order = Order()
        for item in self._raw_events(operation, *args, **kwargs):
            verdict = order.see(item)
            if verdict == "old":
                continue
            yield item
            if verdict == "gap" and item.task is not None:
                task = self.get_task(item.task["id"])
                order.fetched(task)
                yield StreamItem("task", task=task, seq=generation_of(task))

    def _raw_events(self, operation: str, *args: Any, **kwargs: Any) -> Iterator[StreamItem]:
        binding = self.connect()
        call: Call = getattr(binding, operation)(*args, **kwargs)
        response = self._send(call, binding)
        try:
            if not self.is_stream(response):
                response.read()
                yield self.answer(call, response, binding)
                return
            decoder = SSEDecoder()
            for line in response.iter_lines():
                data = decoder.feed(line)
                if data is not None:
                    yield self.event(call, data, binding)
            data = decoder.flush()
            if data is not None:
                yield self.event(call, data, binding)
        except httpx.TransportError as exc:
            raise self.transport_error(exc, call) from exc
        finally:
            response.close()

    # --- the operations --------------------------------------------------------------------

    def send(
        self,
        message: str | list[Part] | Message,
        *,
        blocking: bool = True,
        context_id: str | None = None,
        task_id: str | None = None,
        **config: Any,
    ) -> Task | Message:
        """SendMessage: the task (settled, unless ``blocking=False``) or the agent's message.
        ``config``: ``history_length``, ``accepted_output_modes``, ``push_config``, ``metadata``."""
        message = user_message(message, context_id=context_id, task_id=task_id)
        return self._run("send", message, blocking=blocking, **config)

    def stream(
        self,
        message: str | list[Part] | Message,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        **config: Any,
    ) -> Iterator[StreamItem]:
        """SendStreamingMessage: the task, then each status and artifact update, as
        :class:`~a2a.protocol.model.StreamItem` (close the iterator to stop listening)."""
        return self._events("stream", user_message(message, context_id=context_id, task_id=task_id), **config)

    def get_task(
        self, task_id: str, *, history_length: int | None = None, current_generation: int | None = None
    ) -> Task:
        """GetTask; with ``current_generation`` (a 1.1 agent), a long-poll: the agent
        answers once the task is past that generation, or after its own timeout."""
        return self._run("get", task_id, history_length=history_length, current_generation=current_generation)

    def poll(self, task: Task, *, interval: float = 0.5) -> Task:
        """``task`` as it is next: when the agent numbers its tasks (1.1), one long-poll
        GetTask past ``task``'s generation (the agent holds it until the task moves);
        otherwise GetTask after ``interval`` seconds."""
        number = generation_of(task)
        if number is None:
            time.sleep(interval)
        return self.get_task(task["id"], current_generation=number)

    def list_tasks(self, **query: Any) -> TaskPage:
        """ListTasks: ``context_id``, ``state``, ``page_size``, ``page_token``,
        ``history_length``, ``include_artifacts``, ``updated_after`` (ISO 8601)."""
        return self._run("list", **query)

    def cancel_task(self, task_id: str, *, metadata: dict[str, Any] | None = None) -> Task:
        """CancelTask: the task as the agent has it after the request."""
        return self._run("cancel", task_id, metadata=metadata)

    def subscribe(self, task_id: str) -> Iterator[StreamItem]:
        """SubscribeToTask: the task, then its updates until it ends."""
        return self._events("subscribe", task_id)

    def set_push_config(self, task_id: str, url: str, **config: Any) -> dict[str, Any]:
        """CreateTaskPushNotificationConfig: ``id``, ``token``, ``authentication``
        (``{"schemes": [...], "credentials"?}``); the config as saved."""
        return self._run("push_set", task_id, {"url": url, **config})

    def get_push_config(self, task_id: str, config_id: str) -> dict[str, Any]:
        """GetTaskPushNotificationConfig."""
        return self._run("push_get", task_id, config_id)

    def list_push_configs(self, task_id: str) -> list[dict[str, Any]]:
        """ListTaskPushNotificationConfigs."""
        return self._run("push_list", task_id)

    def delete_push_config(self, task_id: str, config_id: str) -> None:
        """DeleteTaskPushNotificationConfig."""
        self._run("push_delete", task_id, config_id)

    def extended_card(self) -> dict[str, Any]:
        """GetExtendedAgentCard (the agent's card for authenticated callers)."""
        return self._run("extended_card")
