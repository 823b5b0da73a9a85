"""The HTTP+JSON (REST) binding over the real server: routes, query parameters,
status codes and error bodies (spec section 11), streams, and the v0.3 "/v1" paths
(their dialect in detail: tests/test_rest_v03.py)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from a2a.testing import WireClient
from a2a.testing import v10_message as message
from a2a.testing.client import send_params
from tests.helpers import sse
from tests.server import scripted_site

pytestmark = pytest.mark.slow

V10 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def rest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rest")
    with scripted_site(tmp, f"file:{tmp / 'tasks'}", A2A_PUSH_ALLOW_PRIVATE_URLS="true") as base:
        yield f"{base}/a2a/rest"


def wire(rest: str) -> WireClient:
    """The test kit's client for the server whose HTTP+JSON routes start at ``rest``."""
    return WireClient(base_url=rest.removesuffix("/a2a/rest"))


def task_of(response: httpx.Response) -> dict:
    """A ``message:send`` answer's task: HTTP 200, ``application/a2a+json``."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/a2a+json"
    return response.json()["task"]


def error_of(response: httpx.Response, status: int, reason: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status
    assert error["message"]
    info = error["details"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["reason"] == reason and info["domain"] == "a2a-protocol.org"
    return error


def test_the_card_names_the_rest_interface(rest):
    card = httpx.get(rest.replace("/a2a/rest", "/.well-known/agent-card.json"), headers=V10).json()
    assert {"url": rest, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"} in card["supportedInterfaces"]


def test_send_then_get(rest):
    task = task_of(wire(rest).rest("POST", "/message:send", json=send_params("hello", "1.0")))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "done: hello"}]
    got = httpx.get(f"{rest}/tasks/{task['id']}", headers=V10)
    assert got.status_code == 200 and got.json() == task
    short = httpx.get(f"{rest}/tasks/{task['id']}", params={"historyLength": 0}, headers=V10).json()
    assert "history" not in short


def test_non_blocking_send_and_cancel(rest):
    task = task_of(wire(rest).rest("POST", "/message:send", json=send_params("sleep:5", "1.0", blocking=False)))
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    canceled = httpx.post(f"{rest}/tasks/{task['id']}:cancel", headers=V10)
    assert canceled.status_code == 200
    assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"
    again = httpx.post(f"{rest}/tasks/{task['id']}:cancel", headers=V10)
    error_of(again, 400, "TASK_NOT_CANCELABLE")


def test_list_with_query_parameters_and_pages(rest):
    context = str(uuid.uuid4())
    ids = [
        httpx.post(f"{rest}/message:send", headers=V10, json={"message": message(f"n{i}", contextId=context)}).json()[
            "task"
        ]["id"]
        for i in range(3)
    ]
    first = httpx.get(
        f"{rest}/tasks", params={"contextId": context, "pageSize": 2, "includeArtifacts": "true"}, headers=V10
    ).json()
    assert first["totalSize"] == 3 and first["pageSize"] == 2
    assert [t["id"] for t in first["tasks"]] == ids[::-1][:2]
    assert "artifacts" in first["tasks"][0]
    rest_page = httpx.get(
        f"{rest}/tasks", params={"contextId": context, "pageSize": 2, "pageToken": first["nextPageToken"]}, headers=V10
    ).json()
    assert [t["id"] for t in rest_page["tasks"]] == [ids[0]]
    assert rest_page["nextPageToken"] == ""
    assert "artifacts" not in rest_page["tasks"][0]
    completed = httpx.get(
        f"{rest}/tasks", params={"contextId": context, "status": "TASK_STATE_COMPLETED"}, headers=V10
    ).json()
    assert completed["totalSize"] == 3


def test_errors_are_status_objects_with_the_mapped_http_status(rest):
    error_of(httpx.get(f"{rest}/tasks/nope", headers=V10), 404, "TASK_NOT_FOUND")
    error_of(httpx.post(f"{rest}/tasks/nope:cancel", headers=V10), 404, "TASK_NOT_FOUND")
    bad_status = error_of(httpx.get(f"{rest}/tasks", params={"status": "SLEEPING"}, headers=V10), 400, "INVALID_PARAMS")
    assert bad_status["details"][1]["fieldViolations"][0]["field"] == "status"
    error_of(httpx.get(f"{rest}/tasks", params={"pageSize": 500}, headers=V10), 400, "INVALID_PARAMS")
    as_json = {**V10, "Content-Type": "application/json"}
    error_of(httpx.post(f"{rest}/message:send", content=b"{not json", headers=as_json), 400, "PARSE_ERROR")
    error_of(httpx.post(f"{rest}/message:send", json=[1], headers=V10), 400, "INVALID_REQUEST")
    error_of(
        httpx.post(f"{rest}/message:send", json={"message": {"role": "ROLE_USER"}}, headers=V10), 400, "INVALID_PARAMS"
    )
    error_of(httpx.get(f"{rest}/extendedAgentCard", headers=V10), 400, "UNSUPPORTED_OPERATION")
    error_of(httpx.get(f"{rest}/tasks", headers={"A2A-Version": "9.9"}), 400, "VERSION_NOT_SUPPORTED")
    wrong = httpx.get(f"{rest}/message:send", headers=V10)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"


def test_stream_sends_bare_stream_responses(rest):
    events = sse("POST", f"{rest}/message:stream", json={"message": message("progress:half")}, headers=V10)
    assert list(events[0]) == ["task"]
    assert all(len(e) == 1 for e in events)
    assert [next(iter(e)) for e in events][-1] == "statusUpdate"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_subscribe_by_post_and_by_get(rest, method, tmp_path):
    gate = tmp_path / "open"
    task = task_of(wire(rest).rest("POST", "/message:send", json=send_params(f"wait:{gate}", "1.0", blocking=False)))
    events = sse(method, f"{rest}/tasks/{task['id']}:subscribe", headers=V10, on_first=gate.touch)
    assert events[0]["task"]["id"] == task["id"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    error_of(httpx.post(f"{rest}/tasks/{task['id']}:subscribe", headers=V10), 400, "UNSUPPORTED_OPERATION")


def test_push_config_routes(rest):
    task = task_of(wire(rest).rest("POST", "/message:send", json=send_params("ask:more?", "1.0")))
    base = f"{rest}/tasks/{task['id']}/pushNotificationConfigs"
    # Loopback (allowed for this server) on a port nothing listens on: no call is made
    # while the task waits for input, and none could reach anything.
    for config_id in ("a", "b"):
        created = httpx.post(
            base,
            json={"id": config_id, "url": f"http://127.0.0.1:9/{config_id}", "token": f"t-{config_id}"},
            headers=V10,
        )
        assert created.status_code == 200, created.text
        assert created.json() == {
            "id": config_id,
            "taskId": task["id"],
            "url": f"http://127.0.0.1:9/{config_id}",
            "token": f"t-{config_id}",
        }
    listed = httpx.get(base, headers=V10).json()
    assert sorted(c["id"] for c in listed["configs"]) == ["a", "b"]
    assert httpx.get(f"{base}/b", headers=V10).json()["url"] == "http://127.0.0.1:9/b"
    deleted = httpx.delete(f"{base}/b", headers=V10)
    assert deleted.status_code == 200 and deleted.json() == {}
    assert [c["id"] for c in httpx.get(base, headers=V10).json()["configs"]] == ["a"]
    error_of(httpx.get(f"{base}/b", headers=V10), 404, "TASK_NOT_FOUND")
    error_of(httpx.get(f"{rest}/tasks/nope/pushNotificationConfigs", headers=V10), 404, "TASK_NOT_FOUND")
    error_of(httpx.post(base, json={"url": "ftp://127.0.0.1/x"}, headers=V10), 400, "INVALID_PARAMS")
    wrong = httpx.put(base, json={}, headers=V10)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST, GET"


def test_v03_http_json_is_offered_at_the_same_url(rest):
    """v0.3's HTTP+JSON (the ProtoJSON of its gRPC messages; tests/test_rest_v03.py)
    is named in both cards, and a v0.3 client appending "/v1/..." to it is served."""
    card = httpx.get(rest.replace("/a2a/rest", "/.well-known/agent-card.json")).json()
    assert {"url": rest, "transport": "HTTP+JSON"} in card["additionalInterfaces"]
    strict = httpx.get(rest.replace("/a2a/rest", "/.well-known/agent-card.json"), headers=V10).json()
    assert {"url": rest, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"} in strict["supportedInterfaces"]
    body = {"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "hi"}]}}
    response = httpx.post(f"{rest}/v1/message:send", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
