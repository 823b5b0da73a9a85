"""The JSON-RPC 2.0 binding: bytes in, bytes out.

Parse the body, pick the dialect, validate the envelope, route the method to its
operation, render the result or the error in the caller's dialect. Batches and
notifications are handled as JSON-RPC 2.0 says. No request body, however broken,
gets anything but a well-formed JSON-RPC response.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from .. import operations
from ..protocol import V03, Dialect, dialect_for
from ..protocol.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
)

logger = logging.getLogger(__name__)

Method = Callable[[Dialect, Any], Awaitable[Any]]


async def _send(d: Dialect, params: Any) -> Any:
    return d.render_send_result(await operations.send_message(d.parse_send(params)))


async def _get(d: Dialect, params: Any) -> Any:
    return d.render_task(await operations.get_task(d.parse_get(params)))


async def _cancel(d: Dialect, params: Any) -> Any:
    return d.render_task(await operations.cancel_task(d.parse_cancel(params)))


async def _list(d: Dialect, params: Any) -> Any:
    query = d.parse_list(params)
    page = await operations.list_tasks(query)
    return d.render_list([d.render_task(t) for t in page.tasks], page.next_page_token, query.page_size, page.total_size)


def _refuse(error: type[A2AError], message: str) -> Method:
    async def method(d: Dialect, params: Any) -> Any:
        raise error(message)

    return method


_streaming = _refuse(
    UnsupportedOperationError,
    "Streaming is not enabled on this agent (capabilities.streaming is false); use SendMessage and GetTask",
)
_push = _refuse(PushNotificationNotSupportedError, "Push notifications are not enabled on this agent")
_extended = _refuse(ExtendedAgentCardNotConfiguredError, "This agent has no extended agent card")

#: Method name (v1.0 and v0.3 spellings) -> implementation.
METHODS: dict[str, Method] = {
    "SendMessage": _send,
    "message/send": _send,
    "GetTask": _get,
    "tasks/get": _get,
    "CancelTask": _cancel,
    "tasks/cancel": _cancel,
    "ListTasks": _list,
    "tasks/list": _list,
    "SendStreamingMessage": _streaming,
    "message/stream": _streaming,
    "SubscribeToTask": _streaming,
    "tasks/resubscribe": _streaming,
    "CreateTaskPushNotificationConfig": _push,
    "GetTaskPushNotificationConfig": _push,
    "ListTaskPushNotificationConfigs": _push,
    "DeleteTaskPushNotificationConfig": _push,
    "tasks/pushNotificationConfig/set": _push,
    "tasks/pushNotificationConfig/get": _push,
    "tasks/pushNotificationConfig/list": _push,
    "tasks/pushNotificationConfig/delete": _push,
    "GetExtendedAgentCard": _extended,
    "agent/getAuthenticatedExtendedCard": _extended,
}


def _error(dialect: Dialect, request_id: Any, error: A2AError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": dialect.render_error(error)}


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))


async def _call(dialect: Dialect, request: Any) -> dict[str, Any] | None:
    """Answer one request object; None for a notification."""
    if not isinstance(request, dict):
        return _error(dialect, None, InvalidRequestError("A JSON-RPC request must be an object"))
    request_id = request.get("id")
    if not _valid_id(request_id):
        return _error(dialect, None, InvalidRequestError('"id" must be a string, a number or null'))
    if request.get("jsonrpc") != "2.0":
        return _error(dialect, request_id, InvalidRequestError('"jsonrpc" must be exactly "2.0"'))
    method_name = request.get("method")
    if not isinstance(method_name, str):
        return _error(dialect, request_id, InvalidRequestError('"method" must be a string'))
    method = METHODS.get(method_name)
    try:
        if method is None:
            raise MethodNotFoundError(f"Method not found: {method_name[:100]}")
        result = await method(dialect, request.get("params"))
    except A2AError as exc:
        response = _error(dialect, request_id, exc)
    except Exception:
        logger.exception("JSON-RPC %s failed", method_name)
        response = _error(dialect, request_id, InternalError("Internal error; the server logged the details"))
    else:
        response = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return response if "id" in request else None


def _dumps(payload: Any) -> bytes:
    return orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS)


async def handle(body: bytes, version: str | None) -> bytes | None:
    """Answer a JSON-RPC HTTP body; None when nothing is to be sent (notifications)."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:  # answer in the caller's dialect when it named one we speak
            parse_dialect = dialect_for(version)
        except A2AError:
            parse_dialect = V03
        return _dumps(_error(parse_dialect, None, JSONParseError(f"Invalid JSON payload: {exc}")))
    try:
        dialect = dialect_for(version)
    except A2AError as exc:
        ids = (
            [r.get("id") if isinstance(r, dict) else None for r in payload]
            if isinstance(payload, list)
            else [payload.get("id") if isinstance(payload, dict) else None]
        )
        errors = [_error(V03, i if _valid_id(i) else None, exc) for i in ids] or [_error(V03, None, exc)]
        return _dumps(errors if isinstance(payload, list) else errors[0])
    if isinstance(payload, list):
        if not payload:
            return _dumps(_error(dialect, None, InvalidRequestError("An empty batch is not a request")))
        responses = [r for r in [await _call(dialect, item) for item in payload] if r is not None]
        return _dumps(responses) if responses else None
    response = await _call(dialect, payload)
    return _dumps(response) if response is not None else None
