"""HTTP views: thin. Each hands the request to a binding and returns its bytes."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from . import auth, card, limits
from .bindings import jsonrpc
from .conf import a2a_settings
from .protocol import V03, Dialect, dialect_for
from .protocol.errors import A2AError, ExtendedAgentCardNotConfiguredError, InvalidRequestError

JSON = "application/json"


def requested_version(request: HttpRequest) -> str | None:
    """The ``A2A-Version`` service parameter: header first, then query parameter.

    Read from ``META`` (and ``GET`` only when there is a query string): building
    ``request.headers`` and ``request.GET`` cost a third of a ``GetTask``'s view."""
    meta = request.META
    return meta.get("HTTP_A2A_VERSION") or (request.GET.get("A2A-Version") if meta.get("QUERY_STRING") else None)


@csrf_exempt
async def jsonrpc_endpoint(request: HttpRequest) -> HttpResponseBase:
    """POST a JSON-RPC 2.0 request (or batch) here."""
    if request.method != "POST":
        error = InvalidRequestError(f"{request.method} is not allowed here: POST a JSON-RPC request")
        return HttpResponse(
            orjson.dumps({"jsonrpc": "2.0", "id": None, "error": V03.render_error(error)}),
            content_type=JSON,
            status=405,
            headers={"Allow": "POST"},
        )
    try:
        body = limits.read_body(request)
        limits.check_media_type(request)  # 415: not a JSON body (a cross-site "simple request")
    except A2AError as error:  # over A2A_MAX_BODY_BYTES (413), an unreadable Content-Length (400), not JSON (415)
        return HttpResponse(
            orjson.dumps({"jsonrpc": "2.0", "id": None, "error": V03.render_error(error)}),
            content_type=JSON,
            status=error.http_status,
        )
    try:
        await auth.authenticate(request)
    except auth.AuthenticationRequiredError as exc:
        return HttpResponse(
            orjson.dumps({"jsonrpc": "2.0", "id": None, "error": V03.render_error(exc)}),
            content_type=JSON,
            status=401,
            headers={"WWW-Authenticate": auth.challenge()},
        )
    payload = await jsonrpc.handle(body, requested_version(request))
    if payload is None:
        return HttpResponse(status=204)
    if isinstance(payload, bytes):
        return HttpResponse(payload, content_type=JSON)
    return event_stream(payload)


def event_stream(events: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """An SSE response that no proxy buffers or caches."""
    return StreamingHttpResponse(
        events,
        content_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def public_url(request: HttpRequest, name: str) -> str:
    """The absolute URL of a named A2A route, as the card advertises it."""
    path = reverse(name)
    base = a2a_settings.PUBLIC_URL
    return f"{base.rstrip('/')}{path}" if base else request.build_absolute_uri(path)


def extended_card(dialect: Dialect) -> dict[str, Any]:
    """GetExtendedAgentCard: the extended card, for authenticated callers only."""
    request = auth.current_request.get()
    if not card.extended_card_available() or not auth.caller.get() or request is None:
        raise ExtendedAgentCardNotConfiguredError(
            "This agent has no extended agent card"
            if a2a_settings.EXTENDED_CARD is None
            else "The extended agent card is only served to authenticated callers"
        )
    return card.build_extended_card(
        public_url(request, "a2a:jsonrpc"), version=dialect.version, rest=public_url(request, "a2a:rest")
    )


async def agent_card(request: HttpRequest) -> HttpResponse:
    """The Agent Card, with the HTTP caching headers of spec 8.6; GET and HEAD only."""
    if request.method not in ("GET", "HEAD"):
        error = InvalidRequestError(f"{request.method} is not allowed here: GET the agent card")
        return HttpResponse(
            orjson.dumps({"error": V03.render_error(error)}),
            content_type=JSON,
            status=405,
            headers={"Allow": "GET, HEAD"},
        )
    try:
        version = dialect_for(requested_version(request)).version
    except A2AError as exc:
        return HttpResponse(orjson.dumps({"error": V03.render_error(exc)}), content_type=JSON, status=400)
    public = card.build_card(public_url(request, "a2a:jsonrpc"), version=version, rest=public_url(request, "a2a:rest"))
    body = orjson.dumps(public)
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {
        "ETag": etag,
        "Cache-Control": f"public, max-age={int(a2a_settings.CARD_MAX_AGE)}",
        "Vary": "A2A-Version, Host",
    }
    if etag in request.headers.get("If-None-Match", ""):
        return HttpResponse(status=304, headers=headers)
    return HttpResponse(body, content_type=JSON, headers=headers)
