"""The JSON-RPC 2.0 answers an A2A agent sends, written once for whatever plays a remote
agent in a test: :class:`~a2a.testing.FakeAgent`, or an ``httpx.MockTransport`` handler
in a client's test. (A request's envelope is :func:`a2a.testing.client.rpc_body`.)"""

from __future__ import annotations

from typing import Any

import orjson


def rpc_result(result: Any, request_id: Any = 1) -> dict[str, Any]:
    """The answer to the request ``request_id`` that carries ``result``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def rpc_error(code: int, message: str, request_id: Any = 1, data: Any = None) -> dict[str, Any]:
    """The answer to the request ``request_id`` that is an error: ``code``, ``message``
    and, when given, ``data`` (nothing else: JSON-RPC 2.0, section 5.1)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def sse_event(data: Any) -> bytes:
    """One Server-Sent Event whose data is ``data`` as JSON: a frame of a stream, whose
    data is an answer (:func:`rpc_result`) on JSON-RPC, the event itself on HTTP+JSON."""
    return b"data: " + orjson.dumps(data) + b"\n\n"
