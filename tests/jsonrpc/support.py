"""What the JSON-RPC tests (tests/jsonrpc/) share: requests to the in-process app, the
dialects' messages, the handlers the tests point A2A_HANDLER at, seeded tasks (the
fixtures are in conftest.py)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a.handlers import HandlerRequest
from a2a.protocol.model import agent_message, new_task, set_status
from a2a.runtime.runner import get_runner
from a2a.testing.client import UNSET
from a2a.testing.client import rpc_body as request
from stores.memory import MemoryTaskStore
from tests.helpers import ASGI, wait_until

ENDPOINT = "/a2a/"
CARD = "/.well-known/agent-card.json"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
#: The A2A v1.0 JSON schema, as the package ships it (a copy of the specification's).
V10_SCHEMA = Path(__file__).resolve().parents[2] / "a2a" / "protocol" / "a2a.schema.json"
NO_PARAMS: Any = UNSET  # "send no params key at all"


# --- HTTP plumbing -------------------------------------------------------------------


def post(body: Any, *, version: str | None = None, path: str = ENDPOINT) -> httpx.Response:
    """POST ``body`` (bytes as they are, anything else as JSON) to the endpoint."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return ASGI.request("POST", path, content=content, headers={"Content-Type": "application/json"}, version=version)


def envelope(response: httpx.Response) -> Any:
    """The JSON-RPC answer: always HTTP 200 and JSON."""
    assert response.status_code == 200, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    return response.json()


def call(method: str, params: Any = NO_PARAMS, *, version: str | None = None, request_id: Any = 1) -> dict[str, Any]:
    body = envelope(post(request(method, params, request_id), version=version))
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == request_id
    return body


def ok(method: str, params: Any = NO_PARAMS, *, version: str | None = None) -> Any:
    body = call(method, params, version=version)
    assert "error" not in body, body["error"]
    assert set(body) == {"jsonrpc", "id", "result"}
    return body["result"]


def check_error(error: Any, code: int, version: str | None = None) -> dict[str, Any]:
    """A JSON-RPC error object: exactly code, message and maybe data, in the dialect's shape."""
    assert isinstance(error, dict), error
    assert {"code", "message"} <= set(error) <= {"code", "message", "data"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and len(error["message"]) > 5, error
    if version == "1.0":
        data = error["data"]
        assert isinstance(data, list) and data, error
        assert all("@type" in item for item in data)
        info = data[0]
        assert info["@type"] == ERROR_INFO
        assert info["domain"] == "a2a-protocol.org"
        assert re.fullmatch(r"[A-Z_]+", info["reason"]), info
    else:
        assert not isinstance(error.get("data"), list), "v0.3 errors do not carry google.rpc details"
    return error


def fails(method: str, params: Any = NO_PARAMS, *, code: int, version: str | None = None) -> dict[str, Any]:
    body = call(method, params, version=version)
    assert set(body) == {"jsonrpc", "id", "error"}, body
    return check_error(body["error"], code, version)


def no_kind_keys(value: Any) -> bool:
    """True when no object anywhere in ``value`` has a ``kind`` key (v1.0 has none)."""
    if isinstance(value, dict):
        return "kind" not in value and all(no_kind_keys(v) for v in value.values())
    if isinstance(value, list):
        return all(no_kind_keys(v) for v in value)
    return True


# --- Dialects ------------------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    name: str
    version: str | None
    send: str
    get: str
    cancel: str
    list: str

    @property
    def v10(self) -> bool:
        return self.version == "1.0"

    def state(self, state: str) -> str:
        return f"TASK_STATE_{state.upper().replace('-', '_')}" if self.v10 else state

    def text(self, text: str) -> dict[str, Any]:
        return {"text": text} if self.v10 else {"kind": "text", "text": text}

    def role(self, role: str) -> str:
        return f"ROLE_{role.upper()}" if self.v10 else role

    def message(self, text: str = "hello", **extra: Any) -> dict[str, Any]:
        return {"role": self.role("user"), "messageId": str(uuid.uuid4()), "parts": [self.text(text)], **extra}

    def config(self, *, blocking: bool = True, **extra: Any) -> dict[str, Any]:
        return {"returnImmediately": not blocking, **extra} if self.v10 else {"blocking": blocking, **extra}

    def unwrap(self, result: dict[str, Any]) -> dict[str, Any]:
        """The Task of a SendMessage result (v1.0 wraps it as {"task": ...})."""
        if self.v10:
            assert set(result) == {"task"}, result
            task = result["task"]
            assert no_kind_keys(task), task
            return task
        assert result["kind"] == "task", result
        return result

    def send_message(self, text: str = "hello", *, blocking: bool = True, config: Any = None, **extra: Any) -> Any:
        params = {
            "message": self.message(text, **extra),
            "configuration": self.config(blocking=blocking, **config or {}),
        }
        return self.unwrap(ok(self.send, params, version=self.version))

    def get_task(self, task_id: str, **params: Any) -> dict[str, Any]:
        task = ok(self.get, {"id": task_id, **params}, version=self.version)
        if self.v10:
            assert no_kind_keys(task), task
        else:
            assert task["kind"] == "task"
        return task

    def wait_for(self, task_id: str, state: str, timeout: float = 5.0) -> dict[str, Any]:
        want = self.state(state)
        seen: list[str] = []

        def settled() -> dict[str, Any] | None:
            task = self.get_task(task_id)
            seen.append(task["status"]["state"])
            return task if task["status"]["state"] == want else None

        try:
            return wait_until(settled, timeout=timeout, what=f"task {task_id} to be {want}")
        except AssertionError:
            raise AssertionError(f"task {task_id} never became {want}; states seen: {sorted(set(seen))}") from None


V03 = Dialect("v0.3", None, "message/send", "tasks/get", "tasks/cancel", "tasks/list")
V10 = Dialect("v1.0", "1.0", "SendMessage", "GetTask", "CancelTask", "ListTasks")
TOOLNEXUS = Dialect("toolnexus", None, "SendMessage", "GetTask", "CancelTask", "ListTasks")
DIALECTS = [pytest.param(d, id=d.name) for d in (V03, V10, TOOLNEXUS)]
VERSIONS = [pytest.param(None, id="v0.3"), pytest.param("1.0", id="v1.0")]


# --- Handlers the tests point A2A_HANDLER at ----------------------------------------

handler_release = threading.Event()
handler_started: set[str] = set()
handler_finished: set[str] = set()
handler_cancelled: set[str] = set()


def slow_handler(request: HandlerRequest) -> str:
    """Sync: works until released or cancelled, then answers anyway."""
    handler_started.add(request.task_id)
    try:
        while not handler_release.is_set() and not request.cancelled.is_set():
            request.cancelled.wait(0.01)
        return f"slow: {request.text}"
    finally:
        handler_finished.add(request.task_id)


async def async_slow_handler(request: HandlerRequest) -> str:
    """Async: works until released; records being cancelled."""
    handler_started.add(request.task_id)
    try:
        while not handler_release.is_set():
            await asyncio.sleep(0.01)
        return f"slow: {request.text}"
    except asyncio.CancelledError:
        handler_cancelled.add(request.task_id)
        raise
    finally:
        handler_finished.add(request.task_id)


def failing_handler(request: HandlerRequest) -> str:
    raise RuntimeError(f"cannot handle {request.text!r}: the model is on fire")


def data_handler(request: HandlerRequest) -> dict[str, Any]:
    return {"kind": "data", "data": {"answer": 42, "echo": request.text, "items": [1, 2]}}


def artifacts_handler(request: HandlerRequest) -> list[dict[str, Any]]:
    return [
        {"name": "summary", "parts": [{"kind": "text", "text": f"summary of {request.text}"}]},
        {
            "name": "details",
            "description": "numbers and a file",
            "parts": [
                {"kind": "data", "data": {"n": [1, 2, 3]}},
                {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "hi.txt"}},
            ],
        },
    ]


def handler_path(handler: Callable[..., Any]) -> str:
    return f"{__name__}.{handler.__name__}"


# --- Fixtures --------------------------------------------------------------------------


def runner_idle() -> bool:
    return get_runner().active == 0


def seed(
    store: MemoryTaskStore, state: str, *, texts: tuple[str, ...] = ("book a flight",), context_id: str = ""
) -> str:
    """Save a task in ``state`` directly (no handler runs); its history alternates
    user and agent messages, starting with ``texts[0]`` from the user."""
    first = {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": texts[0]}],
    }
    task = new_task(first, context_id=context_id or str(uuid.uuid4()))
    for i, text in enumerate(texts[1:], start=1):
        message = agent_message(text, task=task)
        if i % 2 == 0:
            message["role"] = "user"
        task["history"].append(message)
    set_status(task, state, agent_message("Where to?", task=task) if state == "input-required" else None)
    store.save(task)
    return task["id"]
