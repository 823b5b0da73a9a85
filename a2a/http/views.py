"""HTTP views: thin. Each hands the request to a binding and returns its bytes."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from a2a import auth
from a2a.conf import a2a_settings
from a2a.http import jsonrpc, media
from a2a.http.common import (
    call_context,
    error_document,
    event_stream,
    later_response,
    public_url,
    request_agent,
    requested_version,
)
from a2a.http.discovery import catalog_link
from a2a.protocol import V03, dialect_for, limits
from a2a.protocol.errors import A2AError, InvalidRequestError
from a2a.push import tokens
from a2a.service import card

JSON = media.JSON


@csrf_exempt
async def jsonrpc_endpoint(request: HttpRequest) -> HttpResponseBase:
    """POST a JSON-RPC 2.0 request (or batch) here. The answer is ``application/json``
    (spec 9.1), or ``application/a2a+json`` when the ``Accept`` header prefers it."""
    # (META, not request.headers: building that costs more than the rest of this view)
    content_type = media.preferred(request.META.get("HTTP_ACCEPT"), (JSON, media.A2A_JSON))

    def refusal(error: A2AError, status: int, headers: dict[str, str] | None = None) -> HttpResponse:
        body = orjson.dumps(jsonrpc.error_response(V03, None, error))
        return HttpResponse(body, content_type=content_type, status=status, headers=headers)

    if request.method != "POST":
        error = InvalidRequestError(f"{request.method} is not allowed here: POST a JSON-RPC request")
        return refusal(error, 405, {"Allow": "POST"})
    try:
        body = limits.read_body(request)
        limits.check_media_type(request)  # 415: not a JSON body (a cross-site "simple request")
    except A2AError as error:  # over A2A_MAX_BODY_BYTES (413), an unreadable Content-Length (400), not JSON (415)
        return refusal(error, error.http_status)
    try:
        caller = await auth.authenticate(request, request_agent(request))
    except auth.AuthenticationRequiredError as exc:
        return refusal(exc, 401, {"WWW-Authenticate": auth.challenge(request_agent(request))})
    payload = await jsonrpc.handle(body, requested_version(request), call_context(request, caller, "jsonrpc"))
    if payload is None:
        return HttpResponse(status=204)
    if isinstance(payload, bytes):
        return HttpResponse(payload, content_type=content_type)
    if isinstance(payload, jsonrpc.Later):
        return later_response(payload.body, content_type)
    return event_stream(payload)


def _get_only(request: HttpRequest, what: str) -> HttpResponse | None:
    """A 405 for a request to a read-only document that is not a GET or HEAD, else None."""
    if request.method in ("GET", "HEAD"):
        return None
    error = InvalidRequestError(f"{request.method} is not allowed here: GET the {what}")
    return error_document(error, 405, {"Allow": "GET, HEAD"})


def _cached(
    request: HttpRequest,
    document: dict[str, Any],
    vary: str,
    content_type: str = JSON,
    headers: dict[str, str] | None = None,
) -> HttpResponse:
    """``document`` with its ETag and public caching headers (spec 8.6), and ``headers``;
    304 when the caller has it."""
    body = orjson.dumps(document)
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    cache = {"ETag": etag, "Cache-Control": f"public, max-age={a2a_settings.CARD_MAX_AGE}", "Vary": vary}
    headers = {**(headers or {}), **cache}
    if etag in request.headers.get("If-None-Match", ""):
        return HttpResponse(status=304, headers=headers)
    return HttpResponse(body, content_type=content_type, headers=headers)


@csrf_exempt  # read-only: any other method gets 405, not CSRF's 403
async def agent_card(request: HttpRequest) -> HttpResponse:
    """The Agent Card, with the HTTP caching headers of spec 8.6; GET and HEAD only.
    ``application/json``, or ``application/a2a-agent-card+json`` to a client that asks
    for it; a ``Link`` to the AI Catalog (``rel="ai-catalog"``)."""
    refused = _get_only(request, "agent card")
    if refused is not None:
        return refused
    try:
        version = dialect_for(requested_version(request)).version
    except A2AError as exc:
        return error_document(exc, 400)
    public = card.build_card(
        public_url(request, "jsonrpc"), version=version, rest=public_url(request, "rest"), agent=request_agent(request)
    )
    content_type = media.preferred(request.headers.get("Accept"), (JSON, media.AGENT_CARD_JSON))
    link = catalog_link(request)  # where the project's other agents are listed
    return _cached(request, public, "A2A-Version, Host, Accept", content_type, {"Link": link} if link else None)


@csrf_exempt  # read-only, as the card
async def jwks(request: HttpRequest) -> HttpResponse:
    """The agent's JWK Set (``/.well-known/jwks.json``): the public keys that check its
    card's signatures and its push notifications' JWTs (:func:`a2a.push.tokens.jwk_set`);
    404 when the agent has no signing key."""
    refused = _get_only(request, "JWK Set")
    if refused is not None:
        return refused
    key_set = tokens.jwk_set(request_agent(request))
    if key_set is None:
        message = "This agent has no signing key (A2A_CARD_SIGNING_KEY), so no JWK Set"
        body = {"error": {"code": 404, "status": "NOT_FOUND", "message": message}}
        return HttpResponse(orjson.dumps(body), content_type=JSON, status=404)
    return _cached(request, key_set, "Host", "application/jwk-set+json")
