"""The asynchronous client: :class:`AsyncClient`, on ``httpx.AsyncClient``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx

from a2a.client import core
from a2a.client.core import Effect, Plan, Steps, T
from a2a.client.operations import Operations
from a2a.protocol.model import StreamItem


class AsyncClient(Operations):
    """:class:`~a2a.client.Client` with ``await`` (and ``async for`` over streams).

    ``http`` is an ``httpx.AsyncClient`` to send with (the caller owns it), ``transport``
    an async transport for a client of our own: ``httpx.ASGITransport(app=...)`` talks
    to an ASGI application in this process, without a server."""

    awaits = True
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
