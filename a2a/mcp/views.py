"""The MCP endpoint over Streamable HTTP (one URL per agent, ``<agent>/mcp``) and its
protected resource metadata (RFC 9728).

A request is checked as the transport says, in this order: its ``Origin`` (403 for a
browser page of another site: DNS rebinding), the method (POST; DELETE ends a 2025-11-25
session; GET is 405, no stream is offered outside a request), the body (size, JSON), the
caller (the agent's DRF authentication classes, as its A2A routes: 401 names the
authorization server's metadata when the project names one), then the revision: a
``MCP-Protocol-Version`` of 2026-07-28 with its ``_meta`` and mirrored headers
(:func:`a2a.mcp.wire.check_modern`), ``initialize`` or a 2025-11-25 session, anything else
the spec's error. Every failure is a JSON-RPC error with its HTTP status, never a 500.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from a2a import auth
from a2a.agents import agents
from a2a.conf import a2a_settings
from a2a.http.common import call_context, event_stream, request_agent
from a2a.mcp import state, streams
from a2a.mcp.calls import Call, mcp_error
from a2a.mcp.methods import METHODS
from a2a.mcp.wire import (
    LEGACY,
    META_VERSION,
    METHOD_NOT_FOUND,
    MODERN,
    PARSE_ERROR,
    SUPPORTED,
    McpError,
    Request,
    check_modern,
    complete,
    envelope,
    header_mismatch,
    meta,
    response,
    unsupported_version,
)
from a2a.protocol import limits
from a2a.protocol.errors import A2AError
from a2a.service.mcp_endpoint import mcp_enabled, mcp_url

SESSION_HEADER = "Mcp-Session-Id"


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(orjson.dumps(body), content_type="application/json", status=status, headers=headers)


def _error(error: McpError, request_id: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
    return _json(error.body(request_id), error.status, headers)


def origin_allowed(value: str) -> bool:
    """Whether a browser page of origin ``value`` may call: one of
    ``A2A_MCP_ALLOWED_ORIGINS``, or one whose host ``ALLOWED_HOSTS`` allows."""
    if value.rstrip("/") in (o.rstrip("/") for o in a2a_settings.MCP_ALLOWED_ORIGINS):
        return True
    host, _port = split_domain_port(urlsplit(value).netloc)
    allowed = list(settings.ALLOWED_HOSTS) or (["localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    return bool(host) and validate_host(host, allowed)


def _challenge(request: HttpRequest) -> str:
    challenge = auth.challenge(request_agent(request))
    if a2a_settings.MCP_AUTHORIZATION_SERVERS:
        where = request.build_absolute_uri(metadata_path(request_agent(request).path("mcp")))
        challenge = f'Bearer resource_metadata="{where}"' + (f", {challenge}" if challenge else "")
    return challenge


@csrf_exempt
async def endpoint(request: HttpRequest) -> HttpResponseBase:
    """The agent's MCP endpoint (both revisions)."""
    agent = request_agent(request)
    if not mcp_enabled(agent):
        return _json({"error": {"code": 404, "message": "This agent does not serve MCP (A2A_MCP)"}}, 404)
    origin = request.META.get("HTTP_ORIGIN")
    if origin is not None and not origin_allowed(origin):
        return _error(McpError(-32600, f"Origin {origin[:100]!r} is not allowed", status=403))
    if request.method not in ("POST", "DELETE"):
        return _error(
            McpError(-32600, f"{request.method} is not allowed: POST a JSON-RPC message", status=405),
            headers={"Allow": "POST, DELETE"},
        )
    try:
        body = limits.read_body(request) if request.method == "POST" else b""
        if request.method == "POST":
            limits.check_media_type(request)
    except A2AError as exc:
        return _error(McpError(-32600, str(exc), status=exc.http_status))
    try:
        caller = await auth.authenticate(request, agent)
    except auth.AuthenticationRequiredError as exc:
        return _error(McpError(-32600, str(exc), status=401), headers={"WWW-Authenticate": _challenge(request)})
    ctx = call_context(request, caller, "mcp")
    headers = {k.lower(): v for k, v in request.headers.items()}
    if request.method == "DELETE":
        return await _end_session(headers, ctx.caller, ctx.agent_name)
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return _error(McpError(PARSE_ERROR, f"Parse error: {exc}", status=400))
    request_id = payload.get("id") if isinstance(payload, dict) else None
    try:
        message = envelope(payload)
        call = await _call(message, headers, ctx)
        return await _answer(message, call)
    except McpError as exc:
        return _error(exc, request_id if isinstance(request_id, str | int) else None)


async def _end_session(headers: dict[str, str], caller: str, agent: str) -> HttpResponse:
    session = headers.get(SESSION_HEADER.lower())
    if session is None:
        return _error(
            McpError(-32600, "DELETE ends a session: name it in Mcp-Session-Id", status=405),
            headers={"Allow": "POST, DELETE"},
        )
    if state.read_session(session, caller, agent) is None or await state.session_ended(session):
        return _error(McpError(-32600, "Unknown session", status=404))
    await state.end_session(session)
    return HttpResponse(status=204)


async def _call(message: Request, headers: dict[str, str], ctx: Any) -> Call:
    """The request's revision and client capabilities, checked (the transport's
    "Server Validation"; a 2025-11-25 request's session)."""
    version = headers.get("mcp-protocol-version")
    stated = meta(message.params).get(META_VERSION)
    if version in SUPPORTED and stated is not None and stated != version:  # (an unknown one: -32022 below)
        raise header_mismatch(f"MCP-Protocol-Version does not match _meta[{META_VERSION!r}] ({str(stated)[:40]!r})")
    if message.method == "initialize":
        caps = message.params.get("capabilities")
        return Call(ctx, LEGACY, message.params, caps if isinstance(caps, dict) else {}, message.id)
    if version == MODERN or (version is None and META_VERSION in meta(message.params) and not message.is_response):
        if message.is_notification:
            return Call(ctx, MODERN, message.params, {}, None)
        return Call(ctx, MODERN, message.params, check_modern(message, headers), message.id)
    session = headers.get(SESSION_HEADER.lower())
    if version == LEGACY or (version is None and session is not None):
        if session is None:
            raise McpError(-32600, "A 2025-11-25 request needs its Mcp-Session-Id (send initialize first)", status=400)
        caps = state.read_session(session, ctx.caller, ctx.agent_name)
        if caps is None or await state.session_ended(session):
            raise McpError(-32600, "Unknown or ended session: initialize again", status=404)
        return Call(ctx, LEGACY, message.params, caps, message.id, session)
    if version is None:
        raise header_mismatch("the MCP-Protocol-Version header is required")
    raise unsupported_version(version[:40])


async def _answer(message: Request, call: Call) -> HttpResponseBase:
    if message.is_response:  # a 2025-11-25 client's answer to an elicitation/create
        await streams.take_response(call, message)
        return HttpResponse(status=202)
    if message.is_notification:
        await streams.notified(call, message)
        return HttpResponse(status=202)
    method = METHODS[call.version].get(message.method)
    if method is None:
        error = McpError(METHOD_NOT_FOUND, f"Method not found: {message.method[:100]}")
        error.status = 404 if call.version == MODERN else 200
        raise error
    if message.method == "tools/call" and streams.streams(call):
        return event_stream(await streams.call_stream(call))
    try:
        result = await method(call)
    except Exception as exc:
        raise mcp_error(exc, f"MCP {message.method}") from None
    headers = None
    if message.method == "initialize":
        headers = {SESSION_HEADER: state.session_id(call.ctx.caller, call.ctx.agent_name, call.capabilities)}
    return _json(response(message.id, complete(result, call.version)), headers=headers)


# --- RFC 9728 ---------------------------------------------------------------------------------

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_path(resource_path: str) -> str:
    """Where the metadata of the resource at ``resource_path`` is (RFC 9728 3.1: the
    well-known prefix inserted before the path)."""
    return WELL_KNOWN + resource_path


@csrf_exempt
async def protected_resource(request: HttpRequest, resource: str = "") -> HttpResponse:
    """The protected resource metadata of an agent's MCP endpoint: the authorization
    servers of ``A2A_MCP_AUTHORIZATION_SERVERS``; 404 without them or for another path."""
    path = "/" + resource
    found = next((a for a in agents().values() if a.path("mcp") == path and mcp_enabled(a)), None)
    if found is None or not a2a_settings.MCP_AUTHORIZATION_SERVERS:
        return _json({"error": {"code": 404, "message": "No protected resource here"}}, 404)
    document = {
        "resource": mcp_url(found, request),
        "authorization_servers": list(a2a_settings.MCP_AUTHORIZATION_SERVERS),
        "bearer_methods_supported": ["header"],
        "resource_name": str(found.settings.AGENT_NAME or found.name),
    }
    return _json(document, headers={"Cache-Control": "public, max-age=3600"})
