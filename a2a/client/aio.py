"""The asynchronous client: :class:`AsyncClient`, on ``httpx.AsyncClient``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
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


class AsyncClient(BaseClient):
    """:class:`~a2a.client.Client` with ``await`` (and ``async for`` over streams).

    ``http`` is an ``httpx.AsyncClient`` to send with (the caller owns it), ``transport``
    an async transport for a client of our own: ``httpx.ASGITransport(app=...)`` talks
    to an ASGI application in this process, without a server."""

    http_class = httpx.AsyncClient
    lock_class = asyncio.Lock
    http: httpx.AsyncClient

    async def aclose(self) -> None:
        """Close the connections (of a client this one made)."""
        if self.owns_http:
            await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- the card and the wire -------------------------------------------------------------

    async def fetch_card(self) -> dict[str, Any]:
        """Fetch (again) the agent's card, check it, pick its interface; the card."""
        urls = cards.card_urls(self.url)
        for url in urls:
            call = card_call(url)
            card = self.card_answer(call, await self._send(call, None))
            if card is not None:
                return card
        raise CardNotFoundError(f"{self.name}: no Agent Card at {' or '.join(urls)} (HTTP 404)")

    async def connect(self) -> Binding:
        """The binding spoken, the card fetched first if need be."""
        async with self.lock:
            if self.binding is None:
                await self.fetch_card()
            assert self.binding is not None
            return self.binding

    async def _send(self, call: Call, binding: Binding | None) -> httpx.Response:
        for attempt in count(1):
            request = self.build(self.http, call, binding)
            try:
                response = await self.http.send(request, stream=call.stream, **self.send_options(call))
            except httpx.TransportError as exc:
                delay = self.retry.after_error(exc, attempt, write=call.write)
                if delay is None:
                    raise self.transport_error(exc, call) from exc
                await asyncio.sleep(delay)
                continue
            delay = self.retry.after_response(response, attempt, write=call.write)
            if delay is None:
                return response
            await response.aclose()
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _run(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        binding = await self.connect()
        call: Call = getattr(binding, operation)(*args, **kwargs)
        try:
            return self.answer(call, await self._send(call, binding), binding)
        except RemoteAgentError as exc:
            if not binding.speak_v10_names(exc):
                raise
            refused = exc
        call = getattr(binding, operation)(*args, **kwargs)
        try:
            return self.answer(call, await self._send(call, binding), binding)
        except RemoteAgentError:
            binding.speak_v03_names()  # not the toolnexus dialect either: the first answer stands
            raise refused from None

    async def _events(self, operation: str, *args: Any, **kwargs: Any) -> AsyncIterator[StreamItem]:
        """:meth:`Client._events <a2a.client.Client._events>`: in generation order."""
        order = Order()
        async for item in self._raw_events(operation, *args, **kwargs):
            verdict = order.see(item)
            if verdict == "old":
                continue
            yield item
            if verdict == "gap" and item.task is not None:
                task = await self.get_task(item.task["id"])
                order.fetched(task)
                yield StreamItem("task", task=task, seq=generation_of(task))

    async def _raw_events(self, operation: str, *args: Any, **kwargs: Any) -> AsyncIterator[StreamItem]:
        binding = await self.connect()
        call: Call = getattr(binding, operation)(*args, **kwargs)
        response = await self._send(call, binding)
        try:
            if not self.is_stream(response):
                await response.aread()
                yield self.answer(call, response, binding)
                return
            decoder = SSEDecoder()
            async for line in response.aiter_lines():
                data = decoder.feed(line)
                if data is not None:
                    yield self.event(call, data, binding)
            data = decoder.flush()
            if data is not None:
                yield self.event(call, data, binding)
        except httpx.TransportError as exc:
            raise self.transport_error(exc, call) from exc
        finally:
            await response.aclose()

    # --- the operations (as Client's) ------------------------------------------------------

    async def send(
        self,
        message: str | list[Part] | Message,
        *,
        blocking: bool = True,
        context_id: str | None = None,
        task_id: str | None = None,
        **config: Any,
    ) -> Task | Message:
        """SendMessage (:meth:`Client.send <a2a.client.Client.send>`)."""
        message = user_message(message, context_id=context_id, task_id=task_id)
        return await self._run("send", message, blocking=blocking, **config)

    def stream(
        self,
        message: str | list[Part] | Message,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        **config: Any,
    ) -> AsyncIterator[StreamItem]:
        """SendStreamingMessage: ``async for item in client.stream(...)``."""
        return self._events("stream", user_message(message, context_id=context_id, task_id=task_id), **config)

    async def get_task(
        self, task_id: str, *, history_length: int | None = None, current_generation: int | None = None
    ) -> Task:
        """GetTask (a long-poll with ``current_generation``: :meth:`Client.get_task <a2a.client.Client.get_task>`)."""
        return await self._run("get", task_id, history_length=history_length, current_generation=current_generation)

    async def poll(self, task: Task, *, interval: float = 0.5) -> Task:
        """``task`` as it is next (:meth:`Client.poll <a2a.client.Client.poll>`)."""
        number = generation_of(task)
        if number is None:
            await asyncio.sleep(interval)
        return await self.get_task(task["id"], current_generation=number)

    async def list_tasks(self, **query: Any) -> TaskPage:
        """ListTasks (:meth:`Client.list_tasks <a2a.client.Client.list_tasks>`)."""
        return await self._run("list", **query)

    async def cancel_task(self, task_id: str, *, metadata: dict[str, Any] | None = None) -> Task:
        """CancelTask."""
        return await self._run("cancel", task_id, metadata=metadata)

    def subscribe(self, task_id: str) -> AsyncIterator[StreamItem]:
        """SubscribeToTask: ``async for item in client.subscribe(task_id)``."""
        return self._events("subscribe", task_id)

    async def set_push_config(self, task_id: str, url: str, **config: Any) -> dict[str, Any]:
        """CreateTaskPushNotificationConfig."""
        return await self._run("push_set", task_id, {"url": url, **config})

    async def get_push_config(self, task_id: str, config_id: str) -> dict[str, Any]:
        """GetTaskPushNotificationConfig."""
        return await self._run("push_get", task_id, config_id)

    async def list_push_configs(self, task_id: str) -> list[dict[str, Any]]:
        """ListTaskPushNotificationConfigs."""
        return await self._run("push_list", task_id)

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        """DeleteTaskPushNotificationConfig."""
        await self._run("push_delete", task_id, config_id)

    async def extended_card(self) -> dict[str, Any]:
        """GetExtendedAgentCard."""
        return await self._run("extended_card")
