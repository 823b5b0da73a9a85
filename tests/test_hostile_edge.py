"""Hostile edges of the wire (issue 14, item 7), through the ASGI application:

- a JSON-RPC id beyond 64 bits (2**70) comes back exactly as sent, not as a float;
- the agent card answers only GET and HEAD (405 with ``Allow`` otherwise);
- a body that does not say it is JSON (``text/plain``, a form, none) is refused with 415
  on both bindings and runs nothing: a web page's cross-site "simple request" cannot
  drive an agent;
- a JSON-RPC batch longer than ``A2A_MAX_BATCH_SIZE`` gets one -32600 error and runs
  nothing;
- ``/healthz`` writes to the store: when every save fails (an injected ENOSPC, a full
  database) it answers 503 with the reason, on every store.
"""

from __future__ import annotations

import errno
import json
import os
import uuid
from typing import Any

import httpx
import orjson
import pytest
from django.db import OperationalError
from django.db.backends.utils import CursorWrapper

from a2a.ops.observability import HEALTH_PROBE_OWNER
from a2a.testing.client import rpc_body
from stores.base import TaskQuery
from tests.conftest import ALL_DATABASES
from tests.helpers import ASGI, http
from tests.syscalls_hooks import Hooked, failing

pytestmark = ALL_DATABASES


def message_request(request_id: Any = 1) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "hi"}]}
    return rpc_body("SendMessage", {"message": message}, request_id)


def get_request(request_id: Any) -> dict[str, Any]:
    return rpc_body("GetTask", {"id": "no-such-task"}, request_id)


JSON_V10 = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def stored_tasks(store) -> list[dict]:
    return store.list(TaskQuery(page_size=100)).tasks


# --- (a) ids beyond 64 bits ---------------------------------------------------------------

BIG = 2**70
#: Not a float either: 2**70 itself is one, so a float that came back would still compare equal.
ODD = 2**70 + 1


@pytest.mark.parametrize("literal", [str(BIG), str(-BIG), str(2**64), "1.5", "12345678901234567890.5"])
def test_a_numeric_id_comes_back_exactly_as_sent(use_store, literal):
    body = json.dumps(get_request(0)).replace('"id": 0', f'"id": {literal}').encode()
    response = ASGI.rpc_raw(body, headers=JSON_V10)
    assert response.status_code == 200, response.text
    assert f'"id":{literal}' in response.text, response.text
    assert response.json()["error"]["code"] == -32001  # the GetTask ran: task not found


def test_big_ids_in_a_batch_each_come_back_exactly(use_store):
    batch = [get_request(0), get_request("s"), get_request(0)]
    body = json.dumps(batch).replace('"id": 0', f'"id": {ODD}', 1).replace('"id": 0', f'"id": {-ODD}', 1)
    response = ASGI.rpc_raw(body.encode(), headers=JSON_V10)
    assert response.status_code == 200, response.text
    ids = json.loads(response.text)  # the standard library keeps big integers exact
    assert [r["id"] for r in ids] == [ODD, "s", -ODD]


def test_a_big_id_survives_a_version_error(use_store):
    body = json.dumps(get_request(0)).replace('"id": 0', f'"id": {ODD}').encode()
    response = ASGI.rpc_raw(body, headers={"Content-Type": "application/json", "A2A-Version": "9.9"})
    assert json.loads(response.text)["id"] == ODD


# --- (b) the agent card is read-only ------------------------------------------------------


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json", "/.well-known/agent.json"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_the_card_refuses_writes(method, path):
    response = http(method, path, content=b"{}", headers={"Content-Type": "application/json"})
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == "GET, HEAD"
    assert response.json()["error"]["code"] == -32600


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_the_card_still_answers_get_and_head(method):
    response = http(method, "/.well-known/agent-card.json")
    assert response.status_code == 200
    assert response.headers["etag"]


# --- (c) only JSON bodies -----------------------------------------------------------------

NOT_JSON = [
    "text/plain",
    "text/plain;charset=UTF-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonx",
    None,  # no Content-Type at all (a browser's Blob body without a type)
]


def headers_with(content_type: str | None, **more: str) -> dict[str, str]:
    headers = {"A2A-Version": "1.0", **more}
    if content_type is not None:
        headers["Content-Type"] = content_type
    return headers


@pytest.mark.parametrize("content_type", NOT_JSON)
def test_jsonrpc_refuses_a_body_that_is_not_json_and_runs_nothing(use_store, content_type):
    response = ASGI.rpc_raw(orjson.dumps(message_request()), headers=headers_with(content_type))
    assert response.status_code == 415, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600
    assert "application/json" in body["error"]["message"]
    assert stored_tasks(use_store) == []


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/a2a+json", "Application/JSON"]
)
def test_jsonrpc_takes_json_media_types(use_store, content_type):
    response = ASGI.rpc_raw(orjson.dumps(message_request()), headers=headers_with(content_type))
    assert response.status_code == 200, response.text
    assert response.json()["result"]["task"]["id"]


def rest_error(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status
    assert error["details"][0]["reason"] == "INVALID_REQUEST"
    return error


@pytest.mark.parametrize("content_type", NOT_JSON)
def test_rest_refuses_a_body_that_is_not_json_and_runs_nothing(use_store, content_type):
    body = orjson.dumps({"message": message_request()["params"]["message"]})
    response = http("POST", "/a2a/rest/message:send", content=body, headers=headers_with(content_type))
    error = rest_error(response, 415)
    assert error["status"] == "INVALID_ARGUMENT"
    assert stored_tasks(use_store) == []


def test_rest_takes_a2a_json(use_store):
    body = orjson.dumps({"message": message_request()["params"]["message"]})
    response = http("POST", "/a2a/rest/message:send", content=body, headers=headers_with("application/a2a+json"))
    assert response.status_code == 200, response.text


def test_rest_post_without_a_body_needs_no_content_type_but_refuses_a_wrong_one(use_store):
    """A v0.3 client cancels with an empty POST and no Content-Type: still served."""
    task = ASGI.rpc_raw(orjson.dumps(message_request()), headers=JSON_V10).json()["result"]["task"]
    cancel = f"/a2a/rest/tasks/{task['id']}:cancel"
    plain = http("POST", cancel, content=b"", headers=headers_with("text/plain"))
    rest_error(plain, 415)
    bare = http("POST", cancel, content=b"", headers=headers_with(None))
    assert bare.status_code != 415, bare.text  # the task's own answer (canceled, or not cancelable)


# --- (d) batch size -----------------------------------------------------------------------


def test_an_over_long_batch_gets_one_error_and_runs_nothing(use_store, settings):
    settings.A2A_MAX_BATCH_SIZE = 3
    response = ASGI.rpc_raw(orjson.dumps([message_request(i) for i in range(4)]), headers=JSON_V10)
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, dict), body  # one error, not one per request
    assert body["id"] is None and body["error"]["code"] == -32600
    assert "A2A_MAX_BATCH_SIZE" in body["error"]["message"]
    assert stored_tasks(use_store) == []
    within = ASGI.rpc_raw(orjson.dumps([message_request(i) for i in range(3)]), headers=JSON_V10).json()
    assert [r["id"] for r in within] == [0, 1, 2] and all("result" in r for r in within)


def test_the_default_batch_limit_is_100(use_store):
    assert len(ASGI.rpc_raw(orjson.dumps([get_request(i) for i in range(100)]), headers=JSON_V10).json()) == 100
    over = ASGI.rpc_raw(orjson.dumps([get_request(i) for i in range(101)]), headers=JSON_V10).json()
    assert over["error"]["code"] == -32600


# --- (e) /healthz writes ------------------------------------------------------------------


def test_health_leaves_no_probe_behind(client, use_store):
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    assert stored_tasks(use_store) == []
    assert use_store.list(TaskQuery(owner=HEALTH_PROBE_OWNER)).tasks == []


def _disk_full(monkeypatch, store_kind: str, store) -> None:
    """Every write of the store fails as it does on a full disk; reads still work."""
    if store_kind.startswith("file"):

        def no_space(fd: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        no_space_left = failing(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        monkeypatch.setattr(store, "syscalls", Hooked(store.syscalls, write_replace=no_space_left))
        monkeypatch.setattr(os, "fsync", no_space)  # the writes from Python (a new directory's fsync)
    elif store_kind.startswith("orm"):
        real_execute = CursorWrapper.execute

        def execute(self, sql, params=None):
            if sql.lstrip().upper().startswith(("INSERT", "UPDATE")):
                raise OperationalError("could not extend file: No space left on device")
            return real_execute(self, sql, params)

        monkeypatch.setattr(CursorWrapper, "execute", execute)
    else:  # the memory store has no disk: its writes fail only if the process cannot allocate

        def no_memory(task, expected_version=None):
            raise MemoryError("cannot allocate")

        monkeypatch.setattr(store, "save", no_memory)


def test_health_fails_when_the_store_cannot_write(client, use_store, store_kind, monkeypatch):
    assert client.get("/healthz").status_code == 200
    _disk_full(monkeypatch, store_kind, use_store)
    assert use_store.get("anything") is None  # reads still work: a read-only probe would say ok
    response = client.get("/healthz")
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] == "fail"
    check = body["checks"]["store"]
    assert check["ok"] is False
    expected = {"memory": "cannot allocate"}.get(store_kind, "No space left")
    assert expected in check["error"], check
    monkeypatch.undo()
    assert stored_tasks(use_store) == []  # and the failed probe left nothing
    assert client.get("/healthz").status_code == 200
