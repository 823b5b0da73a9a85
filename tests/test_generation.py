"""Task generation (A2A 1.1 draft, spec 3.2.7): one counter with the resumable streams'
event numbers, exposed to ``A2A-Version: 1.1`` clients only, on every store.

Exactly +1 per event across a task with progress, chunks and a follow-up; the SSE ``id``
and the generation never disagree; a v1.0 answer carries none (the strict v1.0 schema's
``Task`` forbids unknown properties).
"""

from __future__ import annotations

import uuid

import orjson
import pytest

from a2a.testing.client import WireClient
from tests.conftest import ALL_DATABASES

pytestmark = ALL_DATABASES

V11 = WireClient(version="1.1")
#: Events: submitted, working, one, first, aa, bb, input-required (generations 1..7).
FIRST_TURN = "progress:one;artifact:first;chunk:c:aa;last:c:bb;ask:more?"
#: The follow-up's: its message (8, on no stream), submitted, working, two, the result, completed (9..13).
SECOND_TURN = "progress:two"


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_STREAM_KEEPALIVE = 1


def _message(text: str, **extra) -> dict:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def _stream(params: dict, client: WireClient = V11) -> list[tuple[int, dict]]:
    """The (SSE id, StreamResponse) pairs of a SendStreamingMessage."""
    raw: list[str] = []
    frames = client.stream_rpc("SendStreamingMessage", params, raw=raw)
    ids = [int(line[4:]) for line in raw if line.startswith("id: ")]
    assert len(ids) == len(frames), raw
    return [(i, f["result"]) for i, f in zip(ids, frames, strict=True)]


def _generation(response: dict) -> int:
    ((_, value),) = response.items()
    assert isinstance(value["generation"], str), value  # int64: a string in ProtoJSON
    return int(value["generation"])


def test_every_event_is_one_more_generation_across_progress_chunks_and_a_follow_up(use_store):
    first = _stream({"message": _message(FIRST_TURN)})
    task_id = first[0][1]["task"]["id"]
    follow_up = _stream({"message": _message(SECOND_TURN, taskId=task_id)})
    seen = first + follow_up
    # The follow-up's message is a step of its own (the draft's timeline, spec 3.2.7): 8,
    # which no stream shows (a client message is read through GetTask, spec 3.2.8).
    numbers = [*range(1, 8), *range(9, 14)]
    assert [_generation(r) for _, r in seen] == numbers, seen
    assert [i for i, _ in seen] == numbers  # Last-Event-ID and generation: one number
    kinds = [next(iter(r)) for _, r in seen]
    first_turn = ["task", "statusUpdate", "statusUpdate", *(["artifactUpdate"] * 3), "statusUpdate"]
    assert kinds == [*first_turn, "task", "statusUpdate", "statusUpdate", "artifactUpdate", "statusUpdate"]
    task = V11.result("GetTask", {"id": task_id})
    assert task["generation"] == "13" and task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert use_store.get(task_id)["_seq"] == 13  # kept with the task, by the store
    assert [e["generation"] for e in task["timeline"] if "message" in e] == ["1", "8"]


def test_a_v10_client_sees_no_generation_anywhere(use_store):
    v10 = WireClient(version="1.0")
    seen = _stream({"message": _message("progress:one;artifact:first")}, v10)
    task_id = seen[0][1]["task"]["id"]
    assert all("generation" not in next(iter(r.values())) for _, r in seen)
    assert "generation" not in v10.result("GetTask", {"id": task_id})
    assert "generation" not in v10.send("hello")["task"]
    listed = v10.result("ListTasks", {})["tasks"]
    assert listed and all("generation" not in t for t in listed)
    assert "generation" in V11.result("ListTasks", {})["tasks"][0]


def test_a_task_saved_before_generations_reads_as_generation_1(use_store):
    task_id = V11.send("hi", blocking=True)["task"]["id"]
    stored = use_store.get(task_id)
    del stored["_seq"]
    use_store.save(stored)
    assert V11.result("GetTask", {"id": task_id})["generation"] == "1"


def test_the_card_offers_1_1_on_each_binding(settings):
    settings.A2A_GRPC_URL = "grpc.example.com:50051"
    card = V11.request("GET", "/.well-known/agent-card.json").json()
    offered = {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]}
    assert {("JSONRPC", "1.1"), ("HTTP+JSON", "1.1"), ("GRPC", "1.1"), ("JSONRPC", "1.0")} <= offered
    v10 = V11.request("GET", "/.well-known/agent-card.json", version="1.0").json()
    assert card == v10 and "protocolVersion" not in card  # asked as 1.1: the strict v1.0 card


def test_a_subscription_opening_on_a_starting_task_is_numbered_by_what_it_holds(use_store):
    """SubscribeToTask as the runner starts the task, many times over: the snapshot's SSE
    id is its generation, the state it shows is the one its number was given to (the
    task's log says), and the events after it follow on with no number twice (issue 32's
    "id 1 while working, then working again as 2" came from a direct handler's first act:
    tests/test_handler_api.py; this guards the invariant for every task)."""
    for _ in range(15):
        task_id = V11.send("progress:x;sleep:0.05", blocking=False)["task"]["id"]
        response = V11.rpc_response("SubscribeToTask", {"id": task_id})
        if not response.headers["content-type"].startswith("text/event-stream"):
            continue  # finished before the subscription: nothing to open on
        raw = response.text.splitlines()
        ids = [int(line[4:]) for line in raw if line.startswith("id: ")]
        results = [orjson.loads(line[6:])["result"] for line in raw if line.startswith("data: ")]
        snapshot = results[0]["task"]
        assert int(snapshot["generation"]) == ids[0]
        assert ids == list(range(ids[0], ids[0] + len(ids))), ids
        logged = {e["s"]: e for e in use_store.get(task_id).get("_events", ())}
        if ids[0] in logged and logged[ids[0]]["k"] == "s":  # (1, the task as created, is not logged)
            assert logged[ids[0]]["status"]["state"] == snapshot["status"]["state"].removeprefix(
                "TASK_STATE_"
            ).lower().replace("_", "-")
