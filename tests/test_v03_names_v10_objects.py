"""The payload rule "v0.3 names, v1.0 objects" (docs/protocol.md): a ``message/send`` or
``message/stream`` without ``A2A-Version`` whose message has a v0.3 role and parts
without ``kind`` (what pydantic's fasta2a client 2.x sends) is answered with v1.0's
objects under v0.3's names; standard v0.3 and v1.0 requests are answered as without the rule.

In-process, through the ASGI app (the client itself: tests/interop/test_interop_fasta2a.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from a2a.protocol import V03, V10, V10_V03_NAMES, dialect_for
from a2a.protocol.v03 import v10_parts_v03_role, v10_shaped
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import ASGI, v03_message, v10_message
from tests.test_spec_details import HEADERS, frames

SEND, STREAM = "message/send", "message/stream"


def fasta2a_message(text: str, **extra: Any) -> dict[str, Any]:
    """A message as fasta2a 2.1's client writes it: v0.3's role, v1.0's parts, no ``kind``."""
    return {"role": "user", "parts": [{"text": text}], "messageId": str(uuid.uuid4()), **extra}


@pytest.fixture
def store(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.handlers.scripted"
    return get_task_store()


# --- the rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        (SEND, {"message": fasta2a_message("a")}, True),
        (STREAM, {"message": fasta2a_message("a", role="agent")}, True),
        (SEND, {"message": {"role": "user", "parts": [{"url": "https://h/f", "mediaType": "image/png"}]}}, True),
        (SEND, {"message": {"role": "user", "parts": [{"raw": "aGk="}, {"data": {}}]}}, True),
        (SEND, {"message": v03_message("a")}, False),  # kind on the message and its parts
        (SEND, {"message": {**fasta2a_message("a"), "kind": "message"}}, False),
        (SEND, {"message": {"role": "user", "parts": [{"kind": "text", "text": "a"}]}}, False),
        (SEND, {"message": {"role": "user", "parts": [{"file": {"uri": "https://h/f"}}]}}, False),  # v0.3's file
        (SEND, {"message": {"role": "user", "parts": [{"text": "a"}, "b"]}}, False),
        (SEND, {"message": {"role": "user", "parts": []}}, False),
        (SEND, {"message": {"role": "user"}}, False),
        (SEND, {"message": v10_message("a")}, False),  # v1.0's role: the v1.0 rule's
        (SEND, {"message": {"parts": [{"text": "a"}]}}, False),
        (SEND, {}, False),
        (SEND, "x", False),
        ("tasks/get", {"id": "t"}, False),
        ("SendMessage", {"message": fasta2a_message("a")}, False),  # the toolnexus dialect's names
    ],
)
def test_the_rule(method, params, expected):
    assert v10_parts_v03_role(method, params) is expected
    assert not (expected and v10_shaped(method, params))  # the two rules never both apply
    assert (dialect_for(None, method, params) is V10_V03_NAMES) is expected
    assert dialect_for("", method, params) is dialect_for(None, method, params)
    assert dialect_for("0.3", method, params) is V03  # a version said so: the payload does not count
    assert dialect_for("1.0", method, params) is V10


# --- what it answers ---------------------------------------------------------------------------


def test_send_answers_a_wrapped_task_with_v03_states_and_roles(store):
    result = ASGI.send(fasta2a_message("artifact:report"))
    assert list(result) == ["task"]  # fasta2a reads result.task (or result.message)
    task = result["task"]
    assert "kind" not in task and task["status"]["state"] == "completed"
    [user] = task["history"]
    assert user["role"] == "user" and user["parts"] == [{"text": "artifact:report"}] and "kind" not in user
    assert [a["parts"] for a in task["artifacts"]] == [[{"text": "report"}], [{"text": "done: artifact:report"}]]
    assert store.get(task["id"])["status"]["state"] == "completed"


def test_interrupted_and_failed_states_are_v03_names(store):
    asked = ASGI.send(fasta2a_message("ask:Which city?"))["task"]
    assert asked["status"]["state"] == "input-required"
    follow_up = {"message": fasta2a_message("done", taskId=asked["id"], contextId=asked["contextId"])}
    answer = ASGI.rpc(SEND, follow_up)["result"]["task"]
    assert answer["id"] == asked["id"] and answer["status"]["state"] == "completed"
    failed = ASGI.send(fasta2a_message("fail:no such city"))["task"]
    assert failed["status"]["state"] == "failed"
    assert failed["status"]["message"]["parts"] == [{"text": "no such city"}]


def test_a_direct_reply_is_a_wrapped_message(store):
    result = ASGI.send(fasta2a_message("reply:hello"))
    assert list(result) == ["message"]
    assert result["message"]["role"] == "agent" and result["message"]["parts"] == [{"text": "hello"}]


def test_blocking_false_is_v03s_and_answers_at_once(store):
    config = {"acceptedOutputModes": []}  # fasta2a's
    task = ASGI.send(fasta2a_message("sleep:0.2"), configuration=config, blocking=False)["task"]
    assert task["status"]["state"] == "submitted"


def test_file_and_data_parts_are_v10s(store):
    parts = [
        {"text": "hi", "mediaType": "text/plain"},
        {"url": "https://example.com/y.txt", "mediaType": "text/plain", "filename": "y.txt"},
        {"raw": "aGk=", "mediaType": "text/plain", "filename": "hi.txt"},
        {"data": {"a": 1}},
    ]
    params = {"message": {"role": "user", "parts": parts, "messageId": "m1"}}
    task = ASGI.rpc(SEND, params)["result"]["task"]
    assert task["history"][0]["parts"] == [{"text": "hi"}, *parts[1:]]


def test_errors_are_plain_jsonrpc_errors(store):
    params = {"message": {"role": "user", "parts": [{"text": 1}], "messageId": "m1"}}
    error = ASGI.rpc(SEND, params)["error"]
    assert error["code"] == -32602
    assert error["data"] == {"field": "message.parts[0].text", "description": "must be a string"}


def test_a_stream_refused_before_its_first_event_is_a_stream_of_the_error(store):
    params = {"message": {"role": "user", "parts": [{"raw": "not base64!"}], "messageId": "m1"}}
    [event] = frames(ASGI.rpc_response(STREAM, params))
    assert event["error"] == {
        "code": -32602,
        "message": event["error"]["message"],
        "data": {"field": "message.parts[0].raw", "description": "is not valid base64"},
    }


def test_stream_events_are_stream_responses_with_v03_states(store):
    events = frames(ASGI.rpc_response(STREAM, {"message": fasta2a_message("progress:half")}))
    results = [e["result"] for e in events]
    assert list(results[0]) == ["task"] and results[0]["task"]["status"]["state"] == "submitted"
    assert [list(r) for r in results[1:]] == [["statusUpdate"]] * 2 + [["artifactUpdate"], ["statusUpdate"]]
    updates = [r["statusUpdate"] for r in results if "statusUpdate" in r]
    assert [u["status"]["state"] for u in updates] == ["working", "working", "completed"]
    assert updates[1]["status"]["message"]["role"] == "agent"
    assert all("final" not in u and "kind" not in u for u in updates)


# --- what the others get: unchanged ------------------------------------------------------------


def test_a_v03_request_gets_the_bare_v03_task(store):
    answer = ASGI.rpc(SEND, {"message": v03_message("hello")})["result"]
    assert answer == V03.render_send_result(store.get(answer["id"]))
    assert answer["kind"] == "task" and answer["status"]["state"] == "completed"
    assert answer["history"][0]["parts"] == [{"kind": "text", "text": "hello"}]


@pytest.mark.parametrize("version", [None, "1.0"])
def test_a_v10_request_gets_v10s_answer(store, version):
    answer = ASGI.rpc(
        SEND if version is None else "SendMessage", {"message": v10_message("hello")}, headers=HEADERS[version]
    )
    task = answer["result"]["task"]
    assert answer["result"] == V10.render_send_result(store.get(task["id"]))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and task["history"][0]["role"] == "ROLE_USER"


def test_a_get_stays_v03(store):
    """``tasks/get`` has the same params in every dialect, so nothing tells: v0.3's bare
    Task, which fasta2a's GetTaskResponse reads too."""
    task_id = ASGI.send(fasta2a_message("hello"))["task"]["id"]
    answer = ASGI.rpc("tasks/get", {"id": task_id}, request_id=None)  # fasta2a's null id
    assert answer["id"] is None and answer["result"] == V03.render_task(store.get(task_id))
    assert answer["result"]["status"]["state"] == "completed"
