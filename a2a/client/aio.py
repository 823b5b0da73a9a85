"""The asynchronous client: :class:`AsyncClient`, on ``httpx.AsyncClient``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Unpack

import httpx

from a2a.client import core
from a2a.client.bindings import Binding
from a2a.client.core import ClientCore, Effect, Outgoing, Plan, SendOptions, Steps, T
from a2a.protocol.model import Message, StreamItem, Task
from stores.base import TaskPage


class AsyncClient(ClientCore):
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
        return await self._call(self._fetch_card())

    async def connect(self) -> Binding:
        """The binding spoken, the card fetched first if need be."""
        return await self._call(self._connect())

    async def _call(self, plan: Plan[T]) -> T:
        """The result of ``plan`` (one that emits nothing), run on this loop."""
        result: list[T] = []
        async for _ in self._steps(plan, result):
            pass
        return result[0]

    async def _steps(self, plan: Plan[T], result: list[T] | None = None) -> AsyncGenerator[StreamItem, None]:
        """Run ``plan`` (:mod:`a2a.client.core`): its I/O awaited here; the items it emits
        yielded; its result appended to ``result``; the streams it opened closed at the end."""
        async with Steps(plan) as steps:
            for effect in steps:
                if isinstance(effect, core.Emit):
                    yield effect.item
                    continue
                with steps.outcome():
                    steps.value = await self._do(effect, steps.opened)
        if result is not None:
            result.append(steps.result)

    async def _do(self, effect: Effect, opened: dict[httpx.Response, AsyncIterator[str]]) -> Any:
        if isinstance(effect, core.Send):
            response = await self.http.send(effect.request, stream=effect.stream, **effect.options)
            if effect.stream:
                opened[response] = response.aiter_lines()
            return response
        if isinstance(effect, core.NextLine):
            return await anext(opened[effect.response], None)
        if isinstance(effect, core.Read):
            return await effect.response.aread()
        if isinstance(effect, core.Discard):
            return await effect.response.aclose()
        if isinstance(effect, core.Sleep):
            return await asyncio.sleep(effect.seconds)
        assert isinstance(effect, core.Locked), effect
        async with self.lock:
            return await self._call(effect.plan)

    # --- the operations (as Client's) ------------------------------------------------------

    async def send(self, message: Outgoing, *, blocking: bool = True, **options: Unpack[SendOptions]) -> Task | Message:
        """SendMessage (:meth:`Client.send <a2a.client.Client.send>`)."""
        return await self._call(self._sending("send", message, options, blocking=blocking))

    def stream(self, message: Outgoing, **options: Unpack[SendOptions]) -> AsyncGenerator[StreamItem, None]:
        """SendStreamingMessage: ``async for item in client.stream(...)``."""
        return self._steps(self._sending("stream", message, options))

    async def get_task(
        self, task_id: str, *, history_length: int | None = None, current_generation: int | None = None
    ) -> Task:
        """GetTask (a long-poll with ``current_generation``: :meth:`Client.get_task <a2a.client.Client.get_task>`)."""
        return await self._call(
            self._run("get", task_id, history_length=history_length, current_generation=current_generation)
        )

    async def poll(self, task: Task, *, interval: float = 0.5) -> Task:
        """``task`` as it is next (:meth:`Client.poll <a2a.client.Client.poll>`)."""
        return await self._call(self._poll(task, interval))

    async def list_tasks(self, **query: Any) -> TaskPage:
        """ListTasks (:meth:`Client.list_tasks <a2a.client.Client.list_tasks>`)."""
        return await self._call(self._run("list", **query))

    async def cancel_task(self, task_id: str, *, metadata: dict[str, Any] | None = None) -> Task:
        """CancelTask."""
        return await self._call(self._run("cancel", task_id, metadata=metadata))

    def subscribe(self, task_id: str) -> AsyncGenerator[StreamItem, None]:
        """SubscribeToTask: ``async for item in client.subscribe(task_id)``."""
        return self._steps(self._events("subscribe", task_id))

    async def set_push_config(self, task_id: str, url: str, **config: Any) -> dict[str, Any]:
        """CreateTaskPushNotificationConfig."""
        return await self._call(self._run("push_set", task_id, {"url": url, **config}))

    async def get_push_config(self, task_id: str, config_id: str) -> dict[str, Any]:
        """GetTaskPushNotificationConfig."""
        return await self._call(self._run("push_get", task_id, config_id))

    async def list_push_configs(self, task_id: str) -> list[dict[str, Any]]:
        """ListTaskPushNotificationConfigs."""
        return await self._call(self._run("push_list", task_id))

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        """DeleteTaskPushNotificationConfig."""
        await self._call(self._run("push_delete", task_id, config_id))

    async def extended_card(self) -> dict[str, Any]:
        """GetExtendedAgentCard."""
        return await self._call(self._run("extended_card"))
