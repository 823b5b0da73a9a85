"""The client and the task generation (A2A 1.1 draft): it reads each task's and update's
generation, reads the task again after a gap in a stream (and drops what that task already
holds), stops trusting an agent that sends 0 or one number twice, guards follow-ups with
``if_generation_match`` and long-polls (``Client.poll``) instead of sleeping when the
agent numbers its tasks."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import orjson
import pytest

from a2a.client import AsyncClient, Client, Interface, TaskGenerationMismatch, generation_of
from a2a.client.generation import Order
from a2a.client.inprocess import ASGIAppTransport
from a2a.protocol.model import StreamItem
from a2a.testing import rpc_result, sse_event
from tests.helpers import asgi_app

BASE = "http://testserver"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"


def _status(number: int | None) -> StreamItem:
    return StreamItem("status", task={"id": "t", "status": {"state": "working"}}, seq=number)


def _snapshot(number: int) -> StreamItem:
    return StreamItem("task", task={"id": "t", "status": {"state": "working"}, "_generation": number})


def test_the_order_of_a_stream():
    order = Order()
    assert [order.see(i) for i in (_snapshot(1), _status(2), _status(3))] == ["new"] * 3
    assert order.see(_status(6)) == "gap"
    order.fetched({"id": "t", "_generation": 8})
    assert [order.see(_status(n)) for n in (7, 8, 9)] == ["old", "old", "new"]
    assert order.see(_status(None)) == "new"  # unnumbered: taken as it comes


def test_an_agent_that_sends_0_or_repeats_a_number_is_not_trusted():
    order = Order()
    order.see(_snapshot(1))
    assert order.see(_status(0)) == "new" and not order.trusted
    assert order.see(_status(9)) == "new"  # no gap is claimed from then on
    repeating = Order()
    repeating.see(_status(2))
    assert repeating.see(_status(2)) == "new" and not repeating.trusted


def test_a_gap_in_a_stream_reads_the_task_again():
    """The agent's stream skips generation 3: the client hands on 4, then the task as read
    again (generation 5), and drops the 5 that follows (already in it)."""
    ids = {"taskId": "t", "contextId": "c"}
    working = {"state": "TASK_STATE_WORKING"}
    events = [
        {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}, "generation": "1"}},
        {"statusUpdate": {**ids, "status": working, "generation": "2"}},
        {"statusUpdate": {**ids, "status": working, "generation": "4"}},
        {"statusUpdate": {**ids, "status": working, "generation": "5"}},
        {"statusUpdate": {**ids, "status": {"state": "TASK_STATE_COMPLETED"}, "generation": "6"}},
    ]
    fetched = {"id": "t", "contextId": "c", "status": working, "generation": "5"}

    def handler(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(request.content)
        if body["method"] == "GetTask":
            return httpx.Response(200, json=rpc_result(fetched, body["id"]))
        content = b"".join(sse_event(rpc_result(e)) for e in events)
        return httpx.Response(200, content=content, headers={"content-type": "text/event-stream"})

    with Client(Interface(f"{BASE}/a2a/", "JSONRPC", "1.1"), transport=httpx.MockTransport(handler)) as c:
        seen = [(item.kind, generation_of(item)) for item in c.stream("hi")]
    assert seen == [("task", 1), ("status", 2), ("status", 4), ("task", 5), ("status", 6)]


def test_a_1_1_agent_is_long_polled_and_a_follow_up_is_guarded():
    async def go() -> tuple[float, int, int]:
        transport = httpx.ASGITransport(app=asgi_app())
        async with AsyncClient(BASE, transport=transport) as c:
            task = await c.send("ask:more?")
            number = generation_of(task)
            assert number is not None and c.interface.version == "1.1"

            async def answer_later() -> None:
                await asyncio.sleep(0.3)
                await c.send("progress:two", task_id=task["id"], blocking=False, if_generation_match=number)

            began = time.monotonic()
            moved, _ = await asyncio.gather(c.poll(task, interval=30), answer_later())
            with pytest.raises(TaskGenerationMismatch):
                await c.send("again", task_id=task["id"], if_generation_match=number)
            return time.monotonic() - began, number, generation_of(moved) or 0

    took, before, after = asyncio.run(go())
    assert after > before and 0.25 < took < 10  # woken by the follow-up, not by the 30 s interval


@pytest.fixture
def in_process():
    transport = ASGIAppTransport(asgi_app())
    yield transport
    transport.close()


def test_a_v10_agent_is_polled_after_the_interval(in_process):
    with Client(BASE, transport=in_process, version="1.0") as c:
        task = c.send("hello")
        assert generation_of(task) is None
        began = time.monotonic()
        again = c.poll(task, interval=0.2)
    assert again["id"] == task["id"] and time.monotonic() - began >= 0.2


def test_the_sync_client_long_polls_too(settings, in_process):
    settings.A2A_LONG_POLL_TIMEOUT = 0.3
    with Client(BASE, transport=in_process) as c:
        task = c.send(f"ask:{uuid.uuid4().hex}")
        began = time.monotonic()
        same = c.poll(task, interval=30)
    assert generation_of(same) == generation_of(task) and time.monotonic() - began < 10  # the agent's timeout
