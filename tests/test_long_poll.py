"""Long-polling GetTask (A2A 1.1 draft, spec 3.2.7: ``currentGeneration``) on every
binding: it answers at once when the task is past it (or terminal), waits on the event
bus and wakes when the task moves, times out to the task as it stands, and a client that
goes away frees the wait at once. Across processes: tests/test_long_poll_live.py."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import grpc
import orjson
import pytest

from a2a.core.events import bus
from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.server import start
from a2a.testing.client import WireClient, rpc_body
from tests.conftest import ALL_DATABASES
from tests.helpers import asgi_scope

pytestmark = ALL_DATABASES

V11 = WireClient(version="1.1")


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_STREAM_KEEPALIVE = 1


def _waiting_task() -> tuple[str, int]:
    """A task waiting for input (it stays at its generation): its id and generation."""
    task = V11.send("ask:more?")["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task["id"], int(task["generation"])


def _message(text: str, **extra: Any) -> dict:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


async def _poll(task_id: str, generation: int, client: WireClient = V11) -> tuple[dict, float]:
    began = time.monotonic()
    task = (await client.arpc("GetTask", {"id": task_id, "currentGeneration": str(generation)}))["result"]
    return task, time.monotonic() - began


async def _follow_up(task_id: str, after: float) -> None:
    await asyncio.sleep(after)
    params = {"message": _message("progress:two", taskId=task_id), "configuration": {"returnImmediately": True}}
    assert "result" in await V11.arpc("SendMessage", params)


def test_a_task_already_past_the_generation_is_answered_at_once(use_store):
    task_id, generation = _waiting_task()
    task, took = asyncio.run(_poll(task_id, generation - 1))
    assert int(task["generation"]) == generation and took < 1


def test_a_terminal_task_is_answered_at_once_it_never_moves_again(settings):
    settings.A2A_LONG_POLL_TIMEOUT = 20
    task = V11.send("hello")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    answer, took = asyncio.run(_poll(task["id"], int(task["generation"])))
    assert answer["generation"] == task["generation"] and took < 1


def test_the_wait_wakes_when_the_task_moves(use_store, settings):
    settings.A2A_LONG_POLL_TIMEOUT = 20
    task_id, generation = _waiting_task()

    async def both() -> tuple[dict, float]:
        polled, _ = await asyncio.gather(_poll(task_id, generation), _follow_up(task_id, 0.4))
        return polled

    task, took = asyncio.run(both())
    assert int(task["generation"]) > generation and 0.35 < took < 10, (task, took)
    assert task["status"]["state"] != "TASK_STATE_INPUT_REQUIRED"


def test_the_wait_times_out_to_the_task_as_it_stands(settings):
    settings.A2A_LONG_POLL_TIMEOUT = 0.4
    task_id, generation = _waiting_task()
    task, took = asyncio.run(_poll(task_id, generation))
    assert int(task["generation"]) == generation and task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert 0.35 < took < 5
    assert not bus.has_subscribers(task_id)


def test_the_generation_is_checked(settings):
    task_id, _ = _waiting_task()
    for bad in ("-1", "x", 1.5, True):
        error = V11.rpc("GetTask", {"id": task_id, "currentGeneration": bad})["error"]
        assert error["code"] == -32602 and "currentGeneration" in error["message"], error


def test_rest_long_polls_with_the_query_parameter(settings):
    settings.A2A_LONG_POLL_TIMEOUT = 20
    task_id, generation = _waiting_task()
    path = f"/a2a/rest/tasks/{task_id}"

    async def both() -> Any:
        response, _ = await asyncio.gather(
            V11.arequest("GET", path, params={"currentGeneration": str(generation)}), _follow_up(task_id, 0.3)
        )
        return response

    response = asyncio.run(both())
    assert response.status_code == 200 and int(response.json()["generation"]) > generation
    at_once = V11.request("GET", path, params={"currentGeneration": "0"})
    assert int(at_once.json()["generation"]) > generation
    assert V11.request("GET", path, params={"currentGeneration": "soon"}).status_code == 400


def test_grpc_long_polls_and_a_v10_call_sees_no_generation(settings):
    settings.A2A_LONG_POLL_TIMEOUT = 20
    task_id, generation = _waiting_task()

    async def go() -> tuple[pb.Task, pb.Task]:
        server, port = await start("127.0.0.1:0")
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                request = pb.GetTaskRequest(id=task_id, current_generation=generation)
                polled, _ = await asyncio.gather(
                    stub.GetTask(request, metadata=(("a2a-version", "1.1"),)), _follow_up(task_id, 0.3)
                )
                plain = await stub.GetTask(pb.GetTaskRequest(id=task_id))
                return polled, plain
        finally:
            await server.stop(None)

    polled, plain = asyncio.run(go())
    assert polled.generation > generation
    assert plain.generation == 0  # a v1.0 call: the field is not sent (proto3's default)


async def held_on_the_bus(task_id: str) -> bool:
    """Whether a request for ``task_id`` is held on the bus (subscribed to it) within
    2 s, asked every 10 ms."""
    for _ in range(200):
        if bus.has_subscribers(task_id):
            return True
        await asyncio.sleep(0.01)
    return bus.has_subscribers(task_id)


def test_a_client_that_goes_away_frees_the_wait_at_once(settings):
    """The ASGI app hears ``http.disconnect`` and cancels the held request: its
    subscription ends with it, long before the timeout."""
    settings.A2A_LONG_POLL_TIMEOUT = 30
    task_id, generation = _waiting_task()
    app = V11.application()
    body = orjson.dumps(rpc_body("GetTask", {"id": task_id, "currentGeneration": generation}))
    scope = asgi_scope(headers={"a2a-version": "1.1"})
    sent: list[dict] = []

    async def go() -> tuple[bool, float]:
        gone = asyncio.Event()
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict:
            if messages:
                return messages.pop(0)
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        call = asyncio.ensure_future(app(scope, receive, send))
        held = await held_on_the_bus(task_id)
        began = time.monotonic()
        gone.set()
        await asyncio.wait_for(call, 5)
        return held, time.monotonic() - began

    held, took = asyncio.run(go())
    assert held and took < 1, took
    assert not bus.has_subscribers(task_id)
    assert not any(m.get("type") == "http.response.start" and m.get("status") == 500 for m in sent)


@pytest.mark.parametrize("path", ["loop", "one hop"])
def test_held_requests_hold_no_thread_of_the_middleware_chain(settings, path):
    """Each held long-poll's head goes out at once (a streamed response), so the worker
    thread that ran the project's MIDDLEWARE for it (one hop) is free again: requests
    arriving one after the other reuse one thread instead of holding one each. On the
    loop, none is taken."""
    settings.A2A_LONG_POLL_TIMEOUT = 3
    if path == "one hop":  # a middleware that does not declare it does not block
        settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_loop_chain.UnknownMiddleware"]
    client = WireClient(version="1.1")  # an application built on these settings
    tasks = [_waiting_task() for _ in range(20)]

    def chain_threads() -> int:
        return sum(t.name.startswith("a2a-middleware") for t in threading.enumerate())

    async def go() -> tuple[int, list[dict]]:
        calls = []
        for task_id, generation in tasks:
            calls.append(asyncio.ensure_future(_poll(task_id, generation, client)))
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        assert not any(c.done() for c in calls)  # all held
        during = chain_threads()
        return during, [task for task, _ in await asyncio.gather(*calls)]

    before = chain_threads()
    during, answers = asyncio.run(go())
    assert during - before < (5 if path == "one hop" else 1), (before, during)
    assert during >= (1 if path == "one hop" else 0)  # the chain did run on its threads
    assert [a["generation"] for a in answers] == [str(g) for _, g in tasks]  # timed out, as they stand


def test_a_grpc_call_cancelled_by_its_client_frees_the_wait(settings):
    settings.A2A_LONG_POLL_TIMEOUT = 30
    task_id, generation = _waiting_task()

    async def go() -> tuple[bool, float]:
        server, port = await start("127.0.0.1:0")
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                call = stub.GetTask(pb.GetTaskRequest(id=task_id, current_generation=generation))
                held = await held_on_the_bus(task_id)
                began = time.monotonic()
                call.cancel()
                while bus.has_subscribers(task_id) and time.monotonic() - began < 5:
                    await asyncio.sleep(0.01)
                return held, time.monotonic() - began
        finally:
            await server.stop(None)

    held, took = asyncio.run(go())
    assert held and took < 1, took
