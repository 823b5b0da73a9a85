"""What the MCP tests share: requests to the in-process app in either revision."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.helpers import http

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ELICIT = {"elicitation": {"form": {}}}
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
ACCEPT = "application/json, text/event-stream"


def modern_body(
    method: str, params: dict[str, Any] | None = None, *, caps: dict[str, Any] | None = None, id: Any = 1
) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps or {}}
    params = dict(params or {})
    params["_meta"] = {**meta, **params.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def modern_headers(body: dict[str, Any], **extra: str) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": body["method"],
    }
    params = body.get("params") or {}
    name = params.get("name") if body["method"] == "tools/call" else params.get("taskId")
    if name is not None:
        headers["Mcp-Name"] = name
    return headers | extra


def post(body: Any, headers: dict[str, str], path: str = "/mcp") -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http("POST", path, content=content, headers=headers)


def modern(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    caps: dict[str, Any] | None = None,
    path: str = "/mcp",
    **extra: str,
) -> httpx.Response:
    body = modern_body(method, params, caps=caps)
    return post(body, modern_headers(body, **extra), path)


def result(response: httpx.Response) -> dict[str, Any]:
    """The result of a JSON (or SSE: its last event) answer."""
    assert response.status_code == 200, (response.status_code, response.text)
    answer = (
        events(response)[-1] if response.headers["content-type"].startswith("text/event-stream") else response.json()
    )
    assert "result" in answer, answer
    return answer["result"]


def error(response: httpx.Response, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["error"]["code"] == code, body
    assert response.status_code != 500
    return body["error"]


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def legacy_session(
    caps: dict[str, Any] | None = None, path: str = "/mcp", headers: dict[str, str] | None = None
) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": caps or {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    response = post(body, {"Content-Type": "application/json", "Accept": ACCEPT, **(headers or {})}, path)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == LEGACY
    session = response.headers["Mcp-Session-Id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(note, legacy_headers(session) | (headers or {}), path).status_code == 202
    return session


def legacy_headers(session: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": LEGACY,
        "Mcp-Session-Id": session,
    }


def legacy(
    session: str,
    method: str,
    params: dict[str, Any] | None = None,
    id: Any = 1,
    path: str = "/mcp",
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}
    return post(body, legacy_headers(session) | (headers or {}), path)
