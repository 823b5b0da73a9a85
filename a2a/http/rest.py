"""The HTTP+JSON (REST) binding, spec section 11: the same operations as JSON-RPC,
addressed by URL and HTTP method.

Routes (under the app's ``a2a/rest`` prefix, the interface URL the card names):
``POST message:send``, ``POST message:stream``, ``GET tasks``, ``GET tasks/{id}``,
``POST tasks/{id}:cancel``, ``POST|GET tasks/{id}:subscribe`` (the spec text says POST,
a2a.proto says GET), ``POST|GET tasks/{id}/pushNotificationConfigs``,
``GET|DELETE tasks/{id}/pushNotificationConfigs/{configId}``, ``GET extendedAgentCard``
(``GET card`` too). v0.3 clients put ``/v1`` before each path (``/v1/message:send``,
``/v1/card``): both spellings reach the same views.

The dialect comes from ``A2A-Version`` (header or query parameter), as on JSON-RPC:
``1.0`` is v1.0, empty or ``0.3`` is v0.3, whose HTTP+JSON bodies are the ProtoJSON of
its gRPC messages (:mod:`a2a.protocol.v03rest`). Success bodies are the bare objects
(``application/a2a+json`` in v1.0, ``application/json`` in v0.3); errors are
``google.rpc.Status`` objects with the HTTP status of spec 5.4 (v0.3 bodies add the
error's name as ``type`` and its ``message`` at the top, which v0.3 clients read);
streams are SSE of bare StreamResponse objects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from a2a import auth
from a2a.core import tracing
from a2a.http.common import call_context, event_stream, extended_card, store_failure
from a2a.http.sse import sse_stream
from a2a.protocol import V10, Dialect, limits, rest_dialect_for
from a2a.protocol.errors import (
    ERROR_NAMES,
    A2AError,
    InternalError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
)
from a2a.service import operations
from a2a.service import push_configs as configs
from a2a.service.context import CallContext, check_tenant
from stores.base import StoreError

logger = logging.getLogger(__name__)

A2A_JSON = "application/a2a+json"
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
BOOLEAN_QUERY = {"true": True, "false": False}


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def error_body(dialect: Dialect, error: A2AError) -> dict[str, Any]:
    """A ``google.rpc.Status`` for ``error``: code = HTTP status, details = ErrorInfo
    (and BadRequest naming the field of invalid params).

    In v0.3 the spec names no error body; the official SDK's v0.3 server sends this
    Status, its v0.3 client raises the error named by a top-level ``type``, and a2a-sdk
    0.3 servers sent a top-level ``message``: v0.3 bodies carry all three."""
    body: dict[str, Any] = {
        "error": {
            "code": error.http_status,
            "status": STATUS_NAMES.get(error.http_status, "UNKNOWN"),
            "message": error.message,
            "details": V10.render_error(error)["data"],
        }
    }
    if dialect.version == "0.3":
        if error.code in ERROR_NAMES:
            body["type"] = ERROR_NAMES[error.code]
        body["message"] = error.message
    return body


def _content_type(dialect: Dialect) -> str:
    return A2A_JSON if dialect.version == "1.0" else "application/json"


def _error_response(dialect: Dialect, error: A2AError) -> HttpResponse:
    body = _dumps(error_body(dialect, error))
    return HttpResponse(body, status=error.http_status, content_type=_content_type(dialect))


def _body(request: HttpRequest) -> dict[str, Any]:
    raw = limits.read_body(request)  # PayloadTooLargeError (413) over A2A_MAX_BODY_BYTES
    if not raw.strip():
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidRequestError("The request body must be a JSON object")
    limits.check_nesting(body)
    return body


def _query(request: HttpRequest) -> dict[str, Any]:
    """Query parameters as a params object (spec 11.5): booleans from true/false."""
    params: dict[str, Any] = {}
    for key, value in request.GET.items():
        if key == "A2A-Version":
            continue
        if key in ("includeArtifacts", "include_artifacts") and isinstance(value, str):
            params[key] = BOOLEAN_QUERY.get(value, value)
        else:
            params[key] = value
    return params


Operation = Callable[[Dialect, HttpRequest, dict[str, str], CallContext], Awaitable[Any]]


def endpoint(
    methods: tuple[str, ...], operation: Operation, route: str
) -> Callable[..., Coroutine[Any, Any, HttpResponseBase]]:
    """A view running ``operation`` in the caller's dialect, errors as Status bodies;
    ``route`` names it in traces (``POST message:send``)."""

    @csrf_exempt
    async def view(request: HttpRequest, **kwargs: str) -> HttpResponseBase:
        try:
            dialect = rest_dialect_for(request.headers.get("A2A-Version") or request.GET.get("A2A-Version"))
        except A2AError as exc:  # a version we do not speak: answered as v1.0 says
            return _error_response(V10, exc)
        try:
            if request.method not in methods:
                raise MethodNotFoundError(f"{request.method} is not allowed here; use {' or '.join(methods)}")
            limits.check_body_size(request)  # a GET's body too: the handler may have cut it off
            if request.method == "POST":  # 415 unless JSON (an empty body may have no Content-Type)
                limits.check_media_type(request, request.body)
            caller = await auth.authenticate(request)
            tenant = check_tenant(kwargs.pop("tenant", None))  # /{tenant}/tasks/...: scopes the request's tasks
            method = f"{request.method} {route}" if tracing.enabled() else ""
            ctx = call_context(request, caller, "rest", dialect.version, tenant=tenant, method=method)
            result = await operation(dialect, request, kwargs, ctx)
        except MethodNotFoundError as exc:
            exc.http_status = 405  # the Status body's code too, not only the HTTP status
            response = _error_response(dialect, exc)
            response["Allow"] = ", ".join(methods)
            return response
        except auth.AuthenticationRequiredError as exc:
            response = _error_response(dialect, exc)
            response["WWW-Authenticate"] = auth.challenge()
            return response
        except A2AError as exc:
            return _error_response(dialect, exc)
        except StoreError as exc:  # e.g. cannot read now: never "not found"
            return _error_response(dialect, store_failure(exc))
        except Exception:
            logger.exception("REST %s failed", request.path)
            return _error_response(dialect, InternalError("Internal error; the server logged the details"))
        if isinstance(result, HttpResponseBase):
            return result
        return HttpResponse(_dumps(result), content_type=_content_type(dialect))

    return view


async def _stream(dialect: Dialect, items: Any) -> StreamingHttpResponse:
    first = await anext(items)  # errors before the first event are plain error responses
    return event_stream(
        sse_stream(
            first,
            items,
            lambda item: _dumps(dialect.render_stream_item(item)),
            lambda error: _dumps(error_body(dialect, error)),
        )
    )


async def _send(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    return d.render_send_result(await operations.send_message(d.parse_send(_body(request)), ctx))


async def _send_streaming(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    return await _stream(d, operations.stream_message(d.parse_send(_body(request)), ctx))


async def _get(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    return d.render_task(await operations.get_task(d.parse_get({**_query(request), "id": kw["task_id"]}), ctx))


async def _list(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    query = d.parse_list(_query(request))
    page = await operations.list_tasks(query, ctx)
    return d.render_list([d.render_task(t) for t in page.tasks], page.next_page_token, query.page_size, page.total_size)


async def _cancel(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    return d.render_task(await operations.cancel_task(d.parse_cancel({**_body(request), "id": kw["task_id"]}), ctx))


async def _subscribe(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    return await _stream(d, operations.subscribe_to_task(d.parse_get({"id": kw["task_id"]}), ctx))


async def _push_configs(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    """``POST`` creates a config on the task, ``GET`` lists them."""
    configs.ensure_enabled()
    if request.method == "POST":
        params = d.parse_push_create({**_body(request), "taskId": kw["task_id"]})
        return d.render_push_config(await configs.create_config(ctx, params))
    page = await configs.list_configs(ctx, d.parse_push_list({**_query(request), "taskId": kw["task_id"]}))
    return d.render_push_list(page.configs, page.next_page_token)


async def _push_config(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    """``GET`` one config, ``DELETE`` it (answering ``{}``, google.protobuf.Empty)."""
    configs.ensure_enabled()
    ref = {"taskId": kw["task_id"], "id": kw["config_id"]}
    if request.method == "GET":
        return d.render_push_config(await configs.get_config(ctx, d.parse_push_get(ref)))
    await configs.delete_config(ctx, d.parse_push_delete(ref))
    return {}


async def _extended_card(d: Dialect, request: HttpRequest, kw: dict[str, str], ctx: CallContext) -> Any:
    return extended_card(d, ctx)


send_message = endpoint(("POST",), _send, "message:send")
stream_message = endpoint(("POST",), _send_streaming, "message:stream")
get_task = endpoint(("GET",), _get, "tasks/{id}")
list_tasks = endpoint(("GET",), _list, "tasks")
cancel_task = endpoint(("POST",), _cancel, "tasks/{id}:cancel")
subscribe_to_task = endpoint(("POST", "GET"), _subscribe, "tasks/{id}:subscribe")
push_configs = endpoint(("POST", "GET"), _push_configs, "tasks/{id}/pushNotificationConfigs")
push_config = endpoint(("GET", "DELETE"), _push_config, "tasks/{id}/pushNotificationConfigs/{configId}")
get_extended_card = endpoint(("GET",), _extended_card, "extendedAgentCard")
