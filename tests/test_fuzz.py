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

import ipaddress
import os
import socket
import urllib.parse
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.fuzz_app import CONTEXT, Client, seed_tasks, wait_idle
from tests.fuzz_checks import LIMITS, check_jsonrpc, check_rest, check_status_body, check_store
from tests.fuzz_strategies import (
    DEPTHS,
    MUTATED_REST03_SEND,
    MUTATED_SEND,
    PARAMS,
    Deep,
    corrupted,
    encode,
    envelopes,
    ids,
    json_values,
    jsonrpc_bodies,
    post_jsonrpc,
    versions,
    weird_text,
)

# The runner's background threads use `random` (lease jitter) while Hypothesis draws.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")

EXAMPLES = int(os.environ.get("A2A_FUZZ_EXAMPLES", "200"))
SEED = os.environ.get("A2A_FUZZ_SEED")


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
