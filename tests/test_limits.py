"""The limits on what a request may carry and what a task keeps (a2a/protocol/limits.py), each
at its boundary: exactly at the limit passes, one over is refused with the right code
and a message naming the setting. Through both bindings and both dialects (JSON-RPC in
v0.3 and v1.0, HTTP+JSON in v1.0, the only dialect it is offered in), in-process on the
memory store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from django.core.checks import run_checks

from a2a.conf import DEFAULTS, from_environment
from a2a.runtime.runner import get_runner
from a2a.testing import Binding
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import ASGI


def refused(way: Binding, response: httpx.Response, code: int, setting: str, field: str | None = None) -> str:
    """Check the error answer: the JSON-RPC code (or its HTTP status and reason in REST),
    a message naming ``setting``, and the offending ``field``; return the message."""
    too_large = setting in ("A2A_MAX_BODY_BYTES", "DATA_UPLOAD_MAX_MEMORY_SIZE")
    status = 413 if too_large else 200 if way.name == "jsonrpc" else 400
    error = way.error(response)
    assert (error.status, error.code) == (status, code), error
    if field is not None:
        assert error.fields == [field], error
    assert setting in error.message, error.message
    assert len(error.message) < 300, error.message
    return error.message


#: JSON-RPC in both dialects; HTTP+JSON in v1.0 (the only one it is offered in).
WAYS = [
    pytest.param(Binding(binding, version, ASGI), id=f"{binding}-{'v1.0' if version else 'v0.3'}")
    for binding, version in (("jsonrpc", None), ("jsonrpc", "1.0"), ("rest", "1.0"))
]


@pytest.fixture(params=WAYS)
def way(request) -> Binding:
    return request.param


@pytest.fixture(autouse=True)
def store(settings) -> MemoryTaskStore:
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "a2a.handlers.echo"
    return get_task_store()


# --- A2A_MAX_BODY_BYTES --------------------------------------------------------------------


def padded(way: Binding, size: int) -> bytes:
    """A valid SendMessage body of exactly ``size`` bytes (trailing whitespace is JSON)."""
    body = way.body({"message": way.message("hello")})
    assert len(body) <= size
    return body + b" " * (size - len(body))


def test_body_size_at_the_limit_passes_and_one_byte_over_is_413(way, settings):
    settings.A2A_MAX_BODY_BYTES = 1000
    task = way.result(way.post(padded(way, 1000)))
    assert task["status"]["state"] == way.state("completed")
    message = refused(way, way.post(padded(way, 1001)), -32600, "A2A_MAX_BODY_BYTES")
    assert "1001 bytes" in message and "at most 1000" in message


def test_body_size_without_content_length(settings):
    """A chunked body (no Content-Length) is measured as it is read."""
    settings.A2A_MAX_BODY_BYTES = 1000
    way = Binding("jsonrpc", "1.0", ASGI)

    def chunked(body: bytes) -> Any:
        async def chunks() -> AsyncIterator[bytes]:
            for i in range(0, len(body), 100):
                yield body[i : i + 100]

        return chunks()

    assert way.result(way.post(chunked(padded(way, 1000))))["status"]["state"] == "TASK_STATE_COMPLETED"
    refused(way, way.post(chunked(padded(way, 1001))), -32600, "A2A_MAX_BODY_BYTES")


def test_django_upload_limit_does_not_get_in_the_way(settings):
    """A2A_MAX_BODY_BYTES is the A2A endpoints' limit, and theirs alone: Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB by default) neither refuses a message under it
    nor needs raising (no a2a.W040 any more, the first check of a new project is clean)."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    for binding in ("jsonrpc", "rest"):
        way = Binding(binding, "1.0", ASGI)
        size = 3 * 1024 * 1024  # over Django's own default of 2.5 MB
        assert way.result(way.post(padded(way, size)))["status"]["state"] == "TASK_STATE_COMPLETED"
    settings.A2A_MAX_BODY_BYTES = 1000
    refused(way, way.post(padded(way, 1001)), -32600, "A2A_MAX_BODY_BYTES")
    assert not [m for m in run_checks() if m.id and m.id.startswith("a2a.")]


# --- A2A_MAX_PARTS -------------------------------------------------------------------------------


def test_parts_at_the_limit_pass_and_one_more_is_refused(way, settings):
    settings.A2A_MAX_PARTS = 3
    task = way.result(way.send(way.message("a", "b", "c")))
    assert task["status"]["state"] == way.state("completed")
    message = refused(way, way.send(way.message("a", "b", "c", "d")), -32602, "A2A_MAX_PARTS", field="message.parts")
    assert "4 parts" in message and "at most 3" in message


# --- A2A_MAX_TEXT_LENGTH -------------------------------------------------------------------------


def test_text_at_the_limit_passes_and_one_character_more_is_refused(way, settings):
    settings.A2A_MAX_TEXT_LENGTH = 50
    task = way.result(way.send("é" * 50))  # characters, not bytes
    assert task["status"]["state"] == way.state("completed")
    refused(way, way.send(way.message("ok", "x" * 51)), -32602, "A2A_MAX_TEXT_LENGTH", field="message.parts[1].text")


def test_text_length_default_boundary():
    way = Binding("jsonrpc", "1.0", ASGI)
    limit = DEFAULTS["A2A_MAX_TEXT_LENGTH"]
    assert limit == 1_000_000
    assert way.result(way.send("x" * limit))["status"]["state"] == "TASK_STATE_COMPLETED"
    refused(way, way.send("x" * (limit + 1)), -32602, "A2A_MAX_TEXT_LENGTH")


# --- A2A_MAX_ID_LENGTH ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["messageId", "contextId"])
def test_message_ids_at_the_limit_pass_and_one_character_more_is_refused(way, settings, key):
    settings.A2A_MAX_ID_LENGTH = 40
    task = way.result(way.send(way.message("hello", **{key: "i" * 40})))
    assert task["status"]["state"] == way.state("completed")
    if key == "contextId":
        assert task["contextId"] == "i" * 40
    refused(way, way.send(way.message("hello", **{key: "i" * 41})), -32602, "A2A_MAX_ID_LENGTH", f"message.{key}")


def test_task_ids_at_the_limit_are_looked_up_and_longer_ones_refused(way, settings):
    settings.A2A_MAX_ID_LENGTH = 40
    answer = way.get("t" * 40)
    assert answer.status_code == (200 if way.name == "jsonrpc" else 404)
    if way.name == "jsonrpc":
        assert answer.json()["error"]["code"] == -32001  # looked up: not found
    refused(way, way.get("t" * 41), -32602, "A2A_MAX_ID_LENGTH", field="id")


def test_id_length_default_boundary():
    way = Binding("jsonrpc", None, ASGI)
    limit = DEFAULTS["A2A_MAX_ID_LENGTH"]
    assert limit == 255
    assert way.result(way.send(way.message("hello", messageId="m" * limit)))["status"]["state"] == "completed"
    refused(way, way.send(way.message("hello", messageId="m" * (limit + 1))), -32602, "A2A_MAX_ID_LENGTH")


# --- A2A_MAX_PAGE_SIZE ---------------------------------------------------------------------------


def test_page_size_at_the_limit_passes_and_one_more_is_refused(way, settings):
    settings.A2A_MAX_PAGE_SIZE = 5
    for _ in range(7):
        way.result(way.send("hello"))
    page = way.result(way.list(pageSize=5))
    assert len(page["tasks"]) == 5 and page["nextPageToken"]
    message = refused(way, way.list(pageSize=6), -32602, "A2A_MAX_PAGE_SIZE", field="pageSize")
    assert "at most 5" in message
    default = way.result(way.list())  # the default page (50) is cut to the limit
    assert len(default["tasks"]) == 5 and default["nextPageToken"]


# --- A2A_MAX_HISTORY -----------------------------------------------------------------------------


def test_history_keeps_the_newest_messages(way, settings, store):
    """Each turn appends the user's message (operations) and the agent's question (the
    runner); beyond A2A_MAX_HISTORY the oldest go."""
    settings.A2A_MAX_HISTORY = 3
    settings.A2A_HANDLER = "tests.handlers.scripted"
    task = way.result(way.send("ask:a"))
    assert task["status"]["state"] == way.state("input-required")
    task_id, context_id = task["id"], task["contextId"]
    assert [m["parts"][0]["text"] for m in store.get(task_id)["history"]] == ["ask:a", "a"]
    for turn in ("b", "c"):
        follow_up = way.send(f"ask:{turn}", task_id=task_id, context_id=context_id)
        assert way.result(follow_up)["status"]["state"] == way.state("input-required")
    history = store.get(task_id)["history"]
    assert [(m["role"], m["parts"][0]["text"]) for m in history] == [("agent", "b"), ("user", "ask:c"), ("agent", "c")]
    done = way.send("finish", task_id=task_id, context_id=context_id)
    assert way.result(done)["status"]["state"] == way.state("completed")
    assert [m["parts"][0]["text"] for m in store.get(task_id)["history"]] == ["ask:c", "c", "finish"]


# --- Defaults, system checks, environment ------------------------------------------------------------


def test_defaults():
    assert {name: DEFAULTS[name] for name in DEFAULTS if name.startswith("A2A_MAX_")} == {
        "A2A_MAX_BODY_BYTES": 10 * 1024 * 1024,
        "A2A_MAX_PARTS": 100,
        "A2A_MAX_TEXT_LENGTH": 1_000_000,
        "A2A_MAX_ID_LENGTH": 255,
        "A2A_MAX_PAGE_SIZE": 100,
        "A2A_MAX_BATCH_SIZE": 100,
        "A2A_MAX_HISTORY": 100,
        "A2A_MAX_CONNECTIONS": 0,
    }
    assert from_environment({"A2A_MAX_BODY_BYTES": "1048576", "A2A_MAX_HISTORY": "20"}) == {
        "A2A_MAX_BODY_BYTES": 1048576,
        "A2A_MAX_HISTORY": 20,
    }


@pytest.mark.parametrize(
    ("name", "value", "code"),
    [
        ("A2A_MAX_BODY_BYTES", 0, "a2a.E002"),
        ("A2A_MAX_PARTS", -1, "a2a.E002"),
        ("A2A_MAX_TEXT_LENGTH", "long", "a2a.E002"),
        ("A2A_MAX_ID_LENGTH", 35, "a2a.E002"),  # shorter than the UUIDs this agent makes
        ("A2A_MAX_PAGE_SIZE", 0, "a2a.E002"),
        ("A2A_MAX_PAGE_SIZE", 101, "a2a.E040"),  # over the stores' own ceiling
        ("A2A_MAX_HISTORY", 1.5, "a2a.E002"),
    ],
)
def test_system_checks_refuse_bad_limits(settings, name, value, code):
    setattr(settings, name, value)
    messages = [m for m in run_checks() if m.id == code]
    assert messages and name in messages[0].msg, [str(m) for m in run_checks()]


def test_system_checks_pass_the_defaults():
    assert not [m for m in run_checks() if m.id in ("a2a.E002", "a2a.E040", "a2a.W040")]


@pytest.fixture(autouse=True)
def _idle_runner():
    yield
    deadline = time.monotonic() + 10
    while get_runner().active and time.monotonic() < deadline:
        time.sleep(0.01)
