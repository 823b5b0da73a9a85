"""Property-based fuzzing of both bindings (JSON-RPC at /a2a/, HTTP+JSON under /a2a/rest/).

Generated bodies (arbitrary JSON, JSON-RPC envelopes, v0.3 and v1.0 SendMessage params
mutated field by field, batches, raw bytes and invalid UTF-8, deep nesting around the
JSON parser's and serializer's depth limits, huge strings around the limits, lone
surrogates) and REST requests (random routes, path segments, query strings, bodies and
versions) go through the real ASGI app in-process, on the memory store with the echo
handler. Whatever arrives:

- JSON-RPC answers HTTP 200 (204 for notifications, 413 for an oversize body) with
  well-formed responses: ``jsonrpc``, ``id`` (the request's, or null) and exactly one
  of ``result``/``error``; every error is exactly ``code``/``message``(/``data``), with
  a known code, a short non-empty message, and never -32603 (internal error);
- REST answers 2xx or 4xx, never 5xx; a 4xx from an A2A route is a google.rpc.Status
  with ``code`` equal to the HTTP status and a readable message;
- after every example, every task in the store is well formed (id, contextId, a known
  state, a history of messages with valid parts, within the limits): bad input never
  reaches the store.

CI runs a short, reproducible pass (``derandomize``; ``A2A_FUZZ_EXAMPLES`` examples per
test, 200 by default). A long one on demand::

    A2A_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/test_fuzz.py

``A2A_FUZZ_SEED=<n>`` explores other inputs than the derandomized ones CI replays.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import ipaddress
import json
import os
import socket
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, example, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from a2a.asgi import get_asgi_application
from a2a.http.jsonrpc import METHODS
from a2a.protocol import errors
from a2a.runtime.runner import get_runner
from a2a.testing import WireClient
from stores.backends import get_task_store
from stores.base import STATES, now_iso
from stores.memory import MemoryTaskStore

# The runner's background threads use `random` (lease jitter) while Hypothesis draws.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")

EXAMPLES = int(os.environ.get("A2A_FUZZ_EXAMPLES", "200"))
SEED = os.environ.get("A2A_FUZZ_SEED")

#: Lowered limits, so that generated inputs cross them (the defaults are tested in test_limits.py).
LIMITS = {
    "A2A_MAX_BODY_BYTES": 64 * 1024,
    "A2A_MAX_PARTS": 8,
    "A2A_MAX_TEXT_LENGTH": 2000,
    "A2A_MAX_ID_LENGTH": 64,
    "A2A_MAX_PAGE_SIZE": 20,
    "A2A_MAX_HISTORY": 4,
}


def fuzz(test: Any) -> Any:
    """Bounded and reproducible: derandomized (or seeded by A2A_FUZZ_SEED), no example
    database, no deadline (the first request of a test warms up the app)."""
    test = hypothesis_settings(
        max_examples=EXAMPLES,
        derandomize=SEED is None,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )(test)
    return seed(int(SEED))(test) if SEED is not None else test


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

# --- The app, in-process ---------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: httpx.Headers
    content: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0]

    def json(self) -> Any:
        return orjson.loads(self.content)


def leave_idle_streams(app: Any) -> Any:
    """``app``, with a client that goes away from an SSE stream once it is idle (its
    first keepalive: everything there was to send is sent), as a subscription to a task
    waiting for input stays open until the task is terminal; the response is then ended
    (httpx's ASGITransport wants a complete one)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        idle = asyncio.Event()
        state = {"stream": False, "body_read": False, "complete": False}

        async def receive_until_idle() -> Any:
            if state["body_read"]:
                await idle.wait()
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                state["body_read"] = True
            return message

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                state["stream"] = any(
                    k.lower() == b"content-type" and v.startswith(b"text/event-stream") for k, v in message["headers"]
                )
            elif message["type"] == "http.response.body":
                if state["stream"] and message.get("body", b"").startswith(b": keepalive"):
                    idle.set()
                state["complete"] = not message.get("more_body", False)
            await send(message)

        await app(scope, receive_until_idle, watch)
        if idle.is_set() and not state["complete"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    return wrapped


class Client:
    """One event loop and one ASGI app for a whole fuzz test."""

    def __init__(self) -> None:
        self.app = leave_idle_streams(get_asgi_application())
        self.loop = asyncio.new_event_loop()

    def request(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> Answer:
        async def go() -> Answer:
            client = WireClient(app=self.app, version=None)
            response = await asyncio.wait_for(
                client.arequest(method, url, content=content, headers=headers, params=params), 30
            )
            return Answer(response.status_code, response.headers, response.content)

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        self.loop.close()


SEEDED = {"input": "fuzz-input-required", "done": "fuzz-completed", "canceled": "fuzz-canceled"}
CONTEXT = "fuzz-context"


def _message(role: str, text: str, task_id: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": role,
        "parts": [{"kind": "text", "text": text}],
        "taskId": task_id,
        "contextId": CONTEXT,
    }


def seed_tasks(store: MemoryTaskStore, history: int) -> None:
    """Known tasks the generated requests may name: one waiting for input (its history
    full), one completed, one canceled."""
    for key, state in (("input", "input-required"), ("done", "completed"), ("canceled", "canceled")):
        task_id = SEEDED[key]
        messages = [_message("user" if i % 2 == 0 else "agent", f"turn {i}", task_id) for i in range(history)]
        store.save(
            {
                "kind": "task",
                "id": task_id,
                "contextId": CONTEXT,
                "status": {"state": state, "timestamp": now_iso()},
                "history": messages,
                "_version": 1,
            }
        )


@pytest.fixture
def app(settings, monkeypatch) -> Iterator[Client]:
    """A fresh memory store with the seeded tasks, the echo handler, the lowered
    limits; webhook hosts never resolve through DNS."""
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "a2a.handlers.echo"
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    settings.A2A_INPUT_MODES = ["text/plain", "application/json", "image/*"]  # most parts pass
    settings.A2A_STREAM_KEEPALIVE = 0.2  # an idle stream says so soon (see leave_idle_streams)
    for name, value in LIMITS.items():
        setattr(settings, name, value)
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise socket.gaierror(socket.EAI_NONAME, "not resolved while fuzzing") from None
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    seed_tasks(get_task_store(), LIMITS["A2A_MAX_HISTORY"])
    client = Client()
    yield client
    try:
        wait_idle()
        check_store(get_task_store(), checked={})
    finally:
        client.close()


def wait_idle(timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while get_runner().active and time.monotonic() < deadline:
        time.sleep(0.01)


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
    """A google.rpc.Status body; a v0.3 one also names the error (``type``) and repeats
    its ``message`` at the top."""
    assert isinstance(body, dict) and set(body) in ({"error"}, {"error", "message"}, {"error", "type", "message"}), body
    error = body["error"]
    if "message" in body:
        assert body["message"] == error["message"], body
    if "type" in body:
        assert body["type"] in V03_ERROR_NAMES, body
    assert error["code"] == status, (error, status)
    assert isinstance(error.get("status"), str) and error["status"], error
    assert isinstance(error.get("message"), str) and error["message"].strip(), error
    assert len(error["message"]) <= MAX_MESSAGE, f"an unreadable message of {len(error['message'])} characters"
    details = error.get("details")
    assert isinstance(details, list) and details, error
    assert details[0]["reason"] in KNOWN_REASONS, details


# --- Strategies ----------------------------------------------------------------------------------


class Deep:
    """A value nested ``depth`` levels deep, written straight into the JSON text (Python's
    own encoders would recurse too deep)."""

    def __init__(self, depth: int, kind: str) -> None:
        self.depth, self.kind = depth, kind

    def render(self) -> bytes:
        if self.kind == "list":
            return b"[" * self.depth + b"1" + b"]" * self.depth
        return b'{"a":' * self.depth + b'"x"' + b"}" * self.depth

    def __repr__(self) -> str:
        return f"Deep({self.depth}, {self.kind!r})"


class Huge:
    """A string of ``size`` characters of ``char`` (cheap to generate, to shrink and to print)."""

    def __init__(self, size: int, char: str = "x") -> None:
        self.size, self.char = size, char

    def __repr__(self) -> str:
        return f"Huge({self.size}, {self.char!r})"


def encode(value: Any, style: str = "orjson") -> bytes:
    """``value`` as JSON text: compact (orjson), ASCII with escapes (lone surrogates as
    ``\\udXXX``), or raw UTF-8 with lone surrogates as invalid bytes."""
    deep: dict[str, Deep] = {}

    def default(obj: Any) -> Any:
        if isinstance(obj, Deep):
            key = f"@@deep{len(deep)}@@"
            deep[key] = obj
            return key
        if isinstance(obj, Huge):
            return obj.char * obj.size
        raise TypeError(type(obj).__name__)

    if style == "orjson":
        try:
            raw = orjson.dumps(value, default=default)
        except (orjson.JSONEncodeError, TypeError):  # lone surrogates, big integers
            deep.clear()
            style = "ascii"
    if style == "ascii":
        raw = json.dumps(value, default=default).encode()
    elif style == "raw":
        raw = json.dumps(value, default=default, ensure_ascii=False).encode("utf-8", "surrogatepass")
    for key, obj in deep.items():
        raw = raw.replace(f'"{key}"'.encode(), obj.render())
    return raw


SIZES = sorted(
    {
        LIMITS["A2A_MAX_ID_LENGTH"],
        LIMITS["A2A_MAX_ID_LENGTH"] + 1,
        1024,
        1025,
        4097,
        LIMITS["A2A_MAX_TEXT_LENGTH"],
        LIMITS["A2A_MAX_TEXT_LENGTH"] + 1,
        LIMITS["A2A_MAX_BODY_BYTES"] - 200,
        LIMITS["A2A_MAX_BODY_BYTES"] + 1,
        200_000,
    }
)
#: Around orjson's limits: it parses 1024 levels and serializes 255.
DEPTHS = [50, 100, 200, 240, 250, 254, 255, 256, 300, 500, 1000, 1023, 1024, 1025, 2000]

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
weird_text = st.one_of(
    st.text(max_size=30),
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.text(st.one_of(surrogates, st.characters()), min_size=1, max_size=10),
    st.sampled_from(["", " ", "\x00", "\u2028", "\ufeff", "../../etc/passwd", "%ff", "1e400", "NaN", "-1", "0"]),
    st.integers(0, 6000).map(lambda n: "9" * n),  # a number as a string, past int() digit limits
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**31, -(2**31) - 1, 2**63, 2**64, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    weird_text,
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), weird_text), children, max_size=4),
    ),
    max_leaves=12,
)
bad_values = st.one_of(
    json_values,
    st.sampled_from([[], {}, "", 0, -1, True, None, [None], {"": None}]).map(copy.deepcopy),  # never shared
    st.builds(Huge, st.sampled_from(SIZES), st.sampled_from(["x", "é", "\U0001f600", "\\", '"', "0"])),
    st.builds(Deep, st.sampled_from(DEPTHS), st.sampled_from(["list", "dict"])),
)


def paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths(item, (*prefix, i))


ACTIONS = st.sampled_from(["replace", "replace", "delete", "add", "wrap"])
NEW_KEYS = st.one_of(st.text(max_size=10), st.sampled_from(["kind", "text", "id", "_owner", "_version", "history"]))


@st.composite
def mutated(draw: Any, base: st.SearchStrategy, max_mutations: int = 3) -> Any:
    """``base``'s value with a few fields replaced by bad values, deleted, wrapped, or
    joined by unknown ones."""
    value = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(0, max_mutations))):
        every = list(paths(value))
        path = every[draw(st.integers(0, len(every) - 1))]
        action = draw(ACTIONS)
        if not path:
            value = draw(bad_values) if action != "wrap" else [value]
            continue
        *head, last = path
        parent = value
        for key in head:
            parent = parent[key]
        if action == "delete":
            del parent[last]
        elif action == "wrap":
            how = draw(st.integers(0, 2))
            old = parent[last]
            parent[last] = [old] if how == 0 else {"value": old} if how == 1 else encode(old, "ascii").decode()
        elif action == "add" and isinstance(parent[last], dict):
            parent[last][draw(NEW_KEYS)] = draw(bad_values)
        else:
            parent[last] = draw(bad_values)
    return value


ids = st.one_of(
    st.sampled_from([*SEEDED.values(), "no-such-task"]),
    st.uuids().map(str),
    st.text(min_size=1, max_size=20),
    st.sampled_from(["x" * LIMITS["A2A_MAX_ID_LENGTH"], "x" * (LIMITS["A2A_MAX_ID_LENGTH"] + 1)]),
)
b64 = st.binary(max_size=30).map(lambda b: base64.b64encode(b).decode())


V03_PARTS = st.one_of(
    st.builds(lambda t: {"kind": "text", "text": t}, st.text(max_size=40)),
    st.builds(lambda d: {"kind": "data", "data": d}, json_values),
    st.builds(lambda b: {"kind": "file", "file": {"bytes": b, "mimeType": "text/plain", "name": "f.txt"}}, b64),
    st.just({"kind": "file", "file": {"uri": "https://example.com/f.png", "mimeType": "image/png"}}),
)
V10_PARTS = st.one_of(
    st.builds(lambda t: {"text": t}, st.text(max_size=40)),
    st.builds(lambda d: {"data": d}, json_values),
    st.builds(lambda b: {"raw": b, "mediaType": "text/plain", "filename": "f.txt"}, b64),
    st.just({"url": "https://example.com/f.png", "mediaType": "image/png"}),
)
metadata = st.dictionaries(st.text(max_size=5), json_values, max_size=3)


@st.composite
def _send_params(draw: Any, v10: bool) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": draw(st.sampled_from(["ROLE_USER", "ROLE_AGENT", 1] if v10 else ["user", "agent"])),
        "messageId": draw(ids),
        "parts": draw(st.lists(V10_PARTS if v10 else V03_PARTS, min_size=1, max_size=LIMITS["A2A_MAX_PARTS"])),
    }
    if not v10 and draw(st.booleans()):
        message["kind"] = "message"
    if draw(st.booleans()):
        message["taskId" if draw(st.booleans()) else "task_id"] = draw(ids)
    if draw(st.booleans()):
        message["contextId"] = draw(st.sampled_from([CONTEXT, "other-context"]))
    if draw(st.booleans()):
        message["metadata"] = draw(metadata)
    config: dict[str, Any] = {}
    if draw(st.booleans()):
        config["returnImmediately" if v10 else "blocking"] = draw(st.booleans())
    if draw(st.booleans()):
        config["historyLength"] = draw(st.integers(0, 5))
    if draw(st.booleans()):
        config["acceptedOutputModes"] = ["text/plain"]
    if draw(st.integers(0, 5)) == 0:
        push = {"url": draw(st.sampled_from(["http://127.0.0.1:9/hook", "https://10.0.0.1/x", "ftp://x/"]))}
        config["taskPushNotificationConfig" if v10 else "pushNotificationConfig"] = push
    params: dict[str, Any] = {"message": message}
    if config or draw(st.booleans()):
        params["configuration"] = config
    if draw(st.booleans()):
        params["metadata"] = draw(metadata)
    return params


def _v03_rest_part(part: dict[str, Any]) -> dict[str, Any]:
    """A v1.0 part as v0.3 HTTP+JSON writes it (the ProtoJSON of v0.3's proto Part)."""
    if "raw" in part or "url" in part:
        file = {"fileWithBytes": part["raw"]} if "raw" in part else {"fileWithUri": part["url"]}
        return {"file": {**file, "mimeType": part["mediaType"]}}
    if "data" in part:
        return {"data": {"data": part["data"] if isinstance(part["data"], dict) else {"value": part["data"]}}}
    return part


@st.composite
def _v03_rest_send_params(draw: Any) -> dict[str, Any]:
    """v1.0 SendMessage params rewritten as v0.3 HTTP+JSON's SendMessageRequest, in
    JSON names or (as the SDK's v0.3 client sends it) proto field names."""
    params = draw(_send_params(True))
    message = dict(params.pop("message"))
    message["content"] = [_v03_rest_part(p) for p in message.pop("parts")]
    config = dict(params.get("configuration") or {})
    if "returnImmediately" in config:
        config["blocking"] = not config.pop("returnImmediately")
    if "taskPushNotificationConfig" in config:
        config["pushNotification"] = config.pop("taskPushNotificationConfig")
    if "configuration" in params:
        params["configuration"] = config
    params["request" if draw(st.booleans()) else "message"] = message
    return params


#: Valid SendMessage params of each dialect (True: v1.0, "rest03": v0.3 HTTP+JSON), which
#: may still be refused for what they name: an unknown or settled task, an unaccepted
#: media type, a webhook.
SEND_PARAMS = {v10: _send_params(v10) for v10 in (False, True)}
MUTATED_SEND = {v10: mutated(SEND_PARAMS[v10], max_mutations=2) for v10 in (False, True)}
MUTATED_REST03_SEND = mutated(_v03_rest_send_params(), max_mutations=2)
TASK_PARAMS = st.fixed_dictionaries(
    {"id": ids}, optional={"historyLength": st.integers(-1, 10), "metadata": st.dictionaries(st.text(), scalars)}
)


def _list_params(v10: bool) -> st.SearchStrategy:
    states = (
        ["TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED", 3, "TASK_STATE_UNSPECIFIED"]
        if v10
        else ["completed", "input-required", "unknown", "bogus"]
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "contextId": st.sampled_from([CONTEXT, "nope"]),
            "status": st.sampled_from(states),
            "pageSize": st.integers(-1, LIMITS["A2A_MAX_PAGE_SIZE"] + 1),
            "pageToken": st.sampled_from(["", "WyJhIiwgImIiXQ", "junk"]),
            "historyLength": st.integers(-1, 5),
            "includeArtifacts": st.booleans(),
            "statusTimestampAfter": st.sampled_from(["2020-01-01T00:00:00Z", "yesterday", "2020-13-01"]),
        },
    )


def _push_params(v10: bool) -> st.SearchStrategy:
    url = st.sampled_from(["http://127.0.0.1:9/hook", "https://10.1.2.3/x", "not a url", "http://[::1]:99999/"])
    auth = st.fixed_dictionaries({"scheme" if v10 else "schemes": st.just("Bearer" if v10 else ["Bearer"])})
    config = st.fixed_dictionaries(
        {"url": url}, optional={"id": ids, "token": st.text(max_size=10), "authentication": auth}
    )
    if v10:
        return st.builds(lambda c, t: {**c, "taskId": t}, config, ids)
    return st.fixed_dictionaries(
        {"taskId": ids}, optional={"pushNotificationConfig": config, "id": ids, "pushNotificationConfigId": ids}
    )


#: (kind of method, v1.0?) -> its params, mutated.
PARAMS = {
    (kind, v10): mutated(strategy)
    for v10 in (False, True)
    for kind, strategy in {
        "send": SEND_PARAMS[v10],
        "get": TASK_PARAMS,
        "list": _list_params(v10),
        "push": _push_params(v10),
        "other": st.fixed_dictionaries({}, optional={"id": ids, "taskId": ids}),
    }.items()
}
KIND = {
    "SendMessage": "send",
    "message/send": "send",
    "SendStreamingMessage": "send",
    "message/stream": "send",
    "GetTask": "get",
    "tasks/get": "get",
    "CancelTask": "get",
    "tasks/cancel": "get",
    "SubscribeToTask": "get",
    "tasks/resubscribe": "get",
    "ListTasks": "list",
    "tasks/list": "list",
}
METHOD_NAMES = sorted(METHODS)
request_ids = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=10), st.none(), bad_values)


@st.composite
def _envelopes(draw: Any) -> dict[str, Any]:
    method = draw(st.one_of(st.sampled_from(METHOD_NAMES), st.sampled_from(METHOD_NAMES), bad_values))
    request: dict[str, Any] = {
        "jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2.0, 2, None, ""])),
    }
    if draw(st.integers(0, 4)):
        request["id"] = draw(request_ids)
    request["method"] = method
    if draw(st.integers(0, 5)):
        name = method if isinstance(method, str) else draw(st.sampled_from(METHOD_NAMES))
        kind = KIND.get(name, "push" if "ush" in name else "other")
        request["params"] = draw(PARAMS[kind, draw(st.booleans())])
    for key in draw(st.lists(st.sampled_from(["jsonrpc", "method"]), max_size=1)):
        del request[key]
    return request


#: A JSON-RPC request object: mostly valid, with each member sometimes wrong or missing.
envelopes = _envelopes()
versions = st.sampled_from([None, None, "0.3", "1.0", "1.0", "", " 1.0 ", "2.0", "0.2", "x" * 300])


def post_jsonrpc(app: Client, body: bytes, version: str | None) -> Answer:
    headers = {"Content-Type": "application/json"}
    if version is not None:
        headers["A2A-Version"] = version
    return app.request("POST", "/a2a/", content=body, headers=headers)


@st.composite
def corrupted(draw: Any, body: bytes) -> bytes:
    """``body`` with bytes that are not UTF-8 put in, or cut short."""
    how = draw(st.sampled_from(["insert", "insert", "truncate", "bom"]))
    at = draw(st.integers(0, len(body)))
    if how == "truncate":
        return body[:at]
    if how == "bom":
        return b"\xef\xbb\xbf" + body
    junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80\x80", b"\x00"]))
    return body[:at] + junk + body[at:]


@st.composite
def jsonrpc_bodies(draw: Any) -> bytes:
    if draw(st.integers(0, 19)) == 0:
        return draw(st.binary(max_size=300))  # not even text
    payload = draw(
        st.one_of(
            envelopes,
            envelopes,
            st.lists(st.one_of(envelopes, json_values), min_size=0, max_size=6),
            json_values,
        )
    )
    body = encode(payload, draw(st.sampled_from(["orjson", "orjson", "ascii", "raw"])))
    if draw(st.integers(0, 9)) == 0:
        body = draw(corrupted(body))
    return body


# --- The fuzz tests --------------------------------------------------------------------------------


class Checker:
    """Runs one example and checks the store after it."""

    def __init__(self) -> None:
        self.checked: dict[str, bytes] = {}

    def store(self) -> None:
        check_store(get_task_store(), self.checked)


@pytest.fixture
def checker(app) -> Checker:
    return Checker()


@fuzz
@given(body=jsonrpc_bodies(), version=versions)
@example(
    body=b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x", "historyLength": "'
    + b"9" * 5000
    + b'"}}',
    version=None,
)
def test_jsonrpc_bodies(app, checker, body, version):
    """Any body at all, single or batched: a well-formed JSON-RPC answer."""
    check_jsonrpc(post_jsonrpc(app, body, version), body)
    checker.store()


@st.composite
def send_requests(draw: Any) -> tuple[bytes, str | None]:
    v10 = draw(st.booleans())
    method = draw(st.sampled_from(["SendMessage", "message/send", "SendStreamingMessage", "message/stream"]))
    request = {
        "jsonrpc": "2.0",
        "id": draw(st.integers(0, 1000)),
        "method": method,
        "params": draw(MUTATED_SEND[v10]),
    }
    version = "1.0" if v10 else draw(st.sampled_from([None, "0.3"]))
    return encode(request, draw(st.sampled_from(["orjson", "orjson", "ascii", "raw"]))), version


@fuzz
@given(request=send_requests())
@example(  # U+2028 in a streamed text: clients splitting lines the Python way cut the frame
    request=(
        b'{"jsonrpc":"2.0","id":0,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER",'
        b'"messageId":"m","parts":[{"text":"\xe2\x80\xa8"}]}}}',
        "1.0",
    )
)
def test_send_message_mutated_field_by_field(app, checker, request):
    """SendMessage (and streaming) params of each dialect, with fields wrong or missing:
    a task is created only from a well-formed message, and stays well formed."""
    body, version = request
    check_jsonrpc(post_jsonrpc(app, body, version), body)
    checker.store()


@fuzz
@given(
    batch=st.lists(st.one_of(envelopes, json_values), min_size=1, max_size=6),
    duplicate=st.one_of(st.none(), st.integers(), st.text(max_size=5)),
    notify=st.lists(st.booleans(), max_size=8),
    version=versions,
)
def test_batches(app, checker, batch, duplicate, notify, version):
    """Batches with duplicate ids, notifications, and valid and invalid requests mixed."""
    for i, item in enumerate(batch):
        if isinstance(item, dict):
            if i < len(notify) and notify[i]:
                item.pop("id", None)
            elif duplicate is not None:
                item["id"] = duplicate
    body = encode(batch)
    check_jsonrpc(post_jsonrpc(app, body, version), body)
    checker.store()


@fuzz
@given(depth=st.sampled_from(DEPTHS), kind=st.sampled_from(["list", "dict"]), where=st.integers(0, 4))
@example(depth=250, kind="dict", where=0)  # stored, then too deep to write the answer: HTTP 500
@example(depth=300, kind="list", where=2)  # parsed, then too deep to store: -32603
def test_deep_nesting(app, checker, depth, kind, where):
    """Values nested around the parser's (1024) and the serializer's (255) depth limits,
    wherever a request takes free-form JSON."""
    deep = Deep(depth, kind)
    message = {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]}
    params: Any = [
        {"message": {**message, "metadata": {"x": deep}}},
        {"message": message, "metadata": {"x": deep}},
        {"message": {**message, "parts": [{"kind": "data", "data": deep}]}},
        {"message": {**message, "parts": [{"kind": "text", "text": "hi", "metadata": {"x": deep}}]}},
        deep,
    ][where]
    body = encode({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params})
    check_jsonrpc(post_jsonrpc(app, body, None), body)
    checker.store()


#: Route template -> the HTTP methods it takes (pushNotificationConfigs: routes that may
#: or may not exist; "{id}": not a route at all).
REST_ROUTES = {
    "message:send": ["POST"],
    "message:stream": ["POST"],
    "tasks": ["GET"],
    "tasks/{id}": ["GET"],
    "tasks/{id}:cancel": ["POST"],
    "tasks/{id}:subscribe": ["GET", "POST"],
    "tasks/{id}/pushNotificationConfigs": ["GET", "POST"],
    "tasks/{id}/pushNotificationConfigs/{id}": ["GET", "DELETE"],
    "extendedAgentCard": ["GET"],
    "card": ["GET"],
    "": ["GET"],
    "{id}": ["GET"],
}
ROUTE_NAMES = [*sorted(REST_ROUTES), "message:send", "message:stream", "tasks", "tasks/{id}", "tasks/{id}:cancel"]
segments = st.one_of(
    ids,
    ids,
    st.text(max_size=20),
    st.sampled_from(["", ":", "%", "%ff", "%00", "..", "a:b", "x/y", "\u2028", "é", "tasks", "x?y=1", "#"]),
)
query_keys = st.one_of(
    st.sampled_from(
        ["historyLength", "pageSize", "pageToken", "contextId", "status", "includeArtifacts", "A2A-Version"]
    ),
    st.text(max_size=8),
)
query_values = st.one_of(
    weird_text,
    st.integers(-5, LIMITS["A2A_MAX_PAGE_SIZE"] + 5).map(str),
    st.sampled_from(["true", "false", "TASK_STATE_COMPLETED", "working", CONTEXT]),
)
queries = st.dictionaries(query_keys, query_values, max_size=4)


@st.composite
def rest_requests(draw: Any) -> tuple[str, str, bytes | None, dict[str, str], Any]:
    """A request to a REST route (mostly one that exists, with the method it takes)."""
    template = draw(st.sampled_from(ROUTE_NAMES))
    quote = draw(st.booleans())
    path = template.replace("{id}", urllib.parse.quote(draw(segments), safe="") if quote else draw(segments))
    url = f"/a2a/rest{draw(st.sampled_from(['', '', '/v1']))}/{path}".rstrip("/") if path else "/a2a/rest"
    if draw(st.integers(0, 4)):
        method = draw(st.sampled_from(REST_ROUTES[template]))
    else:
        method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]))
    v10 = draw(st.booleans())
    body_value = draw(
        st.one_of(
            MUTATED_SEND[v10],
            MUTATED_SEND[v10],
            MUTATED_REST03_SEND,  # v0.3's HTTP+JSON (no A2A-Version, or 0.3)
            PARAMS["push", True],  # for the pushNotificationConfigs routes
            st.none(),
            st.fixed_dictionaries({}, optional={"metadata": json_values}),
            json_values,
        )
    )
    body = None if body_value is None else encode(body_value, draw(st.sampled_from(["orjson", "ascii", "raw"])))
    if body is not None and draw(st.integers(0, 9)) == 0:
        body = draw(corrupted(body))
    headers = {}
    version = "1.0" if v10 and draw(st.booleans()) else draw(versions)
    if version is not None:
        headers["A2A-Version"] = version
    if draw(st.booleans()):
        headers["Content-Type"] = draw(st.sampled_from(["application/json", "application/a2a+json", "text/plain", ""]))
    return method, url, body, headers, draw(queries)


@fuzz
@given(request=rest_requests())
@example(request=("GET", "/a2a/rest/message:send", None, {}, {}))  # a 405 whose Status said 404
@example(request=("GET", "/a2a/rest", None, {}, {"A2A-Version": "9" * 909}))  # echoed in full in the message
@example(request=("GET", "/a2a/rest/..", None, {}, {}))  # the JSON-RPC endpoint's 405: an empty HTML page
@example(request=("GET", "/a2a/rest/tasks/x", None, {}, {"historyLength": "9" * 5000}))  # int() digit limit
@example(request=("GET", "/a2a/rest/tasks/fuzz-input-required:subscribe", None, {}, {}))  # stays open: left when idle
def test_rest_requests(app, checker, request):
    """Random routes, path segments, query strings, bodies and versions: 2xx or 4xx with
    a google.rpc.Status, never 5xx."""
    method, url, body, headers, query = request
    try:
        answer = app.request(method, url, content=body, headers=headers, params=query or None)
    except httpx.InvalidURL:
        return  # not a URL httpx will send
    check_rest(answer)
    checker.store()


def test_oversize_bodies_are_refused_before_parsing(app):
    """Both bindings: one byte over A2A_MAX_BODY_BYTES is 413 whatever the body holds."""
    body = b"[" * (LIMITS["A2A_MAX_BODY_BYTES"] + 1)
    answer = post_jsonrpc(app, body, "1.0")
    check_jsonrpc(answer, body)
    rest = app.request("POST", "/a2a/rest/message:send", content=body, headers={"A2A-Version": "1.0"})
    assert rest.status == 413
    check_status_body(rest.json(), 413)
    assert "A2A_MAX_BODY_BYTES" in rest.json()["error"]["message"]
