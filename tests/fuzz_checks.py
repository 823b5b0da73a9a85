"""What every fuzzed answer and every stored task must be, whatever the input (tests/test_fuzz.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from a2a.protocol import errors
from stores.base import STATES
from stores.memory import MemoryTaskStore
from tests.fuzz_app import Answer

# The runner's background threads use `random` (lease jitter) while Hypothesis draws.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")


#: Lowered limits, so that generated inputs cross them (the defaults are tested in test_limits.py).
LIMITS = {
    "A2A_MAX_BODY_BYTES": 64 * 1024,
    "A2A_MAX_PARTS": 8,
    "A2A_MAX_TEXT_LENGTH": 2000,
    "A2A_MAX_ID_LENGTH": 64,
    "A2A_MAX_PAGE_SIZE": 20,
    "A2A_MAX_HISTORY": 4,
}


def _all_subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


#: Every code an answer may carry: the A2A errors' and -32000 (authentication), but
#: never -32603 (internal error).
KNOWN_CODES = ({c.code for c in _all_subclasses(errors.A2AError)} | {-32000}) - {-32603}
KNOWN_REASONS = {c.reason for c in _all_subclasses(errors.A2AError)} - {"INTERNAL"}
V03_ERROR_NAMES = set(errors.ERROR_NAMES.values()) - {"InternalError"}
MAX_MESSAGE = 1000  # characters: an error message stays readable whatever the input


# --- Store invariants ----------------------------------------------------------------------


def check_store(store: MemoryTaskStore, checked: dict[str, bytes]) -> None:
    """Every task in the store is well formed; ``checked`` remembers what was already
    checked (a task is checked again only when it changed)."""
    for task_id, raw in list(store._tasks.items()):
        if checked.get(task_id) == raw:
            continue
        task = orjson.loads(raw)
        try:
            check_task(task)
        except AssertionError as exc:
            raise AssertionError(f"malformed task stored: {exc}\n{raw[:2000]!r}") from None
        checked[task_id] = raw


def check_task(task: Any) -> None:
    assert isinstance(task, dict), "not an object"
    assert task.get("kind") == "task", "kind"
    for key in ("id", "contextId"):
        assert isinstance(task.get(key), str) and task[key], key
    assert len(task["contextId"]) <= LIMITS["A2A_MAX_ID_LENGTH"], "contextId too long"
    status = task.get("status")
    assert isinstance(status, dict) and status.get("state") in STATES, "status.state"
    assert isinstance(status.get("timestamp"), str), "status.timestamp"
    if "message" in status:
        check_message(status["message"], request=False)
    history = task.get("history")
    assert isinstance(history, list) and history, "history"
    assert len(history) <= LIMITS["A2A_MAX_HISTORY"], f"history of {len(history)} messages"
    for message in history:  # with the echo handler, every message of a history came from a client
        check_message(message, request=True)
        assert message.get("contextId") in (None, task["contextId"]), "history message in another context"
    for artifact in task.get("artifacts") or ():
        assert isinstance(artifact, dict) and isinstance(artifact.get("artifactId"), str), "artifactId"
        assert isinstance(artifact.get("parts"), list), "artifact parts"
        for part in artifact["parts"]:
            check_part(part, request=False)
    assert isinstance(task.get("metadata", {}), dict), "metadata"


def check_message(message: Any, *, request: bool) -> None:
    assert isinstance(message, dict), "message"
    assert message.get("kind") == "message", "message.kind"
    assert message.get("role") in ("user", "agent"), "message.role"
    assert isinstance(message.get("messageId"), str) and message["messageId"], "messageId"
    parts = message.get("parts")
    assert isinstance(parts, list) and parts, "message.parts"
    if request:
        assert len(message["messageId"]) <= LIMITS["A2A_MAX_ID_LENGTH"], "messageId too long"
        assert len(parts) <= LIMITS["A2A_MAX_PARTS"], "too many parts"
    for part in parts:
        check_part(part, request=request)
    assert isinstance(message.get("metadata", {}), dict), "message.metadata"


def check_part(part: Any, *, request: bool) -> None:
    assert isinstance(part, dict), "part"
    kind = part.get("kind")
    if kind == "text":
        assert isinstance(part.get("text"), str), "text"
        if request:
            assert len(part["text"]) <= LIMITS["A2A_MAX_TEXT_LENGTH"], "text too long"
    elif kind == "file":
        file = part.get("file")
        assert isinstance(file, dict), "file"
        assert isinstance(file.get("bytes"), str) or isinstance(file.get("uri"), str), "file content"
    else:
        assert kind == "data" and "data" in part, f"part kind {kind!r}"
    assert isinstance(part.get("metadata", {}), dict), "part.metadata"


# --- Answer invariants -----------------------------------------------------------------------


def check_error_object(error: Any) -> None:
    assert isinstance(error, dict), error
    assert {"code", "message"} <= set(error) <= {"code", "message", "data"}, error
    assert isinstance(error["code"], int) and error["code"] in KNOWN_CODES, error
    message = error["message"]
    assert isinstance(message, str) and message.strip(), error
    assert len(message) <= MAX_MESSAGE, f"an unreadable message of {len(message)} characters"


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))


def check_response(item: Any, request: Any) -> None:
    """One JSON-RPC response object; ``request`` is the request object as the server
    parsed it (or None when it could not be parsed)."""
    assert isinstance(item, dict), item
    assert item.get("jsonrpc") == "2.0", item
    assert set(item) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), item
    if "error" in item:
        check_error_object(item["error"])
    if isinstance(request, dict):
        expected = request.get("id") if _valid_id(request.get("id")) else None
        assert item["id"] == expected, (item["id"], expected)
    else:
        assert item["id"] is None, item


def check_jsonrpc(answer: Answer, body: bytes) -> None:
    """The invariants of a JSON-RPC answer to ``body``."""
    try:
        sent = orjson.loads(body)
        parsed = True
    except orjson.JSONDecodeError:
        sent, parsed = None, False
    if answer.status == 413:
        assert len(body) > LIMITS["A2A_MAX_BODY_BYTES"], "413 for a body within the limit"
        payload = answer.json()
        check_response(payload, None)
        assert payload["error"]["code"] == -32600 and "A2A_MAX_BODY_BYTES" in payload["error"]["message"]
        return
    assert len(body) <= LIMITS["A2A_MAX_BODY_BYTES"], f"a body of {len(body)} bytes was not refused"
    if answer.status == 204:
        assert answer.content == b""
        assert parsed, "no content for an unparsable body"
        items = sent if isinstance(sent, list) else [sent]
        assert items and all(isinstance(i, dict) and "id" not in i for i in items), "no answer to a request with an id"
        return
    assert answer.status == 200, (answer.status, answer.content[:500])
    if answer.content_type == "text/event-stream":
        assert isinstance(sent, dict) and "id" in sent, "a stream for a notification or a batch"
        events = [line[5:].strip() for line in sse_lines(answer.content) if line.startswith("data:")]
        assert events, answer.content[:500]
        for event in events:
            check_response(orjson.loads(event), sent)
        return
    assert answer.content_type == "application/json", answer.headers
    payload = answer.json()
    if isinstance(sent, list) and sent:
        assert isinstance(payload, list) and 0 < len(payload) <= len(sent), payload
        ids = [r.get("id") if isinstance(r, dict) and _valid_id(r.get("id")) else None for r in sent]
        for item in payload:
            check_response(item, None if item.get("id") is None else {"id": item.get("id")})
            assert item["id"] in ids, (item["id"], ids)
    else:
        check_response(payload, sent if parsed else None)


def sse_lines(content: bytes) -> list[str]:
    """The lines of an SSE body, which must split the same way for every client: no
    character that ``str.splitlines`` (and httpx's ``aiter_lines``) also takes for a line
    end (U+2028, U+2029, U+0085) may be left raw in a frame."""
    text = content.decode()
    lines = text.split("\n")
    assert text.splitlines() == lines[:-1], "an SSE frame that line-splitting clients cut in two"
    return lines


def check_rest(answer: Answer) -> None:
    """The invariants of a REST answer: never 5xx; errors are google.rpc.Status."""
    assert answer.status < 500, (answer.status, answer.content[:500])
    if answer.status < 300:
        if answer.content_type == "text/event-stream":
            for line in sse_lines(answer.content):
                if line.startswith("data:"):
                    event = orjson.loads(line[5:])
                    if "error" in event:
                        check_status_body(event, event["error"]["code"])
            return
        if answer.status != 204:
            assert answer.content_type in ("application/json", "application/a2a+json"), answer.headers
            answer.json()
        return
    if answer.status == 404 and answer.content_type == "text/html":
        return  # not an A2A route: Django's own page
    assert answer.content_type in ("application/json", "application/a2a+json"), (answer.status, answer.headers)
    body = answer.json()
    if isinstance(body, dict) and "jsonrpc" in body:  # "/a2a/rest/.." is the JSON-RPC endpoint
        check_response(body, None)
    else:
        check_status_body(body, answer.status)


def check_status_body(body: Any, status: int) -> None:
    """A google.rpc.Status body; a v0.3 one also names the error (``type``), repeats its
    ``message`` and gives its JSON-RPC ``code`` at the top (what the v0.3 clients read)."""
    shapes = ({"error"}, {"error", "message"}, {"error", "type", "message", "code"})
    assert isinstance(body, dict) and set(body) in shapes, body
    error = body["error"]
    if "message" in body:
        assert body["message"] == error["message"], body
    if "type" in body:
        assert body["type"] in V03_ERROR_NAMES, body
        assert {code for code, name in errors.ERROR_NAMES.items() if name == body["type"]} == {body["code"]}, body
    assert error["code"] == status, (error, status)
    assert isinstance(error.get("status"), str) and error["status"], error
    assert isinstance(error.get("message"), str) and error["message"].strip(), error
    assert len(error["message"]) <= MAX_MESSAGE, f"an unreadable message of {len(error['message'])} characters"
    details = error.get("details")
    assert isinstance(details, list) and details, error
    assert details[0]["reason"] in KNOWN_REASONS, details
