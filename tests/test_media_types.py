"""The JSON media types of the answers (a2a/http/media.py): ``application/a2a+json`` on
HTTP+JSON v1.0 (spec 1.0.1, 11.1), ``application/json`` on JSON-RPC (9.1) and HTTP+JSON
v0.3, each the other to a client whose ``Accept`` asks for it; Agent Cards as
``application/a2a-agent-card+json`` to a client that asks for that type."""

from __future__ import annotations

import uuid

import pytest

from a2a.http import media
from a2a.testing.client import WireClient
from stores.memory import MemoryTaskStore
from tests.helpers import call

A2A_JSON, JSON, CARD = media.A2A_JSON, media.JSON, media.AGENT_CARD_JSON


@pytest.fixture(autouse=True)
def store(settings):
    settings.TASK_STORE = MemoryTaskStore()


@pytest.mark.parametrize(
    ("accept", "offered", "chosen"),
    [
        (None, (JSON, A2A_JSON), JSON),
        ("", (JSON, A2A_JSON), JSON),
        ("*/*", (JSON, A2A_JSON), JSON),
        ("application/*", (A2A_JSON, JSON), A2A_JSON),
        (A2A_JSON, (JSON, A2A_JSON), A2A_JSON),
        ("Application/A2A+JSON; charset=utf-8", (JSON, A2A_JSON), A2A_JSON),
        (f"{JSON}, {A2A_JSON}", (JSON, A2A_JSON), JSON),  # both named alike: the default
        (f"{JSON};q=0.5, {A2A_JSON}", (JSON, A2A_JSON), A2A_JSON),
        (f"{A2A_JSON}, */*;q=0.1", (JSON, A2A_JSON), A2A_JSON),
        (f"{A2A_JSON};q=0", (JSON, A2A_JSON), JSON),  # refused by name
        (f"{A2A_JSON};q=bad", (JSON, A2A_JSON), JSON),
        ("text/html", (JSON, A2A_JSON), JSON),  # neither: the default, never a 406
        (JSON, (A2A_JSON, JSON), JSON),
        (f"{JSON}, */*", (A2A_JSON, JSON), JSON),  # named beats covered
        (f"text/html, {CARD};q=0.9, */*;q=0.8", (JSON, CARD), CARD),
    ],
)
def test_the_preferred_type(accept, offered, chosen):
    assert media.preferred(accept, offered) == chosen


#: GetTask params naming a task no test made.
UNKNOWN = {"id": str(uuid.uuid4())}


def _headers(accept: str | None, content_type: str = JSON) -> dict[str, str]:
    """A request's ``Content-Type``, and its ``Accept`` unless None."""
    return {"Content-Type": content_type, **({"Accept": accept} if accept is not None else {})}


def test_json_rpc_answers_application_json_unless_asked(settings):
    for accept in (None, "*/*", JSON, f"{JSON}, {A2A_JSON}"):
        answer = WireClient().rpc_response("GetTask", UNKNOWN, headers=_headers(accept))
        assert answer.headers["content-type"] == JSON, accept
        assert answer.json()["error"]["code"] == -32001  # the task is unknown: an answer all the same
    asked = WireClient().rpc_response(
        "GetTask", {"id": str(uuid.uuid4())}, headers=_headers(A2A_JSON, content_type=A2A_JSON)
    )
    assert asked.headers["content-type"] == A2A_JSON
    assert asked.json()["error"]["code"] == -32001


def test_json_rpc_refusals_carry_the_asked_type_too(settings):
    not_json = WireClient().rpc_response(
        "GetTask", {"id": str(uuid.uuid4())}, headers=_headers(A2A_JSON, content_type="text/plain")
    )
    assert not_json.status_code == 415 and not_json.headers["content-type"] == A2A_JSON
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    unauthenticated = WireClient().rpc_response("GetTask", UNKNOWN, headers=_headers(A2A_JSON))
    assert unauthenticated.status_code == 401 and unauthenticated.headers["content-type"] == A2A_JSON
    assert WireClient().rpc_response("GetTask", UNKNOWN, headers=_headers(None)).headers["content-type"] == JSON
    wrong_method = call("GET", "/a2a/", headers={"Accept": A2A_JSON})
    assert wrong_method.status_code == 405 and wrong_method.headers["content-type"] == A2A_JSON


def _rest(version: str, accept: str | None):
    headers = {"A2A-Version": version, **({"Accept": accept} if accept is not None else {})}
    return call("GET", f"/a2a/rest/tasks/{uuid.uuid4()}", headers=headers)


@pytest.mark.parametrize(
    ("version", "accept", "expected"),
    [
        ("1.0", None, A2A_JSON),
        ("1.0", "*/*", A2A_JSON),
        ("1.0", A2A_JSON, A2A_JSON),
        ("1.0", JSON, JSON),
        ("0.3", None, JSON),
        ("0.3", A2A_JSON, A2A_JSON),
    ],
)
def test_http_json_answers_its_dialects_type_unless_asked(version, accept, expected):
    answer = _rest(version, accept)
    assert answer.status_code == 404 and answer.headers["content-type"] == expected


def test_http_json_accepts_either_request_type():
    for content_type in (A2A_JSON, JSON):
        message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        answer = call(
            "POST",
            "/a2a/rest/message:send",
            json={"message": message},
            headers={"A2A-Version": "1.0", "Content-Type": content_type},
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == A2A_JSON


@pytest.mark.parametrize(
    ("accept", "expected"),
    [(None, JSON), ("*/*", JSON), (JSON, JSON), (CARD, CARD), (f"{CARD}, {JSON};q=0.5", CARD)],
)
def test_the_agent_card_is_served_with_the_catalogs_type_to_who_asks(client, accept, expected):
    headers = {"HTTP_ACCEPT": accept} if accept is not None else {}
    answer = client.get("/.well-known/agent-card.json", **headers)
    assert answer.status_code == 200 and answer["Content-Type"] == expected
    assert "Accept" in answer["Vary"].split(", ")  # a cache keeps one answer per type
    assert answer.json()["name"]
