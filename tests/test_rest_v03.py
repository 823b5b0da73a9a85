"""The v0.3 HTTP+JSON binding, in-process: every route under ``/a2a/rest/v1``, the
ProtoJSON of v0.3's gRPC messages in both spellings (JSON names as the spec writes
them, proto field names as the official SDK's v0.3 client sends them), error bodies
and statuses, and bad input answered with a 4xx naming the field, never a 500.

tests/interop drives the same routes with the SDK's own v0.3 REST client.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from typing import Any

import httpx
import orjson
import pytest

from a2a.core.events import bus
from a2a.protocol import V03_REST, V10, rest_dialect_for
from a2a.protocol.errors import ERROR_NAMES, VersionNotSupportedError
from a2a.testing.client import WireClient, send_params
from stores.memory import MemoryTaskStore
from tests.helpers import ASGI, wait_until

V1 = "/a2a/rest/v1"
V03 = {"A2A-Version": "0.3"}
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
#: The test kit's client speaking v0.3 (``A2A-Version: 0.3``; HTTP+JSON under ``/a2a/rest/v1``).
WIRE = WireClient(version="0.3")


@pytest.fixture(autouse=True)
def site(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True


def http(method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None, **params: Any):
    content = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    if content and not any(name.lower() == "content-type" for name in headers or {}):
        headers = {**(headers or {}), "Content-Type": "application/json"}  # as the v0.3 clients send it
    return ASGI.request(method, path, content=content, headers=headers, params=params or None, version=None)


def message(text: str, **extra: Any) -> dict[str, Any]:
    """A v0.3 proto Message, in JSON names."""
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "content": [{"text": text}], **extra}


def task_of(response: httpx.Response) -> dict[str, Any]:
    """A ``message:send`` answer's task: HTTP 200, ``application/json``."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()["task"]


def error_of(response: httpx.Response, status: int, name: str, reason: str) -> dict[str, Any]:
    """A v0.3 error: the google.rpc.Status, the error's name as ``type``, its message
    and its JSON-RPC code (what the JavaScript SDK's v0.3 client maps to its errors)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "type", "message", "code"}, body
    assert body["type"] == name
    assert ERROR_NAMES[body["code"]] == name
    error = body["error"]
    assert error["code"] == status and error["message"] == body["message"] and body["message"]
    assert error["details"][0]["@type"] == ERROR_INFO and error["details"][0]["reason"] == reason
    return body


def sse(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [orjson.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


# --- dialect selection and routes -----------------------------------------------------------


def test_version_picks_the_dialect():
    assert rest_dialect_for(None) is V03_REST
    assert rest_dialect_for("") is V03_REST
    assert rest_dialect_for("0.3") is V03_REST
    assert rest_dialect_for("1.0") is V10
    with pytest.raises(VersionNotSupportedError):
        rest_dialect_for("0.2")


def test_send_in_the_sdks_proto_field_names():
    """What the SDK's v0.3 REST client sends: MessageToDict with proto field names."""
    body = {
        "request": {
            "message_id": "m-1",
            "role": "ROLE_USER",
            "content": [{"text": "progress:thinking;artifact:first"}],
            "metadata": {"k": "v"},
        },
        "configuration": {"accepted_output_modes": ["text/plain"], "history_length": 5, "blocking": True},
    }
    response = http("POST", f"{V1}/message:send", body, headers=V03)
    assert response.status_code == 200, response.text
    task = response.json()["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "kind" not in task
    assert [a["parts"] for a in task["artifacts"]] == [
        [{"text": "first"}],
        [{"text": "done: progress:thinking;artifact:first"}],
    ]
    [sent] = task["history"]
    assert sent["messageId"] == "m-1" and sent["role"] == "ROLE_USER" and sent["metadata"] == {"k": "v"}
    assert sent["content"] == [{"text": "progress:thinking;artifact:first"}]
    assert sent["taskId"] == task["id"] and sent["contextId"] == task["contextId"]


def test_only_fields_of_v03s_proto_are_rendered():
    """A strict ProtoJSON parser (the a2a-sdk 0.3 client's) refuses unknown fields: a
    referenceTaskIds given in v1.0 is kept, but not shown in v0.3's Message."""
    body = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}], "referenceTaskIds": ["t0"]}}
    v10 = http("POST", "/a2a/rest/message:send", body, headers={"A2A-Version": "1.0"}).json()["task"]
    assert v10["history"][0]["referenceTaskIds"] == ["t0"]
    v03 = http("GET", f"{V1}/tasks/{v10['id']}", headers=V03).json()
    assert set(v03) <= {"id", "contextId", "status", "artifacts", "history", "metadata"}
    assert set(v03["history"][0]) == {"messageId", "role", "content", "contextId", "taskId"}


def test_no_version_header_is_v03_and_the_v1_prefix_is_optional():
    task = task_of(
        WIRE.rest("POST", "/message:send", json=send_params(message("hello"), "0.3", configuration={"blocking": True}))
    )
    for path in (f"{V1}/tasks/{task['id']}", f"/a2a/rest/tasks/{task['id']}"):
        for headers in (None, V03, {"A2A-Version": ""}):
            response = http("GET", path, headers=headers)
            assert response.status_code == 200 and response.json() == task
    by_query = http("GET", f"{V1}/tasks/{task['id']}", **{"A2A-Version": "0.3"})
    assert by_query.json() == task
    v10 = http("GET", f"{V1}/tasks/{task['id']}", headers={"A2A-Version": "1.0"})
    assert v10.headers["content-type"] == "application/a2a+json"
    assert v10.json()["history"][0]["parts"] == [{"text": "hello"}]  # v1.0's Message, not v0.3's


def test_get_with_history_length_and_unknown_task():
    task = task_of(WIRE.rest("POST", "/message:send", json=send_params(message("ask:more?"), "0.3")))
    follow = message("artifact:ok", taskId=task["id"], contextId=task["contextId"])
    http("POST", f"{V1}/message:send", {"message": follow, "configuration": {"blocking": True}}, headers=V03)
    full = http("GET", f"{V1}/tasks/{task['id']}", headers=V03).json()
    assert [m["role"] for m in full["history"]] == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]
    one = http("GET", f"{V1}/tasks/{task['id']}", headers=V03, historyLength=1).json()
    assert one["history"] == full["history"][-1:]
    snake = http("GET", f"{V1}/tasks/{task['id']}", headers=V03, history_length=0).json()
    assert "history" not in snake
    error_of(http("GET", f"{V1}/tasks/nope", headers=V03), 404, "TaskNotFoundError", "TASK_NOT_FOUND")
    bad = error_of(
        http("GET", f"{V1}/tasks/{task['id']}", headers=V03, historyLength=-1),
        400,
        "InvalidParamsError",
        "INVALID_PARAMS",
    )
    assert bad["error"]["details"][1]["fieldViolations"][0]["field"] == "historyLength"


def test_blocking_is_a_proto3_bool():
    """No configuration: wait (as the SDK's v0.3 server); a configuration without
    ``blocking`` (proto3's false): do not."""
    assert (
        task_of(WIRE.rest("POST", "/message:send", json=send_params(message("sleep:0.01"), "0.3")))["status"]["state"]
        == "TASK_STATE_COMPLETED"
    )
    assert (
        task_of(
            WIRE.rest(
                "POST",
                "/message:send",
                json=send_params(message("sleep:0.01"), "0.3", configuration={"blocking": True}),
            )
        )["status"]["state"]
        == "TASK_STATE_COMPLETED"
    )
    for configuration in ({}, {"blocking": False}, {"historyLength": 3}):
        task = task_of(
            WIRE.rest("POST", "/message:send", json=send_params(message("sleep:5"), "0.3", configuration=configuration))
        )
        assert task["status"]["state"] == "TASK_STATE_SUBMITTED", configuration
        http("POST", f"{V1}/tasks/{task['id']}:cancel", headers=V03)


def test_cancel_is_cancelled_with_two_ls():
    task = task_of(WIRE.rest("POST", "/message:send", json=send_params(message("sleep:5"), "0.3", configuration={})))
    canceled = http("POST", f"{V1}/tasks/{task['id']}:cancel", headers=V03)
    assert canceled.status_code == 200
    assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELLED"
    with_body = http("POST", f"{V1}/tasks/{task['id']}:cancel", {"name": f"tasks/{task['id']}"}, headers=V03)
    error_of(with_body, 400, "TaskNotCancelableError", "TASK_NOT_CANCELABLE")
    error_of(http("POST", f"{V1}/tasks/nope:cancel", headers=V03), 404, "TaskNotFoundError", "TASK_NOT_FOUND")


def test_list_tasks_filters_on_proto_state_names():
    context = str(uuid.uuid4())
    done = task_of(WIRE.rest("POST", "/message:send", json=send_params(message("one", contextId=context), "0.3")))
    stopped = task_of(
        WIRE.rest(
            "POST", "/message:send", json=send_params(message("sleep:5", contextId=context), "0.3", configuration={})
        )
    )
    http("POST", f"{V1}/tasks/{stopped['id']}:cancel", headers=V03)
    page = http("GET", f"{V1}/tasks", headers=V03, contextId=context).json()
    assert [t["id"] for t in page["tasks"]] == [stopped["id"], done["id"]]
    assert page["totalSize"] == 2 and page["nextPageToken"] == ""
    for state, expected in (("TASK_STATE_CANCELLED", stopped), ("TASK_STATE_COMPLETED", done)):
        listed = http("GET", f"{V1}/tasks", headers=V03, contextId=context, status=state).json()
        assert [t["id"] for t in listed["tasks"]] == [expected["id"]], state
    error_of(http("GET", f"{V1}/tasks", headers=V03, status="completed"), 400, "InvalidParamsError", "INVALID_PARAMS")


# --- streams ----------------------------------------------------------------------------------


def test_stream_is_bare_stream_responses_with_final():
    events = sse(http("POST", f"{V1}/message:stream", {"message": message("progress:half;artifact:a")}, headers=V03))
    assert [next(iter(e)) for e in events] == [
        "task",
        "statusUpdate",
        "statusUpdate",
        "artifactUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    updates = [e["statusUpdate"] for e in events if "statusUpdate" in e]
    assert [u["final"] for u in updates] == [False, False, True]
    assert updates[1]["status"]["message"]["content"] == [{"text": "half"}]
    assert updates[1]["status"]["message"]["role"] == "ROLE_AGENT"
    assert updates[-1]["status"]["state"] == "TASK_STATE_COMPLETED"
    artifact = events[3]["artifactUpdate"]
    assert artifact["artifact"]["parts"] == [{"text": "a"}] and artifact["taskId"] == events[0]["task"]["id"]


def test_direct_reply_is_a_message():
    sent = http("POST", f"{V1}/message:send", {"message": message("reply:there")}, headers=V03).json()
    assert sent["message"]["content"] == [{"text": "there"}] and sent["message"]["role"] == "ROLE_AGENT"


def test_stream_errors_before_the_first_event_are_plain_errors():
    error_of(
        http("POST", f"{V1}/message:stream", {"message": message("x", taskId="nope")}, headers=V03),
        404,
        "TaskNotFoundError",
        "TASK_NOT_FOUND",
    )


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_subscribe(method, tmp_path):
    gate = tmp_path / "gate"
    task = task_of(
        WIRE.rest(
            "POST", "/message:send", json=send_params(message(f"wait:{gate};artifact:late"), "0.3", configuration={})
        )
    )

    def open_gate_once_subscribed() -> None:
        wait_until(lambda: bus.subscriber_count(task["id"]) > 0, timeout=10, what="a subscriber")
        gate.touch()

    opener = threading.Thread(target=open_gate_once_subscribed)
    opener.start()
    events = sse(http(method, f"{V1}/tasks/{task['id']}:subscribe", headers=V03))
    opener.join()
    assert events[0]["task"]["id"] == task["id"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert events[-1]["statusUpdate"]["final"] is True
    assert any("artifactUpdate" in e for e in events)
    again = http(method, f"{V1}/tasks/{task['id']}:subscribe", headers=V03)
    error_of(again, 400, "UnsupportedOperationError", "UNSUPPORTED_OPERATION")
    error_of(http(method, f"{V1}/tasks/nope:subscribe", headers=V03), 404, "TaskNotFoundError", "TASK_NOT_FOUND")


# --- parts ------------------------------------------------------------------------------------


def test_unsupported_media_type():
    content = [{"file": {"fileWithUri": "https://example.com/a.pdf", "mimeType": "application/pdf"}}]
    answer = http("POST", f"{V1}/message:send", {"message": {**message("x"), "content": content}}, headers=V03)
    error_of(answer, 400, "ContentTypeNotSupportedError", "CONTENT_TYPE_NOT_SUPPORTED")


def test_file_and_data_parts_round_trip():
    raw = base64.b64encode(b"\x00\x01binary").decode()
    content = [
        {"text": "artifact:ok"},
        {"file": {"fileWithUri": "https://example.com/a.txt", "mimeType": "text/plain", "name": "a.txt"}},
        {"file": {"file_with_bytes": raw, "mime_type": "text/plain"}},
        {"data": {"data": {"n": 1, "list": [1, 2]}}, "metadata": {"m": True}},
    ]
    body = {"message": {**message("x"), "content": content}, "configuration": {"blocking": True}}
    task = http("POST", f"{V1}/message:send", body, headers=V03).json()["task"]
    assert task["history"][0]["content"] == [
        content[0],
        content[1],
        {"file": {"fileWithBytes": raw, "mimeType": "text/plain"}},
        content[3],
    ]
    # The same task in v1.0: the parts were understood, not copied.
    v10 = http("GET", f"/a2a/rest/tasks/{task['id']}", headers={"A2A-Version": "1.0"}).json()
    assert v10["history"][0]["parts"][1:] == [
        {"url": "https://example.com/a.txt", "mediaType": "text/plain", "filename": "a.txt"},
        {"raw": raw, "mediaType": "text/plain"},
        {"data": {"n": 1, "list": [1, 2]}, "metadata": {"m": True}},
    ]


def test_data_that_is_not_an_object_is_rendered_under_value():
    """A Struct holds objects only; v1.0 data parts may hold any JSON value."""
    assert V03_REST.render_part({"kind": "data", "data": [1, 2]}) == {"data": {"data": {"value": [1, 2]}}}
    assert V03_REST.render_part({"kind": "data", "data": {"a": 1}}) == {"data": {"data": {"a": 1}}}
    answer = task_of(
        WIRE.rest(
            "POST",
            "/message:send",
            json=send_params(message('data:[1, "two"]'), "0.3", configuration={"blocking": True}),
        )
    )
    assert answer["artifacts"][0]["parts"] == [{"data": {"data": {"value": [1, "two"]}}}]


def test_every_state_has_its_v03_proto_name():
    names = {s: V03_REST.render_state(s) for s in ("submitted", "working", "input-required", "canceled")}
    assert names == {
        "submitted": "TASK_STATE_SUBMITTED",
        "working": "TASK_STATE_WORKING",
        "input-required": "TASK_STATE_INPUT_REQUIRED",
        "canceled": "TASK_STATE_CANCELLED",
    }
    assert V03_REST.parse_state("TASK_STATE_CANCELLED", "status") == "canceled"
    assert V03_REST.parse_state("TASK_STATE_CANCELED", "status") == "canceled"  # v1.0's spelling too


# --- push notification configs ----------------------------------------------------------------


def config_body(shape: str, task_id: str, config_id: str, url: str) -> dict[str, Any]:
    """One PushNotificationConfig in each body shape a v0.3 client may send."""
    inner = {"id": config_id, "url": url, "token": f"t-{config_id}"}
    return {
        # the SDK's v0.3 client: a CreateTaskPushNotificationConfigRequest, proto names
        "sdk": {
            "parent": f"tasks/{task_id}",
            "config_id": config_id,
            "config": {"push_notification_config": {k: v for k, v in inner.items() if k != "id"}},
        },
        # the v0.3 spec's REST payload: {config: TaskPushNotificationConfig}
        "spec": {
            "config": {"name": f"tasks/{task_id}/pushNotificationConfigs/{config_id}", "pushNotificationConfig": inner}
        },
        # a2a.proto's HTTP rule (body: "config"): the TaskPushNotificationConfig itself
        "proto": {"pushNotificationConfig": inner},
        # a bare PushNotificationConfig
        "bare": inner,
    }[shape]


def test_push_config_routes():
    task = task_of(WIRE.rest("POST", "/message:send", json=send_params(message("ask:more?"), "0.3")))
    base = f"{V1}/tasks/{task['id']}/pushNotificationConfigs"
    shapes = ("sdk", "spec", "proto", "bare")
    for shape in shapes:
        url = f"http://127.0.0.1:9/{shape}"  # loopback (allowed here); nothing is sent while the task waits
        created = http("POST", base, config_body(shape, task["id"], shape, url), headers=V03)
        assert created.status_code == 200, (shape, created.text)
        assert created.json() == {
            "name": f"tasks/{task['id']}/pushNotificationConfigs/{shape}",
            "pushNotificationConfig": {"id": shape, "url": url, "token": f"t-{shape}"},
        }
    listed = http("GET", base, headers=V03).json()
    assert set(listed) == {"configs", "nextPageToken"}
    assert sorted(c["pushNotificationConfig"]["id"] for c in listed["configs"]) == sorted(shapes)
    got = http("GET", f"{base}/spec", headers=V03).json()
    assert got["pushNotificationConfig"]["url"] == "http://127.0.0.1:9/spec"
    deleted = http("DELETE", f"{base}/spec", headers=V03)
    assert deleted.status_code == 200 and deleted.json() == {}
    assert len(http("GET", base, headers=V03).json()["configs"]) == 3
    error_of(http("GET", f"{base}/spec", headers=V03), 404, "TaskNotFoundError", "TASK_NOT_FOUND")
    assert http("DELETE", f"{base}/spec", headers=V03).status_code == 200  # deleting is idempotent
    missing = f"{V1}/tasks/nope/pushNotificationConfigs"
    error_of(http("GET", missing, headers=V03), 404, "TaskNotFoundError", "TASK_NOT_FOUND")
    wrong = http("PUT", base, {}, headers=V03)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST, GET"
    assert wrong.json()["type"] == "MethodNotFoundError"


def test_push_config_authentication_round_trips():
    task = task_of(WIRE.rest("POST", "/message:send", json=send_params(message("ask:more?"), "0.3")))
    inner = {"url": "http://127.0.0.1:9/a", "authentication": {"schemes": ["Bearer"], "credentials": "secret"}}
    created = http(
        "POST", f"{V1}/tasks/{task['id']}/pushNotificationConfigs", {"config": {"pushNotificationConfig": inner}}
    )
    assert created.status_code == 200, created.text
    config = created.json()["pushNotificationConfig"]
    assert config["authentication"] == {"schemes": ["Bearer"], "credentials": "secret"}
    assert config["id"]  # made up by the server
    assert created.json()["name"] == f"tasks/{task['id']}/pushNotificationConfigs/{config['id']}"


def test_push_config_in_send_configuration():
    for key in ("pushNotification", "push_notification", "pushNotificationConfig"):
        task = task_of(
            WIRE.rest(
                "POST",
                "/message:send",
                json=send_params(
                    message("ask:more?"),
                    "0.3",
                    configuration={"blocking": True, key: {"url": "http://127.0.0.1:9/s", "token": "t"}},
                ),
            )
        )
        [config] = http("GET", f"{V1}/tasks/{task['id']}/pushNotificationConfigs", headers=V03).json()["configs"]
        assert config["pushNotificationConfig"]["url"] == "http://127.0.0.1:9/s", key


def test_push_disabled(settings):
    settings.A2A_PUSH_NOTIFICATIONS = False
    task = task_of(WIRE.rest("POST", "/message:send", json=send_params(message("quick"), "0.3")))
    answer = http("GET", f"{V1}/tasks/{task['id']}/pushNotificationConfigs", headers=V03)
    error_of(answer, 400, "PushNotificationNotSupportedError", "PUSH_NOTIFICATION_NOT_SUPPORTED")


# --- bad input --------------------------------------------------------------------------------

GOOD = {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "hi"}]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "message"),
        ({"message": {**GOOD, "content": []}}, "message.content"),
        ({"message": {**GOOD, "content": None, "parts": [{"text": "v1.0's key"}]}}, "message.content"),
        ({"message": {**GOOD, "role": "user"}}, "message.role"),
        ({"message": {**GOOD, "role": "ROLE_UNSPECIFIED"}}, "message.role"),
        ({"message": {**GOOD, "content": [{"text": "a", "data": {}}]}}, "message.content[0]"),
        ({"message": {**GOOD, "content": [{"text": 5}]}}, "message.content[0].text"),
        ({"message": {**GOOD, "content": [{"file": {}}]}}, "message.content[0].file"),
        (
            {"message": {**GOOD, "content": [{"file": {"fileWithUri": "u", "fileWithBytes": "AA=="}}]}},
            "message.content[0].file",
        ),
        (
            {"message": {**GOOD, "content": [{"file": {"fileWithBytes": "not base64!"}}]}},
            "message.content[0].file.fileWithBytes",
        ),
        ({"message": {**GOOD, "content": [{"file": {"fileWithUri": 7}}]}}, "message.content[0].file.fileWithUri"),
        ({"message": {**GOOD, "content": [{"file": "x"}]}}, "message.content[0].file"),
        ({"message": {**GOOD, "content": [{"data": [1]}]}}, "message.content[0].data"),
        ({"message": {**GOOD, "content": [{"data": {"data": "x"}}]}}, "message.content[0].data.data"),
        ({"message": GOOD, "configuration": {"blocking": "yes"}}, "configuration.blocking"),
        ({"message": GOOD, "configuration": []}, "configuration"),
        (
            {"message": GOOD, "configuration": {"pushNotification": {"url": "ftp://x"}}},
            "configuration.pushNotification.url",
        ),
        ({"request": GOOD, "metadata": 3}, "metadata"),
    ],
)
def test_send_bad_params(body, field):
    answer = error_of(
        http("POST", f"{V1}/message:send", body, headers=V03), 400, "InvalidParamsError", "INVALID_PARAMS"
    )
    assert answer["error"]["details"][1]["@type"] == BAD_REQUEST
    assert answer["error"]["details"][1]["fieldViolations"][0]["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"config": []}, "config"),
        ({"config": {"pushNotificationConfig": {"url": "ftp://x"}}}, "config.pushNotificationConfig.url"),
        ({"pushNotificationConfig": 5}, "pushNotificationConfig"),
        ({}, "pushNotificationConfig"),
        ({"url": "http://127.0.0.1:9/x", "authentication": {"schemes": "Bearer"}}, "authentication.schemes"),
        ({"url": "http://127.0.0.1:9/x", "token": "a\nb"}, "token"),
        ({"url": "http://127.0.0.1:9/x", "configId": 5}, "configId"),
    ],
)
def test_push_create_bad_params(body, field):
    task = task_of(WIRE.rest("POST", "/message:send", json=send_params(message("ask:more?"), "0.3")))
    answer = http("POST", f"{V1}/tasks/{task['id']}/pushNotificationConfigs", body, headers=V03)
    error = error_of(answer, 400, "InvalidParamsError", "INVALID_PARAMS")["error"]
    assert error["details"][1]["fieldViolations"][0]["field"] == field


def test_malformed_bodies_and_methods():
    send_url = f"{V1}/message:send"
    error_of(http("POST", send_url, b"{not json", headers=V03), 400, "JSONParseError", "PARSE_ERROR")
    error_of(http("POST", send_url, [GOOD], headers=V03), 400, "InvalidRequestError", "INVALID_REQUEST")
    error_of(http("POST", send_url, b"\xff\xfe", headers=V03), 400, "JSONParseError", "PARSE_ERROR")
    wrong = http("GET", send_url, headers=V03)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    error_of(wrong, 405, "MethodNotFoundError", "METHOD_NOT_FOUND")


def test_unsupported_version_is_answered_as_v10():
    answer = http("GET", f"{V1}/tasks", headers={"A2A-Version": "0.2"})
    assert answer.status_code == 400
    assert answer.headers["content-type"] == "application/a2a+json"
    assert set(answer.json()) == {"error"}
    assert answer.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"


def test_extended_card_not_configured():
    answer = http("GET", f"{V1}/card", headers=V03)  # capabilities.extendedAgentCard false: unsupported
    error_of(answer, 400, "UnsupportedOperationError", "UNSUPPORTED_OPERATION")
