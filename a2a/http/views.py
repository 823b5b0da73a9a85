"""HTTP views: thin. Each hands the request to a binding and returns its bytes."""

from __future__ import annotations

import hashlib

import orjson
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from a2a import auth
from a2a.conf import a2a_settings
from a2a.http import jsonrpc
from a2a.http.common import call_context, event_stream, public_url, request_agent, requested_version
from a2a.protocol import V03, dialect_for, limits
from a2a.protocol.errors import A2AError, InvalidRequestError
from a2a.service import card

JSON = "application/json"


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
        caller = await auth.authenticate(request, request_agent(request))
    except auth.AuthenticationRequiredError as exc:
        return HttpResponse(
            orjson.dumps({"jsonrpc": "2.0", "id": None, "error": V03.render_error(exc)}),
            content_type=JSON,
            status=401,
            headers={"WWW-Authenticate": auth.challenge(request_agent(request))},
        )
    payload = await jsonrpc.handle(body, requested_version(request), call_context(request, caller, "jsonrpc"))
    if payload is None:
        return HttpResponse(status=204)
    if isinstance(payload, bytes):
        return HttpResponse(payload, content_type=JSON)
    return event_stream(payload)


@csrf_exempt  # read-only: any other method gets 405, not CSRF's 403
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
    public = card.build_card(
        public_url(request, "jsonrpc"), version=version, rest=public_url(request, "rest"), agent=request_agent(request)
    )
    body = orjson.dumps(public)
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {
        "ETag": etag,
        "Cache-Control": f"public, max-age={a2a_settings.CARD_MAX_AGE}",
        "Vary": "A2A-Version, Host",
    }
    if etag in request.headers.get("If-None-Match", ""):
        return HttpResponse(status=304, headers=headers)
    return HttpResponse(body, content_type=JSON, headers=headers)
