"""The JSON-RPC endpoint end to end: the real ASGI app, driven in-process over HTTP.

Every request goes through ``a2a.asgi.get_asgi_application()`` with httpx's ASGI
transport (each call runs its own event loop with ``asyncio.run``; the runner fulfils
tasks on its own thread). Each test gets a fresh memory store.

Dialects: no ``A2A-Version`` (or ``0.3``) is v0.3; ``1.0`` is v1.0 (ProtoJSON); the
toolnexus dialect is v0.3 payloads under the v1.0 method names, with no header.

This file: the error paths and v1.0's error shape; test_methods.py: every method when all
goes well; test_batches_and_card.py: batches, notifications and the card.
"""

from __future__ import annotations

from typing import Any

import pytest

from a2a.testing.client import rpc_body as request
from tests.helpers import http

# === Error paths ========================================================================
from tests.jsonrpc.support import (
    BAD_REQUEST,
    ENDPOINT,
    ERROR_INFO,
    NO_PARAMS,
    V03,
    V10,
    VERSIONS,
    call,
    check_error,
    envelope,
    fails,
    ok,
    post,
)


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
    settings.A2A_PUSH_NOTIFICATIONS = False  # enabled by default: tests/push/ covers them
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
