"""The task timeline of the A2A 1.1 draft (spec 3.2.4, 3.2.7, 3.2.8), on every store and
on JSON-RPC, HTTP+JSON and gRPC, as an ``A2A-Version: 1.1`` client reads it.

A multi-turn task reads in order (client messages and agent statuses, each with its
generation; the artifacts' start and end generations fill the gaps); a progress message
that keeps the state and a follow-up are each an entry and a step; ``timelineLength``
limits the three operations' answers.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from google.protobuf import json_format

from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.server import start
from a2a.testing.client import WireClient
from tests.conftest import ALL_DATABASES

pytestmark = ALL_DATABASES

V11 = WireClient(version="1.1")
#: working, progress "one", a streamed artifact (two chunks), then a question.
FIRST_TURN = "progress:one;chunk:c:aa;last:c:bb;ask:more?"
#: The answer: a progress message, then the result.
SECOND_TURN = "progress:two"


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"


def _message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message.get("parts") or ())


def _steps(task: dict[str, Any]) -> list[tuple[int, str, str]]:
    """The timeline as (generation, a client message's text or an agent status's state, its text)."""
    steps = []
    for entry in task.get("timeline") or ():
        if "message" in entry:
            steps.append((int(entry["generation"]), "message", _text(entry["message"])))
        else:
            status = entry["status"]
            steps.append((int(entry["generation"]), status["state"], _text(status.get("message") or {})))
    return steps


def two_turns() -> str:
    """A task that asked a question and was answered: its id."""
    first = V11.send(FIRST_TURN)["task"]
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    second = V11.send(SECOND_TURN, task_id=first["id"])["task"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    return first["id"]


EXPECTED = [
    (1, "message", FIRST_TURN),
    (2, "TASK_STATE_WORKING", ""),
    (3, "TASK_STATE_WORKING", "one"),
    # 4, 5: the artifact "c" (its two chunks)
    (6, "TASK_STATE_INPUT_REQUIRED", "more?"),
    (7, "message", SECOND_TURN),
    (8, "TASK_STATE_SUBMITTED", ""),
    (9, "TASK_STATE_WORKING", ""),
    (10, "TASK_STATE_WORKING", "two"),
    # 11: the result's artifact
    (12, "TASK_STATE_COMPLETED", ""),
]


def _accounted(task: dict[str, Any]) -> None:
    """Every generation up to the task's is an entry or an artifact's start or end, once."""
    entries = [g for g, _, _ in _steps(task)]
    spans = [int(a[k]) for a in task.get("artifacts") or () for k in ("startGeneration", "endGeneration") if k in a]
    assert entries == sorted(set(entries)), entries  # in order, no two at one generation
    assert sorted(set(entries) | set(spans)) == list(range(1, int(task["generation"]) + 1)), (entries, spans)


def test_a_multi_turn_task_reads_in_order_on_json_rpc(use_store):
    task = V11.result("GetTask", {"id": two_turns()})
    assert _steps(task) == EXPECTED
    streamed, result = task["artifacts"]
    assert (streamed["startGeneration"], streamed["endGeneration"]) == ("4", "5")
    assert (result["startGeneration"], result["endGeneration"]) == ("11", "11")
    assert task["generation"] == "12"
    _accounted(task)
    assert use_store.get(task["id"])["_seq"] == 12  # the resumable streams' number: one counter


def test_the_same_timeline_on_http_json_and_grpc(use_store):
    task_id = two_turns()
    rest = V11.rest("GET", f"/tasks/{task_id}").json()
    assert _steps(rest) == EXPECTED
    assert rest == V11.result("GetTask", {"id": task_id})
    grpc_task = grpc_call("GetTask", pb.GetTaskRequest(id=task_id))
    assert _steps(grpc_task) == EXPECTED
    spans = [(a["startGeneration"], a.get("endGeneration")) for a in grpc_task["artifacts"]]
    assert spans == [("4", "5"), ("11", "11")]


def test_a_streaming_artifact_has_no_end_generation_yet(use_store, tmp_path):
    gate = tmp_path / "gate"
    task = V11.send(f"chunk:c:aa;wait:{gate}", blocking=False)["task"]
    try:
        for _ in range(500):
            got = V11.result("GetTask", {"id": task["id"], "currentGeneration": "2"})
            if got.get("artifacts"):
                break
        [artifact] = got["artifacts"]
        assert artifact["startGeneration"] == "3" and "endGeneration" not in artifact
    finally:
        gate.touch()


def test_a_progress_message_that_keeps_the_state_is_an_entry_and_a_step(use_store):
    task = V11.send("progress:half;progress:all;ask:ok?")["task"]
    steps = _steps(task)
    assert steps[1:4] == [
        (2, "TASK_STATE_WORKING", ""),
        (3, "TASK_STATE_WORKING", "half"),
        (4, "TASK_STATE_WORKING", "all"),
    ]
    assert task["generation"] == "5"


def test_a_follow_up_is_an_entry_and_a_step(use_store):
    asked = V11.send("ask:name?")["task"]
    generation = int(asked["generation"])
    answer = V11.send("ask:again?", task_id=asked["id"], blocking=False)["task"]
    assert int(answer["generation"]) == generation + 2  # its message, then submitted
    assert _steps(answer)[-2:] == [
        (generation + 1, "message", "ask:again?"),
        (generation + 2, "TASK_STATE_SUBMITTED", ""),
    ]


# --- timelineLength (spec 3.2.4) -----------------------------------------------------


@pytest.mark.parametrize("length", [None, 0, 1, 4])
def test_timeline_length_on_get_task_on_each_binding(use_store, length):
    task_id = two_turns()
    params: dict[str, Any] = {"id": task_id}
    query = ""
    if length is not None:
        params["timelineLength"] = length
        query = f"?timelineLength={length}"
    wanted = EXPECTED if length is None else EXPECTED[len(EXPECTED) - length :] if length else []
    task = V11.result("GetTask", params)
    assert _steps(task) == wanted
    assert ("timeline" in task) == bool(wanted)  # 0: the field is left out
    assert len(task["history"]) == 3  # historyLength is its own
    assert _steps(V11.rest("GET", f"/tasks/{task_id}{query}").json()) == wanted
    request = pb.GetTaskRequest(id=task_id, **({} if length is None else {"timeline_length": length}))
    assert _steps(grpc_call("GetTask", request)) == wanted


@pytest.mark.parametrize("length", [None, 0, 1, 3])
def test_timeline_length_on_send_message(use_store, length):
    asked = V11.send("ask:name?")["task"]
    config = {} if length is None else {"timelineLength": length}
    answer = V11.send("ask:again?", task_id=asked["id"], configuration=config)["task"]
    everything = _steps(V11.result("GetTask", {"id": asked["id"]}))
    wanted = everything if length is None else everything[len(everything) - length :] if length else []
    assert _steps(answer) == wanted and len(everything) == 7


@pytest.mark.parametrize("length", [None, 0, 1, 3])
def test_timeline_length_on_list_tasks_on_each_binding(use_store, length):
    task_id = two_turns()
    params = {} if length is None else {"timelineLength": length}
    wanted = EXPECTED if length is None else EXPECTED[len(EXPECTED) - length :] if length else []
    [listed] = V11.result("ListTasks", params)["tasks"]
    assert listed["id"] == task_id and _steps(listed) == wanted
    query = "" if length is None else f"?timelineLength={length}"
    [rested] = V11.rest("GET", f"/tasks{query}").json()["tasks"]
    assert _steps(rested) == wanted
    request = pb.ListTasksRequest(**({} if length is None else {"timeline_length": length}))
    [grpc_listed] = grpc_call("ListTasks", request)["tasks"]
    assert _steps(grpc_listed) == wanted


def test_a_bad_timeline_length_is_invalid_params(use_store):
    task_id = V11.send("hi")["task"]["id"]
    for bad in (-1, "x", True):
        error = V11.rpc("GetTask", {"id": task_id, "timelineLength": bad})["error"]
        assert error["code"] == -32602, error
    assert V11.rest("GET", f"/tasks/{task_id}?timelineLength=-2").status_code == 400


# --- gRPC ------------------------------------------------------------------------------


def grpc_call(method: str, request: Any, version: str = "1.1") -> dict[str, Any]:
    """The answer of one gRPC call (a ``Task``, or a ``ListTasksResponse``) as ProtoJSON."""

    async def go() -> Any:
        server, port = await start("127.0.0.1:0")
        try:
            import grpc

            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                return await getattr(stub, method)(request, metadata=(("a2a-version", version),))
        finally:
            await server.stop(None)

    return json_format.MessageToDict(asyncio.run(go()))


def test_timeline_length_on_send_streaming_message(use_store):
    asked = V11.send("ask:name?")["task"]
    message = _message("ask:again?", taskId=asked["id"])
    frames = V11.stream_rpc("SendStreamingMessage", {"message": message, "configuration": {"timelineLength": 2}})
    opening = frames[0]["result"]["task"]
    assert _steps(opening) == [(4, "message", "ask:again?"), (5, "TASK_STATE_SUBMITTED", "")]


def test_a_resumed_stream_skips_the_follow_up_s_message_and_get_task_has_it(use_store):
    opened = V11.stream_rpc("SendStreamingMessage", {"message": _message("ask:name?")})  # kept: a stream follows it
    task_id = opened[0]["result"]["task"]["id"]  # message 1, working 2, input-required 3
    V11.send(SECOND_TURN, task_id=task_id)
    frames = [f["result"] for f in V11.stream_rpc("SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": "3"})]
    numbers = [int(next(iter(f.values()))["generation"]) for f in frames]
    # 4, the follow-up's message, is on no stream (spec 3.2.8): a gap of one, and no other
    assert numbers == list(range(5, 5 + len(numbers))) and len(numbers) == 5, frames
    reconciled = V11.result("GetTask", {"id": task_id})  # what a client that saw the gap reads
    assert (4, "message", SECOND_TURN) in _steps(reconciled)
