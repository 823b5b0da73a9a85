"""Optimistic follow-ups (A2A 1.1 draft: ``SendMessageConfiguration.ifGenerationMatch``):
a follow-up is taken only while the task's generation is the one it names, checked in
the compare-and-swap save of the follow-up itself. A mismatch is
TaskGenerationMismatchError on every binding (JSON-RPC -32010, HTTP 409 ABORTED, gRPC
ABORTED); a new task ignores the field; of concurrent follow-ups expecting the same
generation exactly one wins, on every store."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.server import start
from a2a.testing.client import WireClient
from tests.conftest import ALL_DATABASES

pytestmark = ALL_DATABASES

V11 = WireClient(version="1.1")


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"


def _waiting_task() -> tuple[str, int]:
    task = V11.send("ask:more?")["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task["id"], int(task["generation"])


def _follow_up(task_id: str, expected: Any, text: str = "ask:again?") -> dict:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], "taskId": task_id}
    return {"message": message, "configuration": {"ifGenerationMatch": expected, "returnImmediately": True}}


def _info(error: dict) -> dict:
    [info] = [d for d in error["data" if "data" in error else "details"] if d["@type"].endswith("ErrorInfo")]
    return info


def test_a_follow_up_that_names_the_generation_is_taken(use_store):
    task_id, generation = _waiting_task()
    answer = V11.result("SendMessage", _follow_up(task_id, str(generation)))["task"]
    # Two steps (spec 3.2.7 of the timeline draft): the client's message, then the status.
    assert int(answer["generation"]) == generation + 2 and answer["status"]["state"] == "TASK_STATE_SUBMITTED"


def test_a_stale_generation_is_refused_and_the_task_is_untouched(use_store):
    task_id, generation = _waiting_task()
    before = use_store.get(task_id)["history"]
    error = V11.rpc("SendMessage", _follow_up(task_id, generation - 1))["error"]
    assert error["code"] == -32010
    expected, current = generation - 1, generation
    assert error["message"] == f"Task generation mismatch: expected {expected} but current generation is {current}"
    assert _info(error)["reason"] == "TASK_GENERATION_MISMATCH"
    assert _info(error)["metadata"] == {
        "taskId": task_id,
        "expectedGeneration": str(generation - 1),
        "currentGeneration": str(generation),
    }
    stored = use_store.get(task_id)
    assert stored["status"]["state"] == "input-required" and stored["_seq"] == generation
    assert stored["history"] == before  # the follow-up was not kept


def test_http_json_answers_409_aborted():
    task_id, generation = _waiting_task()
    response = V11.request("POST", "/a2a/rest/message:send", json=_follow_up(task_id, generation + 5))
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == 409 and error["status"] == "ABORTED"
    assert _info(error)["reason"] == "TASK_GENERATION_MISMATCH"


def test_grpc_answers_aborted():
    task_id, generation = _waiting_task()

    async def go() -> grpc.aio.AioRpcError:
        server, port = await start("127.0.0.1:0")
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                message = pb.Message(
                    message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text="x")], task_id=task_id
                )
                config = pb.SendMessageConfiguration(if_generation_match=generation - 1, return_immediately=True)
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.SendMessage(pb.SendMessageRequest(message=message, configuration=config))
                return raised.value
        finally:
            await server.stop(None)

    error = asyncio.run(go())
    assert error.code() == grpc.StatusCode.ABORTED
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info) and info.reason == "TASK_GENERATION_MISMATCH"


def test_a_new_task_ignores_the_precondition():
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    task = V11.result("SendMessage", {"message": message, "configuration": {"ifGenerationMatch": "42"}})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_bad_value_is_invalid_params():
    task_id, _ = _waiting_task()
    error = V11.rpc("SendMessage", _follow_up(task_id, "three"))["error"]
    assert error["code"] == -32602 and "configuration.ifGenerationMatch" in error["message"]


def test_of_concurrent_follow_ups_expecting_one_generation_exactly_one_wins(use_store):
    task_id, generation = _waiting_task()
    follow_ups = [_follow_up(task_id, str(generation), f"ask:{n}") for n in range(6)]

    async def race() -> list[dict]:
        return list(await asyncio.gather(*(V11.arpc("SendMessage", f) for f in follow_ups)))

    answers = asyncio.run(race())
    won = [a for a in answers if "result" in a]
    lost = [a["error"] for a in answers if "error" in a]
    assert len(won) == 1, answers
    assert [e["code"] for e in lost] == [-32010] * 5, lost
    sent = {f["message"]["messageId"] for f in follow_ups}
    kept = {m["messageId"] for m in use_store.get(task_id)["history"]} & sent
    assert len(kept) == 1, kept  # the winner's message, no other
