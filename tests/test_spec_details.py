"""The specification details of issue 15, each on both bindings (JSON-RPC, HTTP+JSON)
and both versions where it applies:

- SubscribeToTask on an interrupted task stays open until the task is terminal (v1.0
  3.1.6), while SendStreamingMessage closes when its turn ends (11.7);
- GetExtendedAgentCard on a card without ``capabilities.extendedAgentCard`` is
  UnsupportedOperationError (3.3.4);
- v0.3 ``message/stream`` and ``tasks/resubscribe`` send an error raised before the
  first event as an SSE stream (v0.3 3.3.1, 7.9);
- HTTP+JSON error bodies carry the gRPC status of 5.4 in ``error.status``;
- creating a push config needs no DNS (form and literal addresses only), a v0.3
  ``authentication: {}`` is no authentication;
- v0.3 method names with v1.0-shaped payloads are answered as v1.0 (docs/protocol.md).

Streams that must stay open run against the real server (uvicorn); the rest go through
the ASGI app in-process.
"""

from __future__ import annotations

import socket

import httpx
import orjson
import pytest

from a2a import push
from a2a.protocol import V03, V10, dialect_for
from a2a.protocol import errors as e
from a2a.protocol.model import new_task, set_status
from a2a.protocol.v03 import v10_shaped
from a2a.service.card import extended_card
from a2a.service.context import INTERNAL
from a2a.testing import Binding, WireClient
from a2a.testing.client import UNSET, rpc_body
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import ASGI, v03_message, v10_message
from tests.helpers import live_rpc as rpc
from tests.push.support import Receiver
from tests.server import scripted_site

HEADERS = {None: {}, "1.0": {"A2A-Version": "1.0"}}
VERSIONS = [pytest.param(None, id="v0.3"), pytest.param("1.0", id="v1.0")]
BINDINGS = ["jsonrpc", "rest"]


def state_of(event: dict) -> str | None:
    """The task state an SSE event reports (any binding, any version), as v0.3 names it;
    None for an artifact update."""
    body = event.get("result", event)
    for key in ("task", "statusUpdate"):
        if key in body:
            body = body[key]
    if "status" not in body:
        return None
    return body["status"]["state"].removeprefix("TASK_STATE_").lower().replace("_", "-")


def final_of(event: dict) -> bool | None:
    """v0.3's ``final`` flag of a status update (JSON-RPC or HTTP+JSON), else None."""
    body = event.get("result", event)
    body = body.get("statusUpdate", body)
    return body.get("final")


# === the real server: streams =====================================================================


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with scripted_site(tmp_path_factory.mktemp("spec-details"), A2A_STREAM_KEEPALIVE="0.2") as base:
        yield base


def live(base: str, binding: str, version: str | None) -> Binding:
    """``binding`` in ``version`` (None: v0.3, no ``A2A-Version``) on the server at ``base``."""
    return Binding(binding, version, WireClient(base_url=base, version=None))


def interrupted_task(base: str, script: str) -> str:
    task = rpc(base, "SendMessage", {"message": v10_message(script)}, HEADERS["1.0"])["result"]["task"]
    assert task["status"]["state"] in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED")
    return task["id"]


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize(
    ("script", "state"), [("ask:Which city?", "input-required"), ("auth:Sign in", "auth-required")]
)
def test_subscribe_to_an_interrupted_task_stays_open_until_it_is_terminal(server, binding, version, script, state):
    """v1.0 3.1.6: SubscribeToTask "can be used with any task that is not in a terminal
    state; the stream MUST terminate when the task reaches a terminal state"."""
    task_id = interrupted_task(server, script)

    def answer() -> None:  # the follow-up turn, sent while the subscription is open
        reply = rpc(server, "SendMessage", {"message": v10_message("Paris", taskId=task_id)}, HEADERS["1.0"])
        assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply

    events = live(server, binding, version).subscribe(task_id, on_first=answer)
    states = [s for s in map(state_of, events) if s is not None]
    assert states[0] == state  # the snapshot
    assert states[-1] == "completed", f"the stream closed at {states}"
    assert "working" in states  # it carried the follow-up turn
    if not version:  # v0.3: only the terminal status is final
        finals = [final_of(ev) for ev in events[1:] if state_of(ev) is not None]
        assert finals[-1] is True and not any(finals[:-1])


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("binding", BINDINGS)
def test_a_message_stream_closes_when_its_turn_pauses(server, binding, version):
    """SendStreamingMessage follows its message's turn (v1.0 11.7: "until the task
    reaches a terminal or interrupted state, at which point the stream closes"): the
    answer is another message, with its own stream."""
    events = live(server, binding, version).send_stream("ask:Which city?")
    assert state_of(events[-1]) == "input-required"
    if not version:
        assert final_of(events[-1]) is True


# === in-process: the ASGI app ======================================================================


def frames(response: httpx.Response) -> list[dict]:
    assert response.headers["content-type"].startswith("text/event-stream"), response.text
    return [orjson.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


@pytest.fixture
def memory(settings):
    settings.TASK_STORE = MemoryTaskStore()
    return get_task_store()


def saved_task(store, state: str) -> str:
    task = set_status(new_task(v03_message("hello"), context_id="ctx"), state)
    store.save(task)
    return task["id"]


# --- GetExtendedAgentCard ----------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("method", ["GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"])
@pytest.mark.parametrize("configured", [False, True], ids=["no-card", "no-authentication"])
def test_extended_card_not_declared_is_unsupported_over_jsonrpc(settings, method, version, configured):
    if configured:  # a card is configured, but with no authentication the capability is false
        settings.A2A_EXTENDED_CARD = {"description": "more"}
    card = ASGI.request("GET", "/.well-known/agent-card.json", headers=HEADERS[version]).json()
    assert card["capabilities"].get("extendedAgentCard", False) is False
    error = ASGI.rpc(method, {}, headers=HEADERS[version])["error"]
    assert error["code"] == -32004, error
    if version:
        assert error["data"][0]["reason"] == "UNSUPPORTED_OPERATION"


@pytest.mark.parametrize("version", VERSIONS)
def test_extended_card_not_declared_is_unsupported_over_rest(version):
    path = "/a2a/rest/extendedAgentCard" if version else "/a2a/rest/v1/card"
    response = ASGI.request("GET", path, headers=HEADERS[version])
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"][0]["reason"] == "UNSUPPORTED_OPERATION"
    assert error["status"] == "FAILED_PRECONDITION"
    if not version:
        assert response.json()["type"] == "UnsupportedOperationError"


def test_a_declared_card_with_none_for_the_caller_is_not_configured(settings):
    """The capability declared, no extended card for this caller: -32007 (3.3.4)."""
    settings.A2A_EXTENDED_CARD = {"description": "more"}
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    with pytest.raises(e.ExtendedAgentCardNotConfiguredError):
        extended_card(V10, INTERNAL)  # no caller


# --- v0.3 streaming methods: errors as a stream ----------------------------------------------


@pytest.mark.parametrize("header", [{}, {"A2A-Version": "0.3"}], ids=["no-version", "0.3"])
def test_v03_stream_errors_before_the_first_event_are_a_stream(memory, header):
    done = saved_task(memory, "completed")
    cases = [
        ("message/stream", {"message": {"role": "user"}}, -32602),
        ("tasks/resubscribe", {"id": "nope"}, -32001),
        ("tasks/resubscribe", {"id": done}, -32004),
    ]
    for method, params, code in cases:
        response = ASGI.rpc_response(method, params, request_id="x-1", headers=header)
        assert response.status_code == 200
        [frame] = frames(response)
        assert set(frame) == {"jsonrpc", "id", "error"} and frame["id"] == "x-1"
        assert frame["error"]["code"] == code, frame
    assert len(memory) == 1  # the refused stream created nothing


def test_v10_stream_errors_stay_plain_json(memory):
    response = ASGI.rpc_response("SendStreamingMessage", {"message": {"role": "ROLE_USER"}}, headers=HEADERS["1.0"])
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == -32602


def test_a_v03_stream_error_in_a_batch_or_a_notification_is_no_stream(memory):
    batch = [rpc_body("tasks/resubscribe", {"id": "nope"})]
    response = ASGI.request("POST", "/a2a/", json=batch)
    assert response.headers["content-type"] == "application/json"
    assert response.json()[0]["error"]["code"] == -32600
    notification = rpc_body("tasks/resubscribe", {"id": "nope"}, request_id=UNSET)
    assert ASGI.request("POST", "/a2a/", json=notification).status_code == 204


# --- HTTP+JSON error.status (5.4) -----------------------------------------------------------------

SPEC_5_4 = {
    e.TaskNotFoundError: "NOT_FOUND",
    e.TaskNotCancelableError: "FAILED_PRECONDITION",
    e.PushNotificationNotSupportedError: "FAILED_PRECONDITION",
    e.UnsupportedOperationError: "FAILED_PRECONDITION",
    e.ContentTypeNotSupportedError: "INVALID_ARGUMENT",
    e.InvalidAgentResponseError: "INTERNAL",
    e.ExtendedAgentCardNotConfiguredError: "FAILED_PRECONDITION",
    e.ExtensionSupportRequiredError: "FAILED_PRECONDITION",
    e.VersionNotSupportedError: "FAILED_PRECONDITION",
}


def test_every_a2a_error_has_the_status_of_the_table():
    assert {cls: cls.status for cls in SPEC_5_4} == SPEC_5_4


def test_an_error_takes_its_answer_from_the_table_by_reason_and_inherits_the_rest():
    class LouderNotFoundError(e.TaskNotFoundError, http_status=429, status="RESOURCE_EXHAUSTED"):
        pass

    class TeapotError(e.A2AError):  # a server-defined error: its answer as class attributes
        code, reason, http_status, default_message = -32099, "TEAPOT", 418, "I'm a teapot"

    class LouderTeapotError(TeapotError, http_status=429):
        pass

    assert (e.TaskNotCancelableError.code, e.TaskNotCancelableError.http_status) == (-32002, 400)
    assert e.TaskNotCancelableError().message == "Task cannot be canceled"
    assert (LouderNotFoundError.code, LouderNotFoundError.reason) == (-32001, "TASK_NOT_FOUND")
    assert (LouderNotFoundError.http_status, LouderNotFoundError.status) == (429, "RESOURCE_EXHAUSTED")
    assert (e.TaskNotFoundError.http_status, e.TaskNotFoundError.status) == (404, "NOT_FOUND")
    assert (TeapotError.status, TeapotError().message) == ("INTERNAL", "I'm a teapot")
    assert (LouderTeapotError.code, LouderTeapotError.reason, LouderTeapotError.http_status) == (-32099, "TEAPOT", 429)
    with pytest.raises(KeyError):

        class UnknownError(e.A2AError, reason="NO_SUCH_REASON"):  # a typo is an import-time error
            pass

    assert (e.A2AError.code, e.A2AError.http_status, e.A2AError.default_message) == (-32603, 500, "Internal error")


@pytest.mark.parametrize("version", VERSIONS)
def test_rest_error_bodies_carry_the_mapped_status(memory, settings, version):
    prefix = "/a2a/rest" if version else "/a2a/rest/v1"
    headers = HEADERS[version]
    done = saved_task(memory, "completed")
    settings.A2A_INPUT_MODES = ["text/plain"]
    if version:
        image = {
            "message": {**v10_message("x"), "parts": [{"url": "https://example.com/x.png", "mediaType": "image/png"}]}
        }
    else:
        file = {"fileWithUri": "https://example.com/x.png", "mimeType": "image/png"}
        image = {"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"file": file}]}}
    cases = [
        ("POST", f"{prefix}/tasks/{done}:cancel", None, headers, "TASK_NOT_CANCELABLE", "FAILED_PRECONDITION"),
        ("POST", f"{prefix}/tasks/{done}:subscribe", None, headers, "UNSUPPORTED_OPERATION", "FAILED_PRECONDITION"),
        ("GET", f"{prefix}/tasks/nope", None, headers, "TASK_NOT_FOUND", "NOT_FOUND"),
        ("POST", f"{prefix}/message:send", image, headers, "CONTENT_TYPE_NOT_SUPPORTED", "INVALID_ARGUMENT"),
        ("GET", f"{prefix}/tasks", None, {"A2A-Version": "9.9"}, "VERSION_NOT_SUPPORTED", "FAILED_PRECONDITION"),
    ]
    for method, path, body, hdrs, reason, status in cases:
        response = ASGI.request(method, path, json=body, headers=hdrs)
        assert response.status_code in (400, 404), response.text
        error = response.json()["error"]
        assert (error["details"][0]["reason"], error["status"]) == (reason, status), (path, error)
    settings.A2A_PUSH_NOTIFICATIONS = False
    error = ASGI.request("GET", f"{prefix}/tasks/{done}/pushNotificationConfigs", headers=headers).json()["error"]
    assert (error["details"][0]["reason"], error["status"]) == (
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
        "FAILED_PRECONDITION",
    )


# --- push configs: no DNS when created ----------------------------------------------------------


@pytest.fixture
def no_dns(monkeypatch) -> list[str]:
    """Every lookup fails (DNS is down); returns the names asked for."""
    asked: list[str] = []

    def getaddrinfo(host, *args, **kwargs):
        asked.append(host)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


@pytest.fixture
def quick_push(settings):
    settings.A2A_PUSH_RETRY_DELAY = 0.01
    settings.A2A_PUSH_TIMEOUT = 5.0
    yield
    push.shutdown(grace=0)


def created(way: Binding, task_id: str, config: dict) -> dict:
    """The push config ``way`` created (its v0.3 JSON-RPC wrapper taken off)."""
    body = way.result(way.create_push_config(task_id, config))
    return body.get("pushNotificationConfig", body)


def refused(way: Binding, task_id: str, config: dict) -> str:
    """The message of the invalid-params error ``way`` answers creating the config with."""
    error = way.error(way.create_push_config(task_id, config))
    assert (error.status, error.code) == (200 if way.name == "jsonrpc" else 400, -32602), error
    return error.message


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("binding", BINDINGS)
def test_creating_a_config_needs_no_dns(memory, settings, no_dns, binding, version):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    task_id = saved_task(memory, "working")
    config = created(Binding(binding, version, ASGI), task_id, {"url": "https://hooks.down.test/a2a"})
    assert config["url"] == "https://hooks.down.test/a2a"
    assert no_dns == []  # nothing was looked up
    assert [c["url"] for c in memory.push_configs.list_push_configs(task_id)] == ["https://hooks.down.test/a2a"]


LITERALS = [
    ("http://127.1/hook", "127.0.0.1"),
    ("http://0x7f.1/hook", "127.0.0.1"),
    ("http://2130706433/hook", "127.0.0.1"),
    ("http://0177.0.0.1/hook", "127.0.0.1"),
    ("http://[::ffff:7f00:1]/hook", "127.0.0.1"),
    ("http://10.1.2.3/hook", "10.1.2.3"),
    ("http://[fe80::1%25eth0]/hook", "fe80::1"),
    ("http://localhost:8080/hook", "localhost"),
    ("http://api.localhost./hook", "localhost"),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize(("url", "named"), LITERALS)
def test_literal_private_addresses_are_refused_without_dns(memory, settings, no_dns, binding, version, url, named):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    task_id = saved_task(memory, "working")
    message = refused(Binding(binding, version, ASGI), task_id, {"url": url})
    assert named in message and "A2A_PUSH_ALLOW_PRIVATE_URLS" in message, message
    assert no_dns == []
    assert memory.push_configs.list_push_configs(task_id) == []


def test_a_name_is_resolved_when_delivering(memory, settings, monkeypatch, quick_push):
    """Created while the name does not resolve; delivered once it does (to 127.0.0.1,
    allowed here: the receiver is on loopback)."""
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True
    receiver = Receiver()
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in ("hooks.later.test", b"hooks.later.test"):
            return real(host, port, *args, **kwargs)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        task_id = saved_task(memory, "working")
        url = f"http://hooks.later.test:{receiver.port}/hook"
        created(Binding("jsonrpc", "1.0", ASGI), task_id, {"url": url})
        answers["hooks.later.test"] = "127.0.0.1"
        assert "error" not in ASGI.rpc("CancelTask", {"id": task_id}, headers=HEADERS["1.0"])
        [hit] = receiver.wait_for(1)
        assert hit.state == "TASK_STATE_CANCELED" and hit.headers["host"] == f"hooks.later.test:{receiver.port}"
    finally:
        receiver.close()


@pytest.mark.parametrize("binding", BINDINGS)
def test_v03_empty_authentication_is_no_authentication(memory, binding):
    task_id = saved_task(memory, "working")
    config = {"url": "https://93.184.216.34/hook", "authentication": {}}
    made = created(Binding(binding, None, ASGI), task_id, config)
    assert "authentication" not in made
    [stored] = memory.push_configs.list_push_configs(task_id)
    assert "authentication" not in stored


# --- v0.3 method names, v1.0 payloads ------------------------------------------------------------


def test_message_send_with_a_v10_payload_is_answered_as_v10(memory):
    answer = ASGI.rpc("message/send", {"message": v10_message("hello")})
    assert "error" not in answer, answer
    task = answer["result"]["task"]  # v1.0's SendMessageResponse, not v0.3's bare Task
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and "kind" not in task
    assert task["history"][0]["role"] == "ROLE_USER" and task["history"][0]["parts"] == [{"text": "hello"}]


def test_message_send_with_kindless_parts_is_v10_errors_too(memory):
    """No role, parts without ``kind``: a v1.0 payload; its error is v1.0-shaped."""
    error = ASGI.rpc("message/send", {"message": {"messageId": "m", "parts": [{"text": "hi"}]}})["error"]
    assert error["code"] == -32602 and isinstance(error["data"], list), error
    assert error["data"][1]["fieldViolations"][0]["field"] == "message.role"


def test_message_stream_with_a_v10_payload_streams_v10(memory):
    events = frames(ASGI.rpc_response("message/stream", {"message": v10_message("hello")}))
    assert list(events[0]["result"]) == ["task"]
    assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_push_set_with_a_v10_payload_is_answered_as_v10(memory):
    task_id = saved_task(memory, "working")
    params = {"taskId": task_id, "url": "https://93.184.216.34/hook", "token": "t"}
    result = ASGI.rpc("tasks/pushNotificationConfig/set", params)["result"]
    assert result["url"] == "https://93.184.216.34/hook" and result["taskId"] == task_id
    assert "pushNotificationConfig" not in result
    [stored] = memory.push_configs.list_push_configs(task_id)
    assert stored["dialect"] == "1.0"  # deliveries in the shape it used too


def test_v03_payloads_and_explicit_versions_keep_their_shape(memory):
    v03 = ASGI.rpc("message/send", {"message": v03_message("hello")})["result"]
    assert v03["kind"] == "task" and v03["status"]["state"] == "completed"
    # A2A-Version: 0.3 said so: the v1.0 role is an error, not a switch.
    error = ASGI.rpc("message/send", {"message": v10_message("x")}, headers={"A2A-Version": "0.3"})["error"]
    assert error["code"] == -32602 and "role" in error["message"]
    # The toolnexus dialect (v1.0 names, v0.3 payloads, no version) stays v0.3.
    toolnexus = ASGI.rpc("SendMessage", {"message": v03_message("hello")})["result"]
    assert toolnexus["kind"] == "task"


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("message/send", {"message": {"role": "ROLE_USER", "parts": [{"text": "a"}]}}, True),
        ("message/stream", {"message": {"role": "ROLE_AGENT", "parts": []}}, True),
        ("message/send", {"message": {"role": 1, "parts": [{"text": "a"}]}}, True),
        ("message/send", {"message": {"parts": [{"text": "a"}]}}, True),
        ("message/send", {"message": {"role": "user", "parts": [{"text": "a"}]}}, False),
        ("message/send", {"message": {"role": "ROLE_USER", "parts": [{"kind": "text", "text": "a"}]}}, False),
        ("message/send", {"message": {"kind": "message", "role": "ROLE_USER", "parts": [{"text": "a"}]}}, False),
        ("message/send", {"message": {}}, False),
        ("message/send", {}, False),
        ("message/send", "x", False),
        ("tasks/pushNotificationConfig/set", {"taskId": "t", "url": "https://h/"}, True),
        ("tasks/pushNotificationConfig/set", {"taskId": "t", "pushNotificationConfig": {"url": "https://h/"}}, False),
        ("tasks/get", {"id": "t"}, False),
        ("SendMessage", {"message": {"role": "ROLE_USER", "parts": [{"text": "a"}]}}, False),
    ],
)
def test_the_rule(method, params, expected):
    assert v10_shaped(method, params) is expected
    assert (dialect_for(None, method, params) is V10) is expected
    assert dialect_for("0.3", method, params) is V03
