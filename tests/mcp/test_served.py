"""The 2025-11-25 endpoint through a real server (uvicorn, the file store): questions put
as ``elicitation/create`` on the calls' own response streams and answered by POSTs on
other connections while other calls run, ``notifications/cancelled`` cancelling one
running call among them, and a session's end (``DELETE``) holding in the next process."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp.support import ACCEPT, ELICIT, LEGACY
from tests.server import manage, running_server, site_env

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    found = site_env(
        TASK_STORE=f"file:{tmp_path / 'tasks'}",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        A2A_HANDLER="tests.handlers.scripted",
        A2A_MCP="true",
    )
    manage("migrate", "--noinput", env=found)
    return found


@pytest.fixture
def base(env, tmp_path) -> Iterator[str]:
    with running_server(env, log=tmp_path / "server.log") as url:
        yield str(url)


def headers(session: str | None = None) -> dict[str, str]:
    found = {"Content-Type": "application/json", "Accept": ACCEPT}
    return found | ({"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": session} if session else {})


def initialize(base: str) -> str:
    params = {"protocolVersion": LEGACY, "capabilities": ELICIT, "clientInfo": {"name": "t", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    response = httpx.post(f"{base}/mcp", json=body, headers=headers(), timeout=30)
    assert response.status_code == 200, response.text
    return response.headers["Mcp-Session-Id"]


def send(base: str, session: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{base}/mcp", json=body, headers=headers(session), timeout=30)


def call(base: str, session: str, request_id: int, text: str, answer: bool | None = None, seen=None) -> dict:
    """One ``tools/call`` read on its SSE stream: an ``elicitation/create`` on it is answered
    (``answer``: approve or deny) by a POST of its own; ``seen`` (an Event) is set at the
    first progress notification. The call's last message (its response)."""
    params = {"name": "echo", "arguments": {"message": text}, "_meta": {"progressToken": f"p{request_id}"}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    with httpx.stream("POST", f"{base}/mcp", json=body, headers=headers(session), timeout=60) as response:
        assert response.headers["content-type"].startswith("text/event-stream"), response.read()
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            message = json.loads(line[6:])
            if message.get("method") == "elicitation/create":
                content = {"approved": answer}
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": content}}
                assert send(base, session, reply).status_code == 202
            elif message.get("method") == "notifications/progress" and seen is not None:
                seen.set()
            elif "id" in message and message["id"] == request_id:
                return message
    raise AssertionError("the stream ended without the call's response")


def a2a_state(base: str, task_id: str) -> str:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    return httpx.post(f"{base}/a2a/", json=body, headers={"A2A-Version": "1.0"}, timeout=30).json()["result"]["status"][
        "state"
    ]


def texts(message: dict) -> list[str]:
    return [c["text"] for c in message["result"]["content"] if c["type"] == "text"]


def test_concurrent_calls_are_asked_on_their_streams_and_one_is_cancelled(base):
    session = initialize(base)
    started = threading.Event()
    with ThreadPoolExecutor(4) as pool:
        approved = pool.submit(call, base, session, 1, "approve:deploy", True)
        denied = pool.submit(call, base, session, 2, "approve:deploy", False)
        running = pool.submit(call, base, session, 3, "progress:started;sleep:60", None, started)
        plain = pool.submit(call, base, session, 4, "progress:one;artifact:plain")
        assert started.wait(60), "the long call never reported progress"
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "stop"}}
        assert send(base, session, note).status_code == 202
        results = [f.result(timeout=90) for f in (approved, denied, running, plain)]
    assert "approved: deploy" in texts(results[0]) and "denied: deploy" in texts(results[1])
    assert results[3]["result"]["isError"] is False and "plain" in texts(results[3])
    cancelled = results[2]["result"]
    assert cancelled["isError"] is True, cancelled
    assert a2a_state(base, cancelled["_meta"]["a2a/taskId"]) == "TASK_STATE_CANCELED"
    tasks = {r["result"]["_meta"]["a2a/taskId"] for r in results}
    assert len(tasks) == 4  # four calls, four A2A tasks


def test_an_ended_session_stays_ended_in_the_next_process(env, tmp_path):
    with running_server(env, log=tmp_path / "server.log") as first:
        session = initialize(str(first))
        listed = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert send(str(first), session, listed).status_code == 200
        assert httpx.delete(f"{first}/mcp", headers=headers(session), timeout=30).status_code == 204
    with running_server(env, log=tmp_path / "server.log") as second:  # nothing shared but the database
        refused = send(str(second), session, listed)
        assert refused.status_code == 404 and refused.json()["error"]["code"] == -32600
        assert httpx.delete(f"{second}/mcp", headers=headers(session), timeout=30).status_code == 404
        other = initialize(str(second))  # a new session works
        assert send(str(second), other, listed).status_code == 200
