"""The JSON-RPC 2.0 binding: bytes in, bytes out.

Parse the body, pick the dialect, validate the envelope, route the method to its
operation, render the result or the error in the caller's dialect. Batches and
notifications are handled as JSON-RPC 2.0 says. No request body, however broken,
gets anything but a well-formed JSON-RPC response.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import orjson

from a2a.core import tracing
from a2a.http.sse import SSE, error_stream, sse_stream
from a2a.protocol import V03, V1_VERSIONS, Dialect, dialect_for, limits
from a2a.protocol.errors import A2AError, InvalidRequestError, JSONParseError, MethodNotFoundError
from a2a.protocol.model import StreamItem
from a2a.service.context import INTERNAL, CallContext, check_tenant
from a2a.service.errors import client_error
from a2a.service.methods import METHODS, Held, Stream


class Later:
    """A JSON-RPC answer whose bytes are known later (a held long-poll): ``body()``."""

    def __init__(self, body: Callable[[], Coroutine[Any, Any, bytes]]) -> None:
        self.body = body


def error_response(dialect: Dialect, request_id: Any, error: A2AError) -> dict[str, Any]:
    """The JSON-RPC response answering request ``request_id`` with ``error``, rendered in ``dialect``."""
    return {"jsonrpc": "2.0", "id": request_id, "error": dialect.render_error(error)}


def _response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _valid_id(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str | orjson.Fragment)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    )


def _verbatim(literal: str) -> orjson.Fragment:
    return orjson.Fragment(literal.encode())


def _exact_ids(payload: Any, body: bytes) -> Any:
    """``payload`` with each numeric id the client wrote echoed exactly as written.

    orjson reads an integer beyond 64 bits (and any fraction) as a float, so an id of
    2**70 would come back as ``1.1805916207174113e+21``. Only when some id is a float is
    the body read again, by the standard library with numbers kept as written, and those
    ids become :class:`orjson.Fragment` s that are rendered verbatim."""
    items = payload if isinstance(payload, list) else [payload]
    if not any(isinstance(item, dict) and isinstance(item.get("id"), float) for item in items):
        return payload
    try:
        exact = json.loads(body, parse_int=_verbatim, parse_float=_verbatim)
    except (ValueError, RecursionError):  # read by orjson, not by json (e.g. nested too deep)
        return payload
    exact_items = exact if isinstance(exact, list) else [exact]
    if len(exact_items) != len(items):
        return payload
    for item, twin in zip(items, exact_items, strict=True):
        if isinstance(item, dict) and isinstance(item.get("id"), float) and isinstance(twin, dict):
            item["id"] = twin.get("id")
    return payload


#: v0.3's streaming methods: their answer is an SSE stream even when it is an error
#: raised before the first event (v0.3 3.3.1, 7.2, 7.9: each ``data`` a JSON-RPC
#: response, an error response too; v0.3 clients read nothing but the stream).
V03_STREAMING = frozenset({"message/stream", "tasks/resubscribe"})


async def _call(
    dialect: Dialect, request: Any, ctx: CallContext, *, batched: bool = False, version: str | None = None
) -> dict[str, Any] | SSE | Later | None:
    """Answer one request object; None for a notification; an SSE stream for a
    streaming method (primed: errors before its first event are plain errors, except
    for v0.3's streaming methods, whose errors are a stream of that one error); a
    :class:`Later` for a held long-poll."""
    if not isinstance(request, dict):
        return error_response(dialect, None, InvalidRequestError("A JSON-RPC request must be an object"))
    request_id = request.get("id")
    if not _valid_id(request_id):
        return error_response(dialect, None, InvalidRequestError('"id" must be a string, a number or null'))
    if request.get("jsonrpc") != "2.0":
        return error_response(dialect, request_id, InvalidRequestError('"jsonrpc" must be exactly "2.0"'))
    method_name = request.get("method")
    if not isinstance(method_name, str):
        return error_response(dialect, request_id, InvalidRequestError('"method" must be a string'))
    method = METHODS.get(method_name)
    sse_errors = method_name in V03_STREAMING and dialect.version == "0.3" and not batched and "id" in request
    if not (version or "").strip():  # v0.3 by default: a v1.0-shaped payload is answered as v1.0
        dialect = dialect_for(version, method_name, request.get("params"))
    if ctx.version != dialect.version:
        ctx = dataclasses.replace(ctx, version=dialect.version)
    try:
        if method is None:
            raise MethodNotFoundError(f"Method not found: {method_name[:100]}")
        params = request.get("params")
        limits.check_nesting(params)  # deeper than any answer could be written
        tenant = params.get("tenant") if dialect.version in V1_VERSIONS and isinstance(params, dict) else None
        if tenant or tracing.enabled():  # v1.0 "tenant" scopes the request's tasks (spec 8.3.2)
            ctx = dataclasses.replace(ctx, tenant=check_tenant(tenant, "params.tenant"), method=method_name)
        result = await method(dialect, params, ctx)
        if isinstance(result, Stream):
            if batched or "id" not in request:
                raise InvalidRequestError("A streaming method must be a single request with an id, not batched")
            first = await anext(result.items)
            return _sse(dialect, request_id, first, result.items)
        if isinstance(result, Held):
            if not batched and "id" in request:
                return Later(lambda: _answer(dialect, request_id, result, method_name))
            result = await result.answer()  # a batch is answered whole: it waits in place
    except Exception as exc:
        response = error_response(dialect, request_id, client_error(exc, f"JSON-RPC {method_name}"))
    else:
        response = _response(request_id, result)
    if "id" not in request:
        return None
    if sse_errors:  # a v0.3 request (by its A2A-Version) for a v0.3 streaming method
        return error_stream(_dumps(response))
    return response


async def _answer(dialect: Dialect, request_id: Any, held: Held, method_name: str) -> bytes:
    """The response of a held request, once it is known."""
    try:
        return _dumps(_response(request_id, await held.answer()))
    except Exception as exc:
        return _dumps(error_response(dialect, request_id, client_error(exc, f"JSON-RPC {method_name}")))


def _sse(dialect: Dialect, request_id: Any, first: StreamItem, items: AsyncIterator[StreamItem]) -> SSE:
    """Each ``data:`` a whole JSON-RPC response carrying the request id."""
    return sse_stream(
        first,
        items,
        lambda item: _dumps(_response(request_id, dialect.render_stream_item(item))),
        lambda error: _dumps(error_response(dialect, request_id, error)),
    )


def _dumps(payload: Any) -> bytes:
    return orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS)


async def handle(body: bytes, version: str | None, ctx: CallContext = INTERNAL) -> bytes | SSE | Later | None:
    """Answer a JSON-RPC HTTP body: the response bytes, an SSE stream (streaming
    methods), a :class:`Later` (a held long-poll), or None when nothing is to be sent
    (notifications)."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:  # answer in the caller's dialect when it named one we speak
            parse_dialect = dialect_for(version)
        except A2AError:
            parse_dialect = V03
        return _dumps(error_response(parse_dialect, None, JSONParseError(f"Invalid JSON payload: {exc}")))
    payload = _exact_ids(payload, body)
    try:
        dialect = dialect_for(version)  # (the context's version is set per request, by _call)
    except A2AError as exc:
        ids = (
            [r.get("id") if isinstance(r, dict) else None for r in payload]
            if isinstance(payload, list)
            else [payload.get("id") if isinstance(payload, dict) else None]
        )
        errors = [error_response(V03, i if _valid_id(i) else None, exc) for i in ids] or [
            error_response(V03, None, exc)
        ]
        return _dumps(errors if isinstance(payload, list) and payload else errors[0])  # [] gets one error
    if isinstance(payload, list):
        if not payload:
            return _dumps(error_response(dialect, None, InvalidRequestError("An empty batch is not a request")))
        if len(payload) > (most := limits.max_batch_size()):  # one error, none of it run
            message = f"A batch may hold at most {most} requests, not {len(payload)} (A2A_MAX_BATCH_SIZE)"
            return _dumps(error_response(dialect, None, InvalidRequestError(message)))
        answers = [await _call(dialect, item, ctx, batched=True, version=version) for item in payload]
        responses = [r for r in answers if r is not None]
        return _dumps(responses) if responses else None
    response = await _call(dialect, payload, ctx, version=version)
    if response is None or isinstance(response, bytes | dict):
        return _dumps(response) if response is not None else None
    return response
