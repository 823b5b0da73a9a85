"""JSON-RPC batches and notifications, the Agent Card, and both dialects in one process (see test_errors.py)."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from a2a.testing.client import rpc_body as request
from tests.helpers import http

# === Batches and notifications ===========================================================
from tests.jsonrpc.support import (
    CARD,
    ENDPOINT,
    V03,
    V10,
    V10_SCHEMA,
    VERSIONS,
    call,
    check_error,
    envelope,
    ok,
    post,
)


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
        ("JSONRPC", "1.1"): "http://testserver/a2a/",
        ("HTTP+JSON", "1.1"): "http://testserver/a2a/rest",
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
