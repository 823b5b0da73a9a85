"""Streaming over the real ASGI server: SendStreamingMessage / message/stream,
SubscribeToTask / tasks/resubscribe, multi-turn, incremental artifacts, direct
replies, keepalives and clients that go away."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import httpx
import orjson
import pytest

from a2a.core.events import bus
from a2a.protocol.model import GetParams, SendParams
from a2a.service import operations
from a2a.testing.client import rpc_body
from tests.conftest import ALL_DATABASES
from tests.helpers import live_rpc as rpc
from tests.helpers import sse, v03_message, v10_message
from tests.server import scripted_site

pytestmark = pytest.mark.slow

V10 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with scripted_site(tmp_path_factory.mktemp("streaming"), A2A_STREAM_KEEPALIVE="0.2") as base:
        yield base


def stream(
    base: str,
    method: str,
    params: dict,
    *,
    headers: dict | None = None,
    raw: list | None = None,
    request_id: str = "s1",
    on_first=None,
) -> list[dict]:
    """POST a streaming JSON-RPC call and collect every SSE data frame (calling
    ``on_first`` once the first one is in)."""
    body = rpc_body(method, params, request_id)
    return sse("POST", f"{base}/a2a/", json=body, headers=headers or {}, raw=raw, on_first=on_first)


def kinds_v10(events: list[dict]) -> list[str]:
    out = []
    for e in events:
        ((key, value),) = e["result"].items()
        out.append(f"{key}:{value['status']['state']}" if key in ("task", "statusUpdate") else key)
    return out


def test_v10_stream_sends_the_task_then_every_update_in_order(server):
    events = stream(
        server, "SendStreamingMessage", {"message": v10_message("progress:thinking;artifact:part one")}, headers=V10
    )
    assert all(e["jsonrpc"] == "2.0" and e["id"] == "s1" for e in events)
    assert kinds_v10(events) == [
        "task:TASK_STATE_SUBMITTED",
        "statusUpdate:TASK_STATE_WORKING",
        "statusUpdate:TASK_STATE_WORKING",
        "artifactUpdate",
        "artifactUpdate",
        "statusUpdate:TASK_STATE_COMPLETED",
    ]
    progress = events[2]["result"]["statusUpdate"]["status"]["message"]
    assert progress["role"] == "ROLE_AGENT" and progress["parts"] == [{"text": "thinking"}]
    assert events[3]["result"]["artifactUpdate"]["artifact"]["parts"] == [{"text": "part one"}]
    final_artifact = events[4]["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"]
    assert final_artifact == "done: progress:thinking;artifact:part one"
    task_id = events[0]["result"]["task"]["id"]
    assert {e["result"][k]["taskId"] for e in events[1:] for k in e["result"]} == {task_id}
    stored = rpc(server, "GetTask", {"id": task_id}, V10)["result"]
    assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(stored["artifacts"]) == 2


def test_v03_stream_events_carry_kind_and_final(server):
    events = [e["result"] for e in stream(server, "message/stream", {"message": v03_message("artifact:a")})]
    assert [e["kind"] for e in events] == [
        "task",
        "status-update",
        "artifact-update",
        "artifact-update",
        "status-update",
    ]
    assert events[0]["status"]["state"] == "submitted"
    assert [e["final"] for e in events if e["kind"] == "status-update"] == [False, True]
    assert events[-1]["status"]["state"] == "completed"
    assert events[2]["artifact"]["parts"] == [{"kind": "text", "text": "a"}]


def test_chunks_keep_append_and_last_chunk(server):
    events = stream(
        server,
        "SendStreamingMessage",
        {"message": v10_message("chunk:doc:one;chunk:doc:two;last:doc:three")},
        headers=V10,
    )
    chunks = [e["result"]["artifactUpdate"] for e in events if "artifactUpdate" in e["result"]]
    doc = [c for c in chunks if c["artifact"]["artifactId"] == "doc"]
    assert [(c["artifact"]["parts"][0]["text"], c["append"], c["lastChunk"]) for c in doc] == [
        ("one", False, False),
        ("two", True, False),
        ("three", True, True),
    ]
    task_id = events[0]["result"]["task"]["id"]
    stored = rpc(server, "GetTask", {"id": task_id}, V10)["result"]
    assembled = next(a for a in stored["artifacts"] if a["artifactId"] == "doc")
    assert [p["text"] for p in assembled["parts"]] == ["one", "two", "three"]


def test_multi_turn_input_required_then_continued(server):
    first = stream(server, "SendStreamingMessage", {"message": v10_message("ask:Which city?")}, headers=V10)
    last = first[-1]["result"]["statusUpdate"]
    assert last["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert last["status"]["message"]["parts"] == [{"text": "Which city?"}]
    task_id, context_id = last["taskId"], last["contextId"]
    # The follow-up continues the same task (and context), and completes it.
    second = stream(
        server,
        "SendStreamingMessage",
        {"message": v10_message("Paris", taskId=task_id, contextId=context_id)},
        headers=V10,
    )
    assert second[0]["result"]["task"]["id"] == task_id
    assert second[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task = rpc(server, "GetTask", {"id": task_id}, V10)["result"]
    assert [(m["role"], m["parts"][0]["text"]) for m in task["history"]] == [
        ("ROLE_USER", "ask:Which city?"),
        ("ROLE_AGENT", "Which city?"),
        ("ROLE_USER", "Paris"),
    ]
    assert task["artifacts"][0]["parts"] == [{"text": "done: Paris"}]
    # A finished task takes no more messages.
    error = rpc(server, "SendMessage", {"message": v10_message("more", taskId=task_id)}, V10)["error"]
    assert error["code"] == -32004


def test_auth_required_is_an_interrupted_state_too(server):
    events = stream(server, "message/stream", {"message": v03_message("auth:sign in at https://example.com")})
    assert events[-1]["result"]["status"]["state"] == "auth-required"
    assert events[-1]["result"]["final"] is True


def test_several_subscribers_all_get_every_event(server, tmp_path):
    gate = tmp_path / "open"
    sent = rpc(
        server,
        "SendMessage",
        {"message": v10_message(f"wait:{gate};progress:later"), "configuration": {"returnImmediately": True}},
        V10,
    )["result"]["task"]
    subscribed = threading.Barrier(4)  # three subscribers and the test
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futures = [
            pool.submit(
                stream,
                server,
                "SubscribeToTask",
                {"id": sent["id"]},
                headers=V10,
                request_id=f"sub{i}",
                on_first=lambda: subscribed.wait(10),
            )
            for i in range(3)
        ]
        subscribed.wait(10)
        gate.touch()  # every subscriber is in: let the task go on
        results = [f.result() for f in futures]
    for i, events in enumerate(results):
        assert all(e["id"] == f"sub{i}" for e in events)
        kinds = kinds_v10(events)
        assert kinds[0] in ("task:TASK_STATE_SUBMITTED", "task:TASK_STATE_WORKING")
        assert kinds[-1] == "statusUpdate:TASK_STATE_COMPLETED"
        progress = [
            e for e in events if "statusUpdate" in e["result"] and e["result"]["statusUpdate"]["status"].get("message")
        ]
        assert progress[0]["result"]["statusUpdate"]["status"]["message"]["parts"] == [{"text": "later"}]


def test_v03_resubscribe(server):
    # long enough to be still running when the resubscribe arrives on a loaded machine
    # (a terminal task cannot be resubscribed to: that answers an error, not a stream)
    sent = rpc(server, "message/send", {"message": v03_message("sleep:2"), "configuration": {"blocking": False}})[
        "result"
    ]
    events = [e["result"] for e in stream(server, "tasks/resubscribe", {"id": sent["id"]})]
    assert events[0]["kind"] == "task" and events[0]["id"] == sent["id"]
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is True


def test_keepalive_comments_while_nothing_happens(server):
    raw: list[str] = []
    events = stream(server, "SendStreamingMessage", {"message": v10_message("sleep:0.7")}, headers=V10, raw=raw)
    assert ": keepalive" in raw
    assert kinds_v10(events)[-1] == "statusUpdate:TASK_STATE_COMPLETED"


def test_a_client_that_goes_away_does_not_stop_the_task(server):
    body = rpc_body("SendStreamingMessage", {"message": v10_message("sleep:0.4")})
    with httpx.stream("POST", f"{server}/a2a/", json=body, headers=V10, timeout=10) as response:
        first = next(line for line in response.iter_lines() if line.startswith("data: "))
    task_id = orjson.loads(first[6:])["result"]["task"]["id"]
    deadline = time.monotonic() + 10
    while rpc(server, "GetTask", {"id": task_id}, V10)["result"]["status"]["state"] != "TASK_STATE_COMPLETED":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_direct_reply_is_a_message(server):
    result = rpc(server, "SendMessage", {"message": v10_message("reply:hello there")}, V10)["result"]
    assert set(result) == {"message"}
    assert result["message"]["role"] == "ROLE_AGENT"
    assert result["message"]["parts"] == [{"text": "hello there"}]
    v03 = rpc(server, "message/send", {"message": v03_message("reply:hi")})["result"]
    assert v03["kind"] == "message" and v03["parts"] == [{"kind": "text", "text": "hi"}]


def test_stream_that_fails_ends_with_the_failed_status(server):
    events = stream(server, "SendStreamingMessage", {"message": v10_message("fail:no luck")}, headers=V10)
    status = events[-1]["result"]["statusUpdate"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert status["message"]["parts"] == [{"text": "no luck"}]


@ALL_DATABASES
def test_closing_a_stream_early_leaves_no_subscription(use_store, settings):
    """In-process: the operation's generator, closed after its first item, unsubscribes."""
    settings.A2A_HANDLER = "tests.handlers.scripted"

    async def go() -> tuple[str, int, int]:
        message = {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "sleep:0.2"}],
        }
        items = operations.stream_message(SendParams(message=message))
        first = await anext(items)
        task_id = first.task["id"]
        during = bus.subscriber_count(task_id)
        await items.aclose()
        return task_id, during, bus.subscriber_count(task_id)

    task_id, during, after = asyncio.run(go())
    assert (during, after) == (1, 0)

    async def subscribe_and_close() -> int:
        items = operations.subscribe_to_task(GetParams(id=task_id))
        await anext(items)
        await items.aclose()
        return bus.subscriber_count(task_id)

    assert asyncio.run(subscribe_and_close()) == 0
