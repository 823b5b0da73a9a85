"""The JSON-RPC endpoint end to end: the real ASGI app, driven in-process over HTTP.

Every request goes through ``a2a.asgi.get_asgi_application()`` with httpx's ASGI
transport (each call runs its own event loop with ``asyncio.run``; the runner fulfils
tasks on its own thread). Each test gets a fresh memory store.

Dialects: no ``A2A-Version`` (or ``0.3``) is v0.3; ``1.0`` is v1.0 (ProtoJSON); the
toolnexus dialect is v0.3 payloads under the v1.0 method names, with no header.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
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
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import ASGI, http, wait_until

ENDPOINT = "/a2a/"
CARD = "/.well-known/agent-card.json"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
#: The A2A v1.0 JSON schema, as the package ships it (a copy of the specification's).
V10_SCHEMA = Path(__file__).resolve().parent.parent / "a2a" / "protocol" / "a2a.schema.json"
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


@pytest.fixture(params=DIALECTS)
def dialect(request) -> Dialect:
    return request.param


# --- Handlers the tests point A2A_HANDLER at ----------------------------------------

_release = threading.Event()
_started: set[str] = set()
_finished: set[str] = set()
_cancelled: set[str] = set()


def slow_handler(request: HandlerRequest) -> str:
    """Sync: works until released or cancelled, then answers anyway."""
    _started.add(request.task_id)
    try:
        while not _release.is_set() and not request.cancelled.is_set():
            request.cancelled.wait(0.01)
        return f"slow: {request.text}"
    finally:
        _finished.add(request.task_id)


async def async_slow_handler(request: HandlerRequest) -> str:
    """Async: works until released; records being cancelled."""
    _started.add(request.task_id)
    try:
        while not _release.is_set():
            await asyncio.sleep(0.01)
        return f"slow: {request.text}"
    except asyncio.CancelledError:
        _cancelled.add(request.task_id)
        raise
    finally:
        _finished.add(request.task_id)


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


@pytest.fixture(autouse=True)
def store(settings) -> MemoryTaskStore:
    """A fresh memory store and the echo handler for every test."""
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "a2a.handlers.echo"
    store = get_task_store()
    assert isinstance(store, MemoryTaskStore)
    return store


def runner_idle() -> bool:
    return get_runner().active == 0


@pytest.fixture
def slow(settings):
    """Use the slow sync handler; release whatever is still running at the end."""
    wait_until(runner_idle, timeout=10, what="the runner to be idle")
    for s in (_started, _finished, _cancelled):
        s.clear()
    _release.clear()
    settings.A2A_HANDLER = handler_path(slow_handler)
    yield
    _release.set()
    wait_until(runner_idle, timeout=10, what="the runner to be idle")


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


# === Error paths ========================================================================


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask"', id="truncated"),
        pytest.param(b"{'jsonrpc': '2.0'}", id="single-quotes"),
        pytest.param(b"\xff\xfe\x00{}", id="invalid-utf8"),
        pytest.param(b"", id="empty-body"),
        pytest.param(b"   ", id="whitespace-body"),
        pytest.param(b"[1, 2,]", id="trailing-comma"),
    ],
)
def test_parse_error(body, version):
    answer = envelope(post(body, version=version))
    assert set(answer) == {"jsonrpc", "id", "error"}
    assert answer["id"] is None
    error = check_error(answer["error"], -32700, version)
    assert error["message"].startswith("Invalid JSON payload")
    if version == "1.0":
        assert error["data"][0]["reason"] == "PARSE_ERROR"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("payload", "answer_id", "says"),
    [
        pytest.param(42, None, "must be an object", id="number"),
        pytest.param("GetTask", None, "must be an object", id="string"),
        pytest.param(None, None, "must be an object", id="null"),
        pytest.param([], None, "empty batch", id="empty-batch"),
        pytest.param({"id": 7, "method": "GetTask", "params": {"id": "x"}}, 7, '"jsonrpc"', id="jsonrpc-missing"),
        pytest.param({"jsonrpc": "1.0", "id": 7, "method": "GetTask"}, 7, '"jsonrpc"', id="jsonrpc-1.0"),
        pytest.param({"jsonrpc": 2.0, "id": 7, "method": "GetTask"}, 7, '"jsonrpc"', id="jsonrpc-number"),
        pytest.param({"jsonrpc": "2.0", "id": 7, "method": 5}, 7, '"method"', id="method-number"),
        pytest.param({"jsonrpc": "2.0", "id": 7}, 7, '"method"', id="method-missing"),
        pytest.param({"jsonrpc": "2.0", "id": 7, "method": ["GetTask"]}, 7, '"method"', id="method-array"),
        pytest.param({"jsonrpc": "2.0", "id": {"a": 1}, "method": "GetTask"}, None, '"id"', id="id-object"),
        pytest.param({"jsonrpc": "2.0", "id": True, "method": "GetTask"}, None, '"id"', id="id-true"),
        pytest.param({"jsonrpc": "2.0", "id": False, "method": "GetTask"}, None, '"id"', id="id-false"),
        pytest.param({"jsonrpc": "2.0", "id": [1], "method": "GetTask"}, None, '"id"', id="id-array"),
        pytest.param({"jsonrpc": "2.0", "method": 1, "params": "bar"}, None, '"method"', id="bad-notification"),
    ],
)
def test_invalid_request(payload, answer_id, says, version):
    answer = envelope(post(payload, version=version))
    assert isinstance(answer, dict), "an invalid request is answered with one error object"
    assert set(answer) == {"jsonrpc", "id", "error"}
    assert answer["id"] == answer_id
    error = check_error(answer["error"], -32600, version)
    assert says in error["message"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("method", ["tasks/frobnicate", "sendMessage", "message/Send", "", "GetTask "])
def test_method_not_found(method, version):
    error = fails(method, {"id": "x"}, code=-32601, version=version)
    assert error["message"] == f"Method not found: {method}"
    if version == "1.0":
        assert error["data"][0]["reason"] == "METHOD_NOT_FOUND"


def _send(version: str | None, message: Any = None, **params: Any) -> dict[str, Any]:
    d = V10 if version == "1.0" else V03
    return {"message": d.message() if message is None else message, **params}


def _msg(version: str | None, **changes: Any) -> dict[str, Any]:
    """A valid message for the dialect, with keys replaced (a value of None drops the key)."""
    message = (V10 if version == "1.0" else V03).message()
    for key, value in changes.items():
        if value is None:
            message.pop(key, None)
        else:
            message[key] = value
    return message


INVALID_SEND = [
    # (version, params, field)
    (None, NO_PARAMS, "params"),
    ("1.0", NO_PARAMS, "params"),
    (None, [], "params"),
    ("1.0", "hello", "params"),
    (None, {}, "message"),
    ("1.0", {"message": None}, "message"),
    (None, {"message": "hello"}, "message"),
    (None, {"message": _msg(None, parts=[])}, "message.parts"),
    ("1.0", {"message": _msg("1.0", parts=[])}, "message.parts"),
    (None, {"message": _msg(None, parts=None)}, "message.parts"),
    (None, {"message": _msg(None, parts=[{}])}, "message.parts[0]"),
    ("1.0", {"message": _msg("1.0", parts=[{}])}, "message.parts[0]"),
    ("1.0", {"message": _msg("1.0", parts=[{"text": "a"}, {"metadata": {}}])}, "message.parts[1]"),
    ("1.0", {"message": _msg("1.0", parts=[{"text": "a", "data": {}}])}, "message.parts[0]"),
    (None, {"message": _msg(None, parts=[{"kind": "text"}])}, "message.parts[0].text"),
    (None, {"message": _msg(None, parts=[{"kind": "text", "text": 5}])}, "message.parts[0].text"),
    (None, {"message": _msg(None, parts=[{"kind": "file", "file": {}}])}, "message.parts[0].file"),
    (None, {"message": _msg(None, role="ROLE_USER")}, "message.role"),
    (None, {"message": _msg(None, role="robot")}, "message.role"),
    (None, {"message": _msg(None, role=None)}, "message.role"),
    ("1.0", {"message": _msg("1.0", role="user")}, "message.role"),
    ("1.0", {"message": _msg("1.0", role=True)}, "message.role"),
    (None, {"message": _msg(None, messageId=None)}, "message.messageId"),
    ("1.0", {"message": _msg("1.0", messageId=None)}, "message.messageId"),
    (None, {"message": _msg(None, messageId="")}, "message.messageId"),
    (None, {"message": _msg(None, messageId=17)}, "message.messageId"),
    (None, {"message": _msg(None, kind="task")}, "message.kind"),
    (None, {"message": _msg(None, metadata=[1])}, "message.metadata"),
    (None, _send(None, configuration="blocking"), "configuration"),
    (None, _send(None, configuration={"blocking": "false"}), "configuration.blocking"),
    (None, _send(None, configuration={"blocking": 0}), "configuration.blocking"),
    ("1.0", _send("1.0", configuration={"returnImmediately": "yes"}), "configuration.returnImmediately"),
    (None, _send(None, configuration={"historyLength": -1}), "configuration.historyLength"),
    ("1.0", _send("1.0", configuration={"historyLength": "ten"}), "configuration.historyLength"),
    (None, _send(None, configuration={"acceptedOutputModes": "text/plain"}), "configuration.acceptedOutputModes"),
    (None, _send(None, metadata="x"), "metadata"),
    (
        None,
        {"message": _msg(None, parts=[{"kind": "file", "file": {"bytes": "not base64!"}}])},
        "message.parts[0].file.bytes",
    ),
    ("1.0", {"message": _msg("1.0", parts=[{"raw": "%%%="}])}, "message.parts[0].raw"),
    ("1.0", {"message": _msg("1.0", parts=[{"url": 5}])}, "message.parts[0].url"),
]


@pytest.mark.parametrize("method", ["SendMessage", "message/send"])
@pytest.mark.parametrize(("version", "params", "field"), INVALID_SEND)
def test_send_invalid_params(method, version, params, field, store):
    error = fails(method, params, code=-32602, version=version)
    assert f"Invalid params: {field}: " in error["message"], error
    if version == "1.0":
        info, bad_request = error["data"]
        assert info["reason"] == "INVALID_PARAMS"
        assert bad_request["@type"] == BAD_REQUEST
        [violation] = bad_request["fieldViolations"]
        assert violation["field"] == field
        assert violation["description"]
    else:
        assert error["data"]["field"] == field
        assert error["data"]["description"]
    assert len(store) == 0, "an invalid request must not create a task"


@pytest.mark.parametrize(
    ("version", "method", "params", "field"),
    [
        (None, "tasks/get", NO_PARAMS, "params"),
        ("1.0", "GetTask", [], "params"),
        (None, "GetTask", {}, "id"),
        (None, "GetTask", {"id": ""}, "id"),
        ("1.0", "GetTask", {"id": 5}, "id"),
        (None, "GetTask", {"id": "x", "historyLength": -1}, "historyLength"),
        ("1.0", "GetTask", {"id": "x", "historyLength": -1}, "historyLength"),
        ("1.0", "GetTask", {"id": "x", "history_length": "-3"}, "historyLength"),
        (None, "GetTask", {"id": "x", "historyLength": "abc"}, "historyLength"),
        ("1.0", "GetTask", {"id": "x", "historyLength": "abc"}, "historyLength"),
        (None, "GetTask", {"id": "x", "historyLength": "--5"}, "historyLength"),
        (None, "GetTask", {"id": "x", "historyLength": "\u00b2"}, "historyLength"),
        (None, "GetTask", {"id": "x", "historyLength": 1.5}, "historyLength"),
        (None, "GetTask", {"id": "x", "historyLength": True}, "historyLength"),
        (None, "tasks/cancel", NO_PARAMS, "params"),
        ("1.0", "CancelTask", {}, "id"),
        (None, "CancelTask", {"id": "x", "metadata": []}, "metadata"),
        (None, "ListTasks", [], "params"),
        (None, "ListTasks", {"status": "bogus"}, "status"),
        (None, "ListTasks", {"status": "TASK_STATE_COMPLETED"}, "status"),
        ("1.0", "ListTasks", {"status": "completed"}, "status"),
        ("1.0", "ListTasks", {"status": "TASK_STATE_BOGUS"}, "status"),
        (None, "ListTasks", {"pageToken": "not-a-token"}, "pageToken"),
        ("1.0", "ListTasks", {"pageToken": "!!!"}, "pageToken"),
        (None, "ListTasks", {"pageSize": 0}, "pageSize"),
        ("1.0", "ListTasks", {"pageSize": 101}, "pageSize"),
        (None, "ListTasks", {"statusTimestampAfter": "yesterday"}, "statusTimestampAfter"),
        (None, "ListTasks", {"includeArtifacts": "yes"}, "includeArtifacts"),
        (None, "ListTasks", {"historyLength": -1}, "historyLength"),
    ],
)
def test_other_invalid_params(version, method, params, field):
    error = fails(method, params, code=-32602, version=version)
    assert f"Invalid params: {field}: " in error["message"], error
    if version == "1.0":
        assert error["data"][1]["fieldViolations"][0]["field"] == field
    else:
        assert error["data"]["field"] == field


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("method", ["GetTask", "tasks/get", "CancelTask", "tasks/cancel"])
def test_task_not_found(method, version):
    error = fails(method, {"id": "no-such-task"}, code=-32001, version=version)
    assert error["message"] == "Task not found: no-such-task"
    if version == "1.0":
        assert error["data"] == [
            {
                "@type": ERROR_INFO,
                "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {"taskId": "no-such-task"},
            }
        ]
    else:
        assert "data" not in error


def test_send_to_unknown_task_is_not_found(dialect, store):
    params = {"message": dialect.message(taskId="no-such-task")}
    error = fails(dialect.send, params, code=-32001, version=dialect.version)
    assert "no-such-task" in error["message"]
    assert len(store) == 0


def test_cancel_completed_task_is_not_cancelable(dialect):
    task = dialect.send_message("done already")
    assert task["status"]["state"] == dialect.state("completed")
    error = fails(dialect.cancel, {"id": task["id"]}, code=-32002, version=dialect.version)
    assert task["id"] in error["message"]
    assert "completed" in error["message"]
    if dialect.v10:
        assert error["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
        assert error["data"][0]["metadata"] == {"taskId": task["id"]}
    again = dialect.get_task(task["id"])
    assert again["status"] == task["status"], "a refused cancel must not change the task"
    assert again["artifacts"] == task["artifacts"]


@pytest.mark.parametrize("version", ["2.0", "0.2", "1", "latest"])
def test_unsupported_version(version, store):
    answer = envelope(post(request("SendMessage", {"message": V03.message()}, request_id="r-1"), version=version))
    assert answer["id"] == "r-1"
    error = check_error(answer["error"], -32009)
    assert repr(version) in error["message"]
    assert "0.3" in error["message"] and "1.0" in error["message"]
    assert len(store) == 0, "a request in an unsupported version must not run"


def test_unsupported_version_as_query_parameter_and_in_a_batch():
    batch = [request("GetTask", {"id": "a"}, 1), request("GetTask", {"id": "b"}, "two"), {"method": "x"}]
    answer = envelope(post(batch, path=f"{ENDPOINT}?A2A-Version=2.0"))
    assert [a["id"] for a in answer] == [1, "two", None]
    for item in answer:
        check_error(item["error"], -32009)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "method",
    [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    ],
)
def test_push_notification_methods_are_not_supported_when_disabled(method, version, settings):
    settings.A2A_PUSH_NOTIFICATIONS = False  # enabled by default: tests/test_push.py covers them
    error = fails(method, {"taskId": "x"}, code=-32003, version=version)
    assert "Push notifications" in error["message"]
    if version == "1.0":
        assert error["data"][0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"


# v0.3's tasks/resubscribe and message/stream send these errors as an SSE stream:
# tests/test_spec_details.py.
@pytest.mark.parametrize(
    ("method", "version"),
    [("SubscribeToTask", None), ("SubscribeToTask", "1.0"), ("tasks/resubscribe", "1.0")],
)
def test_subscribe_errors_come_before_any_stream(method, version, store):
    # Unknown task: a plain JSON-RPC error, not an event stream.
    error = fails(method, {"id": "nope"}, code=-32001, version=version)
    assert "nope" in error["message"]
    # A terminal task has nothing left to stream: UnsupportedOperationError.
    done = ok(
        "message/send" if not version else "SendMessage",
        {"message": (V10 if version else V03).message()},
        version=version,
    )
    task_id = (done["task"] if version else done)["id"]
    error = fails(method, {"id": task_id}, code=-32004, version=version)
    assert "nothing left to subscribe to" in error["message"]


@pytest.mark.parametrize(
    ("method", "version"),
    [("SendStreamingMessage", None), ("SendStreamingMessage", "1.0"), ("message/stream", "1.0")],
)
def test_stream_with_bad_params_is_a_plain_error(method, version, store):
    error = fails(method, {"message": {"role": "user"}}, code=-32602, version=version)
    assert "message." in error["message"]
    assert len(store) == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_unaccepted_media_type_is_content_type_not_supported(version, store, settings):
    settings.A2A_INPUT_MODES = ["text/plain"]
    d = V10 if version else V03
    part = (
        {"url": "https://example.com/x.png", "mediaType": "image/png"}
        if version
        else {"kind": "file", "file": {"uri": "https://example.com/x.png", "mimeType": "image/png"}}
    )
    message = {**d.message(), "parts": [part]}
    error = fails(d.send, {"message": message}, code=-32005, version=version)
    assert "image/png" in error["message"] and "text/plain" in error["message"]
    assert len(store) == 0
    settings.A2A_INPUT_MODES = ["image/*"]
    assert "error" not in call(d.send, {"message": message}, version=version)


def test_streaming_methods_cannot_be_batched(store):
    response = post([request("message/stream", {"message": V03.message()})])
    assert response.json()[0]["error"]["code"] == -32600
    assert len(store) == 0


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("method", ["GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"])
def test_extended_card_is_not_configured(method, version):
    # The card says capabilities.extendedAgentCard: false: unsupported (spec 3.3.4).
    error = fails(method, code=-32004, version=version)
    assert "extended agent card" in error["message"]
    if version == "1.0":
        assert error["data"][0]["reason"] == "UNSUPPORTED_OPERATION"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_endpoint_only_accepts_post(method):
    response = http(method, ENDPOINT)
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"


def test_endpoint_without_trailing_slash():
    body = envelope(post(request("GetTask", {"id": "x"}), path="/a2a"))
    check_error(body["error"], -32001)


WEIRD_BODIES = [
    b"0",
    b"true",
    b'"\\u0000"',
    b"[[]]",
    b"[null, {}, 1]",
    b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"parts": [null]}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"role": {}, "parts": [[]]}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"role": "user", "messageId": "m",'
    b' "parts": [{"kind": {"x": 1}}]}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x", "historyLength": "-"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x", "historyLength": "1e3"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"status": ["completed"]}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": "--1"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageToken": "WyJhIl0"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"contextId": 5}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "\\ud800"}}',
    b'{"jsonrpc": "2.0", "id": 1e400, "method": "tasks/get"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "' + b"x" * 10_000 + b'"}',
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("body", WEIRD_BODIES)
def test_no_body_gets_an_internal_error(body, version):
    """However strange the body, the answer is a well-formed JSON-RPC error, never a
    500 nor the catch-all -32603."""
    answer = envelope(post(body, version=version))
    for item in answer if isinstance(answer, list) else [answer]:
        assert set(item) == {"jsonrpc", "id", "error"}, item
        error = check_error(item["error"], item["error"]["code"], version)
        assert error["code"] in (-32700, -32600, -32601, -32602, -32001), error
        assert len(error["message"]) < 500, "messages stay readable (long input is cut)"


def test_body_too_large(settings):
    settings.A2A_MAX_BODY_BYTES = 1000
    payload = request("SendMessage", {"message": V03.message("x" * 2000)})
    response = post(payload)
    assert response.status_code == 413
    body = response.json()
    assert body["id"] is None
    error = check_error(body["error"], -32600)
    assert "larger" in error["message"]


# === v1.0 error shape ===================================================================


def test_v10_task_not_found_error_shape():
    body = call("GetTask", {"id": "missing-1"}, version="1.0", request_id="req-9")
    assert body == {
        "jsonrpc": "2.0",
        "id": "req-9",
        "error": {
            "code": -32001,
            "message": "Task not found: missing-1",
            "data": [
                {
                    "@type": ERROR_INFO,
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {"taskId": "missing-1"},
                }
            ],
        },
    }


def test_v10_invalid_params_error_shape():
    message = _msg("1.0", parts=[])
    error = fails("SendMessage", {"message": message}, code=-32602, version="1.0")
    assert error == {
        "code": -32602,
        "message": "Invalid params: message.parts: at least one part is required",
        "data": [
            {"@type": ERROR_INFO, "reason": "INVALID_PARAMS", "domain": "a2a-protocol.org"},
            {
                "@type": BAD_REQUEST,
                "fieldViolations": [{"field": "message.parts", "description": "at least one part is required"}],
            },
        ],
    }


def test_v03_invalid_params_error_shape():
    error = fails("message/send", {"message": _msg(None, parts=[])}, code=-32602)
    assert error == {
        "code": -32602,
        "message": "Invalid params: message.parts: at least one part is required",
        "data": {"field": "message.parts", "description": "at least one part is required"},
    }


def test_unsupported_version_error_has_v03_shape():
    # The version error is rendered in v0.3 shape: the requested version is not one we speak.
    error = fails("GetTask", {"id": "x"}, code=-32009, version="3.1")
    assert "data" not in error


# === Happy paths ========================================================================


def test_blocking_send_completes_with_echo(dialect):
    task = dialect.send_message("hello there")
    assert task["status"]["state"] == dialect.state("completed")
    assert TIMESTAMP.match(task["status"]["timestamp"]), task["status"]
    [artifact] = task["artifacts"]
    assert artifact["artifactId"]
    assert artifact["parts"] == [dialect.text("echo: hello there")]
    [sent] = task["history"]
    assert sent["role"] == dialect.role("user")
    assert sent["parts"] == [dialect.text("hello there")]
    assert sent["taskId"] == task["id"]
    assert sent["contextId"] == task["contextId"]
    if not dialect.v10:
        assert sent["kind"] == "message"
    # What GetTask says later is what SendMessage answered.
    assert dialect.get_task(task["id"]) == task


def test_blocking_is_the_default(dialect):
    params = {"message": dialect.message("no configuration")}
    task = dialect.unwrap(ok(dialect.send, params, version=dialect.version))
    assert task["status"]["state"] == dialect.state("completed")
    assert task["artifacts"][0]["parts"] == [dialect.text("echo: no configuration")]


def test_non_blocking_send_then_poll(dialect, slow):
    task = dialect.send_message("later", blocking=False)
    assert task["status"]["state"] == dialect.state("submitted")
    assert TIMESTAMP.match(task["status"]["timestamp"])
    assert "artifacts" not in task
    wait_until(lambda: task["id"] in _started, what="the handler to start")
    assert dialect.get_task(task["id"])["status"]["state"] == dialect.state("working")
    _release.set()
    done = dialect.wait_for(task["id"], "completed")
    assert done["artifacts"][0]["parts"] == [dialect.text("slow: later")]
    assert done["status"]["timestamp"] >= task["status"]["timestamp"]


def test_non_blocking_send_with_echo_handler(dialect):
    task = dialect.send_message("quick", blocking=False)
    assert task["status"]["state"] in (dialect.state("submitted"), dialect.state("working"))
    done = dialect.wait_for(task["id"], "completed")
    assert done["artifacts"][0]["parts"] == [dialect.text("echo: quick")]


def test_send_history_length(dialect):
    task = dialect.send_message("no history please", config={"historyLength": 0})
    assert task["status"]["state"] == dialect.state("completed")
    assert "history" not in task
    assert len(dialect.get_task(task["id"])["history"]) == 1, "historyLength only trims the answer"


def test_get_task_history_length(dialect, store):
    task_id = seed(store, "completed", texts=("first", "second", "third"))
    full = dialect.get_task(task_id)
    assert [m["parts"][0]["text"] for m in full["history"]] == ["first", "second", "third"]
    assert "history" not in dialect.get_task(task_id, historyLength=0)
    [last] = dialect.get_task(task_id, historyLength=1)["history"]
    assert last["parts"] == [dialect.text("third")]
    assert len(dialect.get_task(task_id, historyLength=2)["history"]) == 2
    assert len(dialect.get_task(task_id, historyLength=50)["history"]) == 3
    assert len(dialect.get_task(task_id, historyLength="1")["history"]) == 1, "ProtoJSON int32 as a string"


def test_cancel_working_task(dialect, slow):
    task = dialect.send_message("take your time", blocking=False)
    wait_until(lambda: task["id"] in _started, what="the handler to start")
    canceled = ok(dialect.cancel, {"id": task["id"]}, version=dialect.version)
    assert canceled["id"] == task["id"]
    assert canceled["status"]["state"] == dialect.state("canceled")
    assert TIMESTAMP.match(canceled["status"]["timestamp"])
    # The handler sees the cancellation and returns; its late answer must be dropped.
    wait_until(lambda: task["id"] in _finished, what="the handler to finish")
    wait_until(runner_idle, what="the runner to settle")
    later = dialect.get_task(task["id"])
    assert later["status"]["state"] == dialect.state("canceled")
    assert "artifacts" not in later
    # Canceling again is refused: the task is terminal.
    fails(dialect.cancel, {"id": task["id"]}, code=-32002, version=dialect.version)


def test_cancel_working_async_task(dialect, slow, settings):
    settings.A2A_HANDLER = handler_path(async_slow_handler)
    task = dialect.send_message("async work", blocking=False)
    wait_until(lambda: task["id"] in _started, what="the handler to start")
    canceled = ok(dialect.cancel, {"id": task["id"]}, version=dialect.version)
    assert canceled["status"]["state"] == dialect.state("canceled")
    wait_until(lambda: task["id"] in _cancelled, what="the async handler to be cancelled")
    _release.set()
    wait_until(runner_idle, what="the runner to settle")
    later = dialect.get_task(task["id"])
    assert later["status"]["state"] == dialect.state("canceled")
    assert "artifacts" not in later


def test_cancel_input_required_task(dialect, store):
    task_id = seed(store, "input-required")
    waiting = dialect.get_task(task_id)
    assert waiting["status"]["state"] == dialect.state("input-required")
    assert waiting["status"]["message"]["parts"] == [dialect.text("Where to?")]
    canceled = ok(dialect.cancel, {"id": task_id}, version=dialect.version)
    assert canceled["status"]["state"] == dialect.state("canceled")
    assert dialect.get_task(task_id)["status"]["state"] == dialect.state("canceled")
    # A canceled task takes no more messages.
    params = {"message": dialect.message("Paris", taskId=task_id)}
    error = fails(dialect.send, params, code=-32004, version=dialect.version)
    assert "canceled" in error["message"]


def test_cancel_submitted_task_before_it_runs(dialect, store):
    task_id = seed(store, "submitted")
    canceled = ok(dialect.cancel, {"id": task_id}, version=dialect.version)
    assert canceled["status"]["state"] == dialect.state("canceled")
    # Even if the runner gets to it afterwards, it stays canceled and never runs.
    get_runner().submit(task_id).result(5)
    task = dialect.get_task(task_id)
    assert task["status"]["state"] == dialect.state("canceled")
    assert "artifacts" not in task


def test_cancel_task_queued_behind_busy_workers(slow):
    """With every worker busy, a new task waits in submitted; canceling it there sticks."""
    d = V10
    workers = get_runner().workers
    busy = [d.send_message(f"busy {i}", blocking=False)["id"] for i in range(workers)]
    wait_until(lambda: len(_started) == workers, what="every worker to be busy")
    queued = d.send_message("queued", blocking=False)
    assert queued["status"]["state"] == "TASK_STATE_SUBMITTED"
    time.sleep(0.05)
    assert d.get_task(queued["id"])["status"]["state"] == "TASK_STATE_SUBMITTED", "no free worker"
    canceled = ok(d.cancel, {"id": queued["id"]}, version=d.version)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    _release.set()
    for task_id in busy:
        d.wait_for(task_id, "completed")
    wait_until(runner_idle, what="the runner to settle")
    later = d.get_task(queued["id"])
    assert later["status"]["state"] == "TASK_STATE_CANCELED"
    assert "artifacts" not in later
    assert queued["id"] not in _started, "a task canceled in the queue never reaches the handler"


def test_failing_handler_fails_the_task(dialect, settings):
    settings.A2A_HANDLER = handler_path(failing_handler)
    task = dialect.send_message("burn")
    assert task["status"]["state"] == dialect.state("failed")
    assert TIMESTAMP.match(task["status"]["timestamp"])
    message = task["status"]["message"]
    assert message["role"] == dialect.role("agent")
    # the exception's type only: its text may quote internals (the traceback is in the log)
    assert message["parts"] == [dialect.text("The agent failed: RuntimeError")]
    assert message["taskId"] == task["id"]
    assert "artifacts" not in task
    assert dialect.get_task(task["id"])["status"] == task["status"]


def test_data_part_result(dialect, settings):
    settings.A2A_HANDLER = handler_path(data_handler)
    task = dialect.send_message("numbers")
    assert task["status"]["state"] == dialect.state("completed")
    data = {"answer": 42, "echo": "numbers", "items": [1, 2]}
    expected = {"data": data} if dialect.v10 else {"kind": "data", "data": data}
    assert task["artifacts"][0]["parts"] == [expected]


def test_list_of_artifacts_result(dialect, settings):
    settings.A2A_HANDLER = handler_path(artifacts_handler)
    task = dialect.send_message("report")
    summary, details = task["artifacts"]
    assert summary["name"] == "summary"
    assert summary["parts"] == [dialect.text("summary of report")]
    assert details["name"] == "details"
    assert details["description"] == "numbers and a file"
    assert summary["artifactId"] and details["artifactId"] and summary["artifactId"] != details["artifactId"]
    if dialect.v10:
        assert details["parts"] == [
            {"data": {"n": [1, 2, 3]}},
            {"raw": "aGk=", "mediaType": "text/plain", "filename": "hi.txt"},
        ]
        assert no_kind_keys(task)
    else:
        assert details["parts"] == [
            {"kind": "data", "data": {"n": [1, 2, 3]}},
            {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "hi.txt"}},
        ]


def test_v10_accepts_proto_names_and_ignores_unknown_fields():
    message_id = str(uuid.uuid4())
    params = {
        "tenant": "",
        "message": {
            "message_id": message_id,
            "context_id": "ctx-proto-names",
            "role": "ROLE_USER",
            "parts": [{"text": "snake", "futurePartField": 1}],
            "futureMessageField": {"x": 1},
        },
        "configuration": {"return_immediately": False, "history_length": 5, "futureConfigField": True},
        "futureParamsField": [1, 2],
    }
    task = V10.unwrap(ok("SendMessage", params, version="1.0"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["contextId"] == "ctx-proto-names"
    [sent] = task["history"]
    assert sent["messageId"] == message_id
    assert sent["parts"] == [{"text": "snake"}]
    assert task["artifacts"][0]["parts"] == [{"text": "echo: snake"}]


def test_v10_accepts_enum_numbers_and_file_parts(settings):
    settings.A2A_INPUT_MODES = ["text/*", "application/*"]
    params = {
        "message": {
            "messageId": "m-1",
            "role": 1,  # ROLE_USER
            "parts": [
                {"text": "see attached"},
                {"raw": "aGVsbG8=", "mediaType": "text/plain", "filename": "a.txt"},
                {"url": "https://example.com/b.pdf", "mediaType": "application/pdf"},
                {"data": {"k": "v"}},
            ],
        }
    }
    task = V10.unwrap(ok("SendMessage", params, version="1.0"))
    assert task["history"][0]["role"] == "ROLE_USER"
    assert task["history"][0]["parts"] == params["message"]["parts"], "parts come back as they were sent"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: see attached"}]


def test_v10_via_query_parameter():
    response = post(request("SendMessage", {"message": V10.message("by query")}), path=f"{ENDPOINT}?A2A-Version=1.0")
    task = V10.unwrap(envelope(response)["result"])
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("header", ["0.3", " 0.3 ", ""])
def test_explicit_v03_header(header):
    response = http(
        "POST",
        ENDPOINT,
        content=json.dumps(request("message/send", {"message": V03.message("v03")})).encode(),
        headers={"Content-Type": "application/json", "A2A-Version": header},
    )
    task = envelope(response)["result"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"


def test_context_id_generated_and_kept(dialect):
    first = dialect.send_message("one")
    second = dialect.send_message("two")
    assert uuid.UUID(first["contextId"]) and uuid.UUID(second["contextId"])
    assert first["contextId"] != second["contextId"], "each new conversation gets its own context"
    assert first["id"] != first["contextId"]
    kept = dialect.send_message("three", contextId=first["contextId"])
    assert kept["contextId"] == first["contextId"]
    assert kept["id"] != first["id"], "a reused context still starts a new task"
    assert kept["history"][0]["contextId"] == first["contextId"]


def test_follow_up_message_continues_an_input_required_task(dialect, store):
    task_id = seed(store, "input-required", texts=("book a flight", "Where to?"), context_id="ctx-trip")
    params = {"message": dialect.message("Paris", taskId=task_id), "configuration": dialect.config(blocking=True)}
    task = dialect.unwrap(ok(dialect.send, params, version=dialect.version))
    assert task["id"] == task_id
    assert task["contextId"] == "ctx-trip"
    assert task["status"]["state"] == dialect.state("completed")
    assert [m["parts"][0]["text"] for m in task["history"]] == ["book a flight", "Where to?", "Paris"]
    assert task["artifacts"][0]["parts"] == [dialect.text("echo: Paris")]
    [last] = dialect.get_task(task_id, historyLength=1)["history"]
    assert last["parts"] == [dialect.text("Paris")]


def test_follow_up_with_wrong_context_is_invalid(dialect, store):
    task_id = seed(store, "input-required", context_id="ctx-a")
    params = {"message": dialect.message("Paris", taskId=task_id, contextId="ctx-b")}
    error = fails(dialect.send, params, code=-32602, version=dialect.version)
    assert "message.contextId" in error["message"]
    assert dialect.get_task(task_id)["status"]["state"] == dialect.state("input-required")


def test_follow_up_to_a_working_task_is_refused(dialect, store):
    task_id = seed(store, "working")
    params = {"message": dialect.message("hurry", taskId=task_id)}
    error = fails(dialect.send, params, code=-32004, version=dialect.version)
    assert "working" in error["message"]


# --- ListTasks --------------------------------------------------------------------------


def test_list_tasks_filters_by_context_and_status(dialect, settings):
    ctx = f"ctx-{uuid.uuid4()}"
    done = [dialect.send_message(f"ok {i}", contextId=ctx)["id"] for i in range(2)]
    other = dialect.send_message("elsewhere", contextId="ctx-other")
    settings.A2A_HANDLER = handler_path(failing_handler)
    failed = dialect.send_message("bad", contextId=ctx)["id"]

    page = ok(dialect.list, {"contextId": ctx}, version=dialect.version)
    assert {t["id"] for t in page["tasks"]} == {*done, failed}
    assert page["totalSize"] == 3
    assert page["nextPageToken"] == ""
    assert other["id"] not in {t["id"] for t in page["tasks"]}

    page = ok(dialect.list, {"contextId": ctx, "status": dialect.state("failed")}, version=dialect.version)
    assert [t["id"] for t in page["tasks"]] == [failed]
    assert page["tasks"][0]["status"]["state"] == dialect.state("failed")
    assert page["totalSize"] == 1

    page = ok(dialect.list, {"status": dialect.state("completed")}, version=dialect.version)
    assert {t["id"] for t in page["tasks"]} == {*done, other["id"]}

    page = ok(dialect.list, {"contextId": "ctx-nobody"}, version=dialect.version)
    assert page == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}


def test_list_tasks_shape(dialect):
    ctx = f"ctx-{uuid.uuid4()}"
    sent = dialect.send_message("listed", contextId=ctx)
    [task] = ok(dialect.list, {"contextId": ctx}, version=dialect.version)["tasks"]
    assert task["id"] == sent["id"]
    assert task["status"]["state"] == dialect.state("completed")
    assert "artifacts" not in task, "artifacts only when asked for"
    if dialect.v10:
        assert no_kind_keys(task)
    else:
        assert task["kind"] == "task"
    [task] = ok(dialect.list, {"contextId": ctx, "includeArtifacts": True}, version=dialect.version)["tasks"]
    assert task["artifacts"] == sent["artifacts"]
    [task] = ok(dialect.list, {"contextId": ctx, "historyLength": 0}, version=dialect.version)["tasks"]
    assert "history" not in task


def test_list_tasks_paginates(dialect):
    ctx = f"ctx-{uuid.uuid4()}"
    ids = {dialect.send_message(f"task {i}", contextId=ctx)["id"] for i in range(5)}
    seen: list[str] = []
    token = None
    pages = []
    for _ in range(10):
        params: dict[str, Any] = {"contextId": ctx, "pageSize": 2}
        if token:
            params["pageToken"] = token
        page = ok(dialect.list, params, version=dialect.version)
        assert page["pageSize"] == 2
        assert page["totalSize"] == 5
        pages.append(len(page["tasks"]))
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        assert isinstance(token, str)
        if not token:
            break
    assert pages == [2, 2, 1]
    assert len(seen) == len(set(seen)) == 5
    assert set(seen) == ids
    # Newest-updated first.
    stamps = [dialect.get_task(i)["status"]["timestamp"] for i in seen]
    assert stamps == sorted(stamps, reverse=True)


def test_list_tasks_without_params(dialect):
    dialect.send_message("anything")
    page = ok(dialect.list, version=dialect.version)
    assert len(page["tasks"]) == 1
    assert page["nextPageToken"] == ""


def test_list_tasks_proto_names():
    ctx = f"ctx-{uuid.uuid4()}"
    V10.send_message("a", contextId=ctx)
    V10.send_message("b", contextId=ctx)
    page = ok("ListTasks", {"context_id": ctx, "page_size": 1, "include_artifacts": True}, version="1.0")
    assert len(page["tasks"]) == 1 and page["totalSize"] == 2 and page["nextPageToken"]
    assert page["tasks"][0]["artifacts"]
    rest = ok("ListTasks", {"context_id": ctx, "page_size": 1, "page_token": page["nextPageToken"]}, version="1.0")
    assert len(rest["tasks"]) == 1 and rest["nextPageToken"] == ""
    assert rest["tasks"][0]["id"] != page["tasks"][0]["id"]


# --- The toolnexus dialect exactly as the toolnexus client sends it ----------------


def test_toolnexus_client_flow():
    send = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "role": "user",
                "messageId": str(uuid.uuid4()),
                "parts": [{"kind": "text", "text": "archive this"}],
            },
            "configuration": {"blocking": False},
        },
    }
    answer = envelope(post(send))
    assert answer["id"] == 1
    result = answer["result"]
    task_id = result["id"]
    assert result["kind"] == "task"
    assert result["status"]["state"] in ("submitted", "working")

    def poll() -> dict[str, Any] | None:
        body = envelope(post({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}))
        assert body["id"] == 2
        got = body["result"]
        assert got["id"] == task_id
        assert got["status"]["state"] in ("submitted", "working", "completed"), got["status"]
        return got if got["status"]["state"] == "completed" else None

    task = wait_until(poll, what="the toolnexus task to complete")
    assert task["artifacts"][0]["parts"][0] == {"kind": "text", "text": "echo: archive this"}
    assert TIMESTAMP.match(task["status"]["timestamp"])


def test_toolnexus_blocking_send():
    params = {"message": {"role": "user", "messageId": "m-1", "parts": [{"kind": "text", "text": "now"}]}}
    result = ok("SendMessage", params)
    assert result["kind"] == "task"
    assert result["status"]["state"] == "completed"
    assert result["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: now"}]


# === Batches and notifications ===========================================================


def test_batch(store):
    batch = [
        request("message/send", {"message": V03.message("in a batch")}, "a"),
        {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "ignored"}},  # a notification
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
        {"foo": "boo"},
        request("tasks/get", {"id": "missing"}, 5),
        7,
    ]
    answer = envelope(post(batch))
    assert isinstance(answer, list)
    assert [item["id"] for item in answer] == ["a", 3, None, 5, None]
    assert answer[0]["result"]["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: in a batch"}]
    check_error(answer[1]["error"], -32601)
    check_error(answer[2]["error"], -32600)
    check_error(answer[3]["error"], -32001)
    check_error(answer[4]["error"], -32600)
    assert len(store) == 1


def test_batch_in_v10():
    batch = [request("SendMessage", {"message": V10.message("b1")}, 1), request("GetTask", {"id": "zz"}, 2)]
    first, second = envelope(post(batch, version="1.0"))
    assert first["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert second["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"


def test_batch_of_one_is_an_array():
    answer = envelope(post([request("GetTask", {"id": "x"}, 1)]))
    assert isinstance(answer, list) and len(answer) == 1
    check_error(answer[0]["error"], -32001)


def test_all_notification_batch_gets_no_content(store):
    batch = [
        {"jsonrpc": "2.0", "method": "message/send", "params": {"message": V03.message("quietly")}},
        {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "missing"}},
        {"jsonrpc": "2.0", "method": "no/such/method"},
    ]
    response = post(batch)
    assert response.status_code == 204
    assert response.content == b""
    assert len(store) == 1, "notifications still run"


@pytest.mark.parametrize("version", VERSIONS)
def test_single_notification_gets_no_content(version, store):
    d = V10 if version else V03
    ctx = f"ctx-{uuid.uuid4()}"
    params = {"message": d.message("fire and forget", contextId=ctx), "configuration": d.config(blocking=False)}
    response = post({"jsonrpc": "2.0", "method": "SendMessage", "params": params}, version=version)
    assert response.status_code == 204
    assert response.content == b""
    [task] = ok(d.list, {"contextId": ctx}, version=version)["tasks"]
    done = d.wait_for(task["id"], "completed")
    assert done["artifacts"][0]["parts"] == [d.text("echo: fire and forget")]


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param({"jsonrpc": "2.0", "method": "no/such/method"}, id="unknown-method"),
        pytest.param({"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "missing"}}, id="task-not-found"),
        pytest.param({"jsonrpc": "2.0", "method": "SendMessage", "params": {}}, id="invalid-params"),
    ],
)
def test_failing_notification_gets_no_content(payload):
    response = post(payload)
    assert response.status_code == 204
    assert response.content == b""


@pytest.mark.parametrize("request_id", ["abc", "", 0, -12, 3.5, None])
def test_request_id_is_echoed(request_id):
    body = call("GetTask", {"id": "x"}, request_id=request_id)
    assert body["id"] == request_id
    assert type(body["id"]) is type(request_id)
    check_error(body["error"], -32001)


# === The Agent Card ======================================================================


def test_card_without_version_serves_both_generations():
    response = http("GET", CARD)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    card = response.json()
    assert card["name"] == "toolnexus-agent"
    assert card["description"]
    assert card["version"]
    assert card["url"] == "http://testserver/a2a/"
    assert card["protocolVersion"] == "0.3.0"
    assert card["preferredTransport"] == "JSONRPC"
    assert card["additionalInterfaces"] == [
        {"url": card["url"], "transport": "JSONRPC"},
        {"url": "http://testserver/a2a/rest", "transport": "HTTP+JSON"},
    ]
    assert card["capabilities"]["streaming"] is True
    interfaces = {(i["protocolBinding"], i["protocolVersion"]): i["url"] for i in card["supportedInterfaces"]}
    assert interfaces == {
        ("JSONRPC", "1.0"): "http://testserver/a2a/",
        ("HTTP+JSON", "1.0"): "http://testserver/a2a/rest",
        ("JSONRPC", "0.3"): "http://testserver/a2a/",
        ("HTTP+JSON", "0.3"): "http://testserver/a2a/rest",
    }
    for skill in card["skills"]:
        assert skill["id"] and skill["name"] and isinstance(skill["tags"], list)


def test_card_for_v10_is_strict():
    response = http("GET", CARD, headers={"A2A-Version": "1.0"})
    assert response.status_code == 200
    card = response.json()
    for key in ("url", "protocolVersion", "preferredTransport", "additionalInterfaces"):
        assert key not in card, key
    assert "supportsAuthenticatedExtendedCard" not in card
    assert card["supportedInterfaces"][0] == {
        "url": "http://testserver/a2a/",
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
    }
    assert card["capabilities"]["extendedAgentCard"] is False
    assert card["name"] == "toolnexus-agent"
    by_query = http("GET", f"{CARD}?A2A-Version=1.0").json()
    assert by_query == card


def test_card_validates_against_v10_schema():
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    schema = json.loads(V10_SCHEMA.read_text())
    resources = []
    for title, definition in schema["definitions"].items():
        name = title.replace(" ", "")
        for package in ("lf.a2a.v1", "google.protobuf"):
            resources.append((f"{package}.{name}.jsonschema.json", referencing.Resource.from_contents(definition)))
    registry = referencing.Registry().with_resources(resources)
    validator = jsonschema.Draft202012Validator(schema["definitions"]["Agent Card"], registry=registry)
    card = http("GET", CARD, headers={"A2A-Version": "1.0"}).json()
    errors = sorted(validator.iter_errors(card), key=str)
    assert not errors, [e.message for e in errors]
    loose = http("GET", CARD).json()
    assert list(validator.iter_errors(loose)), "the v0.3 keys are not allowed in a strict v1.0 card"


def test_card_caching_headers():
    response = http("GET", CARD)
    etag = response.headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    assert response.headers["Cache-Control"] == "public, max-age=300"
    assert "A2A-Version" in response.headers["Vary"]
    again = http("GET", CARD)
    assert again.headers["ETag"] == etag, "the same card has the same ETag"
    not_modified = http("GET", CARD, headers={"If-None-Match": etag})
    assert not_modified.status_code == 304
    assert not_modified.content == b""
    assert not_modified.headers["ETag"] == etag
    stale = http("GET", CARD, headers={"If-None-Match": '"0000"'})
    assert stale.status_code == 200 and stale.json()["name"]
    v10 = http("GET", CARD, headers={"A2A-Version": "1.0"})
    assert v10.headers["ETag"] != etag, "the two documents have different ETags"
    assert http("GET", CARD, headers={"A2A-Version": "1.0", "If-None-Match": etag}).status_code == 200


def test_card_follows_settings(settings):
    settings.A2A_PUBLIC_URL = "https://agent.example.com/"
    settings.A2A_AGENT_NAME = "renamed-agent"
    settings.A2A_CARD_MAX_AGE = 60
    response = http("GET", CARD)
    card = response.json()
    assert card["name"] == "renamed-agent"
    assert card["url"] == "https://agent.example.com/a2a/"
    assert {i["url"] for i in card["supportedInterfaces"]} == {
        "https://agent.example.com/a2a/",
        "https://agent.example.com/a2a/rest",
    }
    assert response.headers["Cache-Control"] == "public, max-age=60"


def test_card_at_legacy_location():
    assert http("GET", "/.well-known/agent.json").json() == http("GET", CARD).json()


def test_card_in_unsupported_version():
    response = http("GET", CARD, headers={"A2A-Version": "2.0"})
    assert response.status_code == 400
    check_error(response.json()["error"], -32009)


# === Both ways in: the direct A2A path of a2a.asgi and Django's full middleware stack ===


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "middleware"])
def test_same_answers_with_and_without_the_direct_path(direct, settings):
    settings.A2A_DIRECT_ASGI = direct
    task = V03.send_message("either way")
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: either way"}]
    assert V10.get_task(task["id"])["status"]["state"] == "TASK_STATE_COMPLETED"
    check_error(envelope(post(b"{", version="1.0"))["error"], -32700, "1.0")
    assert post({"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}}).status_code == 204
    assert http("GET", ENDPOINT).status_code == 405
    card = http("GET", CARD)
    assert card.json()["url"] == "http://testserver/a2a/"
    assert http("GET", CARD, headers={"If-None-Match": card.headers["ETag"]}).status_code == 304


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "middleware"])
@pytest.mark.parametrize("path", [ENDPOINT, CARD])
def test_disallowed_host_is_refused(path, direct, settings):
    settings.A2A_DIRECT_ASGI = direct
    method = "POST" if path == ENDPOINT else "GET"
    content = json.dumps(request("GetTask", {"id": "x"})).encode() if method == "POST" else None
    response = http(method, path, content=content, headers={"Host": "evil.example"})
    assert response.status_code == 400
