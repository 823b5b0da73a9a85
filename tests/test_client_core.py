"""The client core (a2a.client.core): one plan per step, run by the sync and the async
client alike. A stream left early, cancelled, or cut by the network ends the same way on
both: its response closed, a transport error as the client's error."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from a2a.client import AgentUnavailableError, AsyncClient, Client, Interface, RetryPolicy
from a2a.testing import rpc_result, sse_event

RPC = Interface("http://agent.test/a2a/", "JSONRPC", "1.0")
STATUS = {"taskId": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}


class Stream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """An SSE body of ``events`` (each the result of a frame answering ``request_id``)
    then, if ``cut``, a connection lost; records its closing."""

    def __init__(self, events: list[dict], cut: bool = False) -> None:
        self.events, self.cut, self.closed, self.request_id = events, cut, False, None

    def __iter__(self):
        yield from (sse_event(rpc_result(event, self.request_id)) for event in self.events)
        if self.cut:
            raise httpx.RemoteProtocolError("peer closed connection")

    async def __aiter__(self):
        for chunk in self.__iter__():
            yield chunk

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def agent(stream: Stream):
    def answer(request: httpx.Request) -> httpx.Response:
        stream.request_id = json.loads(request.content)["id"]
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)

    return answer


def statuses(n: int) -> list[dict]:
    return [{"statusUpdate": STATUS}] * n


def test_a_stream_left_early_is_closed_sync_and_async():
    sync = Stream(statuses(3))
    with Client(RPC, transport=httpx.MockTransport(agent(sync))) as client:
        items = client.stream("hi")
        assert next(items).kind == "status"
        items.close()
    assert sync.closed

    aio = Stream(statuses(3))

    async def go():
        async with AsyncClient(RPC, transport=httpx.MockTransport(agent(aio))) as client:
            items = client.stream("hi")
            assert (await anext(items)).kind == "status"
            await items.aclose()

    asyncio.run(go())
    assert aio.closed


def test_a_cancelled_stream_is_closed():
    stream = Stream(statuses(1))
    gate = asyncio.Event()

    async def go():
        async with AsyncClient(RPC, transport=httpx.MockTransport(agent(stream))) as client:

            async def read():
                async for _ in client.stream("hi"):
                    gate.set()
                    await asyncio.sleep(30)

            reader = asyncio.create_task(read())
            await gate.wait()
            reader.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reader

    asyncio.run(go())
    assert stream.closed


def test_a_stream_cut_by_the_network_is_the_clients_error_on_both():
    no_retry = RetryPolicy(attempts=1)
    sync = Stream(statuses(1), cut=True)
    with Client(RPC, transport=httpx.MockTransport(agent(sync)), retry=no_retry) as client:
        items = client.stream("hi")
        assert next(items).kind == "status"
        with pytest.raises(AgentUnavailableError, match="peer closed"):
            next(items)
    assert sync.closed

    aio = Stream(statuses(1), cut=True)

    async def go():
        async with AsyncClient(RPC, transport=httpx.MockTransport(agent(aio)), retry=no_retry) as client:
            seen = []
            with pytest.raises(AgentUnavailableError, match="peer closed"):
                async for item in client.stream("hi"):
                    seen.append(item.kind)
            assert seen == ["status"]

    asyncio.run(go())
    assert aio.closed
