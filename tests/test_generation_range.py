"""The 1.1 draft's generation fields are int64 (``currentGeneration``,
``ifGenerationMatch``): a value past 2^63 - 1 is refused as invalid params on every
binding (JSON-RPC, HTTP+JSON body and query, gRPC), as the other out-of-range values
are, and the largest int64 is taken."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import pytest

from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.server import start
from a2a.testing.client import WireClient
from tests.conftest import ALL_DATABASES
from tests.test_generation_match import _scripted, _waiting_task  # noqa: F401 (_scripted: its autouse fixture)

pytestmark = ALL_DATABASES

V11 = WireClient(version="1.1")
INT64_MAX = 2**63 - 1
PAST_INT64 = [2**63, str(2**63), 2**64 - 1, str(2**64 - 1)]
TOO_LARGE = f"must be at most {INT64_MAX}"


def _follow_up(task_id: str, expected: Any) -> dict:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "ask:again?"}], "taskId": task_id}
    return {"message": message, "configuration": {"ifGenerationMatch": expected, "returnImmediately": True}}


@pytest.mark.parametrize("value", PAST_INT64)
def test_jsonrpc_refuses_a_current_generation_past_int64(value):
    task_id, _ = _waiting_task()  # a waiting task: an accepted value would hold the call
    error = V11.rpc("GetTask", {"id": task_id, "currentGeneration": value})["error"]
    assert error["code"] == -32602
    assert error["message"] == f"Invalid params: currentGeneration: {TOO_LARGE}"


@pytest.mark.parametrize("value", PAST_INT64)
def test_jsonrpc_refuses_an_if_generation_match_past_int64_and_keeps_the_task(use_store, value):
    task_id, generation = _waiting_task()
    before = use_store.get(task_id)
    error = V11.rpc("SendMessage", _follow_up(task_id, value))["error"]
    assert error["code"] == -32602
    assert error["message"] == f"Invalid params: configuration.ifGenerationMatch: {TOO_LARGE}"
    after = use_store.get(task_id)
    assert after["_seq"] == generation and after["history"] == before["history"]


def test_the_largest_int64_is_taken():
    done = V11.send("hi")["task"]  # terminal: a long-poll answers at once
    assert V11.result("GetTask", {"id": done["id"], "currentGeneration": str(INT64_MAX)})["id"] == done["id"]
    task_id, _ = _waiting_task()
    error = V11.rpc("SendMessage", _follow_up(task_id, INT64_MAX))["error"]
    assert error["code"] == -32010  # taken, and not the task's generation


def test_http_json_refuses_them_in_the_query_and_the_body():
    task_id, _ = _waiting_task()
    response = V11.request("GET", f"/a2a/rest/tasks/{task_id}", params={"currentGeneration": str(2**63)})
    assert response.status_code == 400
    assert TOO_LARGE in response.json()["error"]["message"]
    response = V11.request("POST", "/a2a/rest/message:send", json=_follow_up(task_id, str(2**64 - 1)))
    assert response.status_code == 400
    assert "ifGenerationMatch" in response.json()["error"]["message"]


def test_grpc_refuses_the_wire_values_past_int64():
    """On the wire an int64 is a varint: 2^63 and 2^64 - 1 arrive as -2^63 and -1,
    below the minimum (0), refused as invalid arguments."""
    task_id, _ = _waiting_task()
    past = pb.GetTaskRequest(id="t", current_generation=-(2**63)).SerializeToString()
    assert past == pb.GetTaskRequest(id="t").SerializeToString() + bytes([0x20]) + _varint(2**63)

    async def go() -> list[grpc.aio.AioRpcError]:
        server, port = await start("127.0.0.1:0")
        errors = []
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                v11 = (("a2a-version", "1.1"),)
                for value in (-(2**63), -1):
                    with pytest.raises(grpc.aio.AioRpcError) as raised:
                        await stub.GetTask(pb.GetTaskRequest(id=task_id, current_generation=value), metadata=v11)
                    errors.append(raised.value)
                message = pb.Message(
                    message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text="x")], task_id=task_id
                )
                config = pb.SendMessageConfiguration(if_generation_match=-1, return_immediately=True)
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.SendMessage(pb.SendMessageRequest(message=message, configuration=config), metadata=v11)
                errors.append(raised.value)
        finally:
            await server.stop(None)
        return errors

    for error in asyncio.run(go()):
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "Generation" in error.details() and "must be at least 0" in error.details()


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])
