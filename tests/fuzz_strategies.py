"""Hypothesis strategies of the fuzz tests: bodies, envelopes, params mutated field by field, deep and huge values."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import strategies as st

from a2a.service.methods import METHODS
from tests.fuzz_app import CONTEXT, SEEDED, Answer, Client
from tests.fuzz_checks import LIMITS

# The runner's background threads use `random` (lease jitter) while Hypothesis draws.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")


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
