"""Interoperability with a2a-sdk 0.3, the v0.3 generation's own client, over HTTP+JSON (see test_interop.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop.support import VENV03, kinds

pytestmark = [pytest.mark.slow, pytest.mark.interop]

# --- a2a-sdk 0.3: the v0.3 generation's own client, over HTTP+JSON --------------------------------


def sdk03(run_client03, base: str, scenario: str, *options: str) -> dict[str, Any]:
    observed = run_client03("sdk03_client.py", base, scenario, *options)
    assert observed["sdk"]["module"].startswith(str(VENV03))
    # Its RestTransport, at the HTTP+JSON interface of the v0.3 card (it appends "/v1/...").
    assert observed["sdk"]["transport"] == f"RestTransport {base}/a2a/rest"
    assert observed["sdk"]["agent"] == "toolnexus-agent"
    return observed


def test_sdk03_send_blocking_and_get(run_client03, server):
    observed = sdk03(run_client03, server, "send-blocking")
    assert observed["task"]["state"] == "completed"
    assert observed["task"]["artifacts"] == ["first", "done: progress:thinking;artifact:first"]
    assert observed["fetched"] == observed["task"]


def test_sdk03_send_non_blocking_then_poll(run_client03, server):
    observed = sdk03(run_client03, server, "send-nonblocking")
    assert observed["submitted"]["state"] == "submitted"
    assert observed["final"]["state"] == "completed" and observed["polls"] >= 2
    assert observed["final"]["artifacts"] == ["later", "done: sleep:0.3;artifact:later"]


def test_sdk03_direct_reply(run_client03, server):
    assert sdk03(run_client03, server, "reply")["response"] == [{"kind": "message", "text": "hi there"}]


def test_sdk03_errors_are_http_statuses(run_client03, server):
    """a2a-sdk 0.3's REST client reports an error by its HTTP status."""
    observed = sdk03(run_client03, server, "errors")
    http_error = "A2AClientHTTPError"
    assert observed["getUnknown"] == {"type": http_error, "status": 404}
    assert observed["cancelUnknown"] == {"type": http_error, "status": 404}
    assert observed["cancelCompleted"] == {"type": http_error, "status": 400}
    assert observed["streamToUnknown"] == {"type": http_error, "status": 404}
    assert observed["failed"]["state"] == "failed" and observed["failed"]["statusText"] == "boom"


def test_sdk03_cancel(run_client03, server):
    observed = sdk03(run_client03, server, "cancel")
    assert observed["canceled"]["state"] == "canceled" and observed["fetched"]["state"] == "canceled"


def test_sdk03_stream(run_client03, server):
    events = sdk03(run_client03, server, "stream")["events"]
    assert kinds(events[1:]) == [
        "status-update:working",
        "status-update:working",
        "artifact-update",
        "artifact-update",
        "status-update:working",
        "artifact-update",
        "status-update:completed",
    ]
    assert [e["final"] for e in events if e["kind"] == "status-update"] == [False, False, False, True]
    first, last = events[3], events[4]
    assert (first["artifactId"], first["append"], first["lastChunk"]) == ("c1", False, False)
    assert (last["artifactId"], last["text"], last["append"], last["lastChunk"]) == ("c1", "world", True, True)


def test_sdk03_resubscribe(run_client03, server):
    observed = sdk03(run_client03, server, "resubscribe")
    events = observed["events"]
    assert events[0] == {"kind": "task", "id": observed["taskId"], "state": events[0]["state"]}
    assert kinds(events[1:]) == [
        "status-update:working",
        "artifact-update",
        "artifact-update",
        "status-update:completed",
    ]
    assert observed["final"]["state"] == "completed"


def test_sdk03_multi_turn(run_client03, server):
    observed = sdk03(run_client03, server, "multi-turn")
    assert observed["asked"]["state"] == "input-required" and observed["asked"]["statusText"] == "Which city?"
    assert observed["answered"]["id"] == observed["asked"]["id"]
    assert observed["answered"]["artifacts"] == ["Paris", "done: artifact:Paris"]
    assert observed["final"]["historyRoles"] == ["user", "agent", "user"]


def test_sdk03_push_configs_and_delivery(run_client03, server, receiver):
    hook = receiver.hook()
    observed = sdk03(run_client03, server, "push", "--webhook", hook)
    task_id = observed["taskId"]
    assert observed["created"] == [
        {"taskId": task_id, "id": name, "url": f"{hook}/{name}", "token": f"tok-{name}"} for name in ("one", "two")
    ]
    assert observed["got"] == observed["created"][1]
    assert observed["getUnknown"] == {"type": "A2AClientHTTPError", "status": 404}
    for name in ("one", "two"):
        receiver.delivered(f"{hook}/{name}", "0.3", f"tok-{name}", task_id)  # v0.3 deliveries: the Task


def test_sdk03_card(run_client03, server):
    observed = sdk03(run_client03, server, "card")
    assert observed["preferred"] == "JSONRPC" and observed["interfaces"] == ["JSONRPC", "HTTP+JSON"]
