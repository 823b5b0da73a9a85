"""MCP's wire facts: the revisions spoken, the error codes, the request's envelope and
metadata checks (Streamable HTTP's "Server Validation"), the shape of an answer."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

#: The stateless revision: version and capabilities in each request's ``_meta``.
MODERN = "2026-07-28"
#: The revision of ``initialize`` and sessions, for the clients that still speak it.
LEGACY = "2025-11-25"
SUPPORTED = (MODERN, LEGACY)

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022


class McpError(Exception):
    """A JSON-RPC error to answer with: ``code``, ``message``, ``data``, and the HTTP status
    of its response (400 for the transport's validation errors, 404 for an unknown method
    or session, else 200)."""

    def __init__(self, code: int, message: str, data: Any = None, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status

    def body(self, request_id: Any) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        answer: dict[str, Any] = {"jsonrpc": "2.0", "error": error}
        if request_id is not None:
            answer["id"] = request_id
        return answer


def invalid_params(message: str) -> McpError:
    return McpError(INVALID_PARAMS, message)


def unsupported_version(requested: Any) -> McpError:
    data = {"supported": list(SUPPORTED), "requested": requested}
    return McpError(UNSUPPORTED_VERSION, "Unsupported protocol version", data, status=400)


def header_mismatch(message: str) -> McpError:
    return McpError(HEADER_MISMATCH, f"Header mismatch: {message}", status=400)


def missing_capability(required: dict[str, Any]) -> McpError:
    return McpError(MISSING_CAPABILITY, "Missing required client capability", {"requiredCapabilities": required}, 400)


@dataclass
class Request:
    """One JSON-RPC message as the endpoint took it: ``id`` (None: a notification),
    ``method``, ``params`` (always a dict), and, for a response the client sends (a
    2025-11-25 client answering ``elicitation/create``), ``result`` or ``error``."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    id: Any = None
    is_notification: bool = False
    result: Any = None
    is_response: bool = False


def envelope(payload: Any) -> Request:
    """The message, checked as JSON-RPC 2.0 with MCP's rules (an id is a string or an
    integer, never null); McpError -32600 otherwise."""
    if not isinstance(payload, dict):
        raise McpError(
            INVALID_REQUEST, "A message must be one JSON-RPC object (batches are not part of MCP)", status=400
        )
    if payload.get("jsonrpc") != "2.0":
        raise McpError(INVALID_REQUEST, '"jsonrpc" must be exactly "2.0"', status=400)
    has_id = "id" in payload
    request_id = payload.get("id")
    if has_id and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        raise McpError(INVALID_REQUEST, '"id" must be a string or an integer', status=400)
    if "method" not in payload and has_id and ("result" in payload or "error" in payload):
        result = payload.get("result") if "result" in payload else {"error": payload.get("error")}
        return Request("", id=request_id, result=result, is_response=True)
    method = payload.get("method")
    if not isinstance(method, str) or not method:
        raise McpError(INVALID_REQUEST, '"method" must be a string', status=400)
    params = payload.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise McpError(INVALID_PARAMS, '"params" must be an object', status=400)
    return Request(method, params, request_id, is_notification=not has_id)


def meta(params: dict[str, Any]) -> dict[str, Any]:
    found = params.get("_meta")
    return found if isinstance(found, dict) else {}


def header_value(raw: str) -> str:
    """A mirrored header's value, its Base64 sentinel (``=?base64?...?=``) decoded."""
    if raw.startswith("=?base64?") and raw.endswith("?=") and len(raw) >= 11:
        try:
            return base64.b64decode(raw[9:-2], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise header_mismatch("a Base64-encoded header value cannot be decoded") from None
    return raw


#: The methods whose ``Mcp-Name`` header mirrors a field of the params.
NAMED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
NAMED_TASKS = {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


def check_modern(request: Request, headers: dict[str, str]) -> dict[str, Any]:
    """A 2026-07-28 request's required ``_meta`` and its mirrored headers, checked; its
    client capabilities. ``headers``: the request's, by lower-case name."""
    request_meta = meta(request.params)
    version = request_meta.get(META_VERSION)
    if version is None:
        raise McpError(INVALID_PARAMS, f"_meta[{META_VERSION!r}] is required", status=400)
    if version != headers.get("mcp-protocol-version"):
        raise header_mismatch(f"MCP-Protocol-Version does not match _meta[{META_VERSION!r}] ({str(version)[:40]!r})")
    if version not in SUPPORTED:
        raise unsupported_version(version)
    capabilities = request_meta.get(META_CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise McpError(INVALID_PARAMS, f"_meta[{META_CAPABILITIES!r}] is required (an object)", status=400)
    method_header = headers.get("mcp-method")
    if method_header is None:
        raise header_mismatch("the Mcp-Method header is required")
    if method_header != request.method:
        raise header_mismatch(f"Mcp-Method {method_header[:60]!r} does not match the body's {request.method[:60]!r}")
    source = NAMED.get(request.method) or NAMED_TASKS.get(request.method)
    if source is not None:
        name = headers.get("mcp-name")
        if name is None:
            raise header_mismatch("the Mcp-Name header is required for " + request.method)
        if header_value(name) != request.params.get(source):
            raise header_mismatch(f"Mcp-Name does not match params.{source}")
    return capabilities


def complete(result: dict[str, Any], version: str) -> dict[str, Any]:
    """A result of the request's revision: ``resultType`` on every 2026-07-28 result."""
    if version == MODERN and "resultType" not in result:
        return {"resultType": "complete", **result}
    return result


def response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}
