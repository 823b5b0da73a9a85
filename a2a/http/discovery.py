"""The discovery catalogs' views: ``/.well-known/ai-catalog.json`` (the AI Catalog) and
``/.well-known/api-catalog`` (RFC 9727), both built by :mod:`a2a.service.discovery`
from the listed agents' URLs. GET and HEAD only; with ``A2A_CATALOG_AUTHENTICATION``
a caller ``A2A_AUTHENTICATION_CLASSES`` does not accept gets 401 and a
``WWW-Authenticate`` challenge."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

import orjson
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.views.decorators.csrf import csrf_exempt

from a2a import auth
from a2a.agents import Agent
from a2a.conf import a2a_settings
from a2a.http.common import error_document, origin
from a2a.protocol.errors import InvalidRequestError
from a2a.service import discovery
from a2a.service.mcp_endpoint import mcp_url

JSON = "application/json"


def agent_url(request: HttpRequest, agent: Agent, route: str) -> str:
    """The absolute URL of the route ``route`` (``"agent-card"``, ``"jsonrpc"``) of ``agent``."""
    return origin(request) + agent.path(route)


def listings(request: HttpRequest) -> list[discovery.Listing]:
    """The listed agents with their card's and endpoint's absolute URLs, as this request reaches them."""
    return [
        discovery.Listing(
            agent,
            agent_url(request, agent, "agent-card"),
            agent_url(request, agent, "jsonrpc"),
            mcp_url(agent, request),
        )
        for agent in discovery.listed_agents()
    ]


def publisher(request: HttpRequest) -> str:
    """The AI Catalog entries' publisher: ``A2A_CATALOG_PUBLISHER``, else the host the
    agents are served from with its port unless the scheme's default (two deployments on
    one host are two publishers: their entries must not share identifiers)."""
    if a2a_settings.CATALOG_PUBLISHER:
        return a2a_settings.CATALOG_PUBLISHER
    parts = urlsplit(origin(request))
    host = (parts.hostname or "localhost").lower()
    host = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    return host if parts.port in (None, default_port) else f"{host}:{parts.port}"


def catalog_link(request: HttpRequest) -> str | None:
    """The ``Link`` header value that names the AI Catalog (``rel="ai-catalog"``, the
    draft's link relation), for the responses a client may start from (the Agent
    Cards, the API catalog); None when the project's URLs do not route it."""
    try:
        path = reverse("a2a:ai-catalog")
    except NoReverseMatch:
        return None
    return f'<{origin(request)}{path}>; rel="ai-catalog"; type="{discovery.AI_CATALOG_MEDIA_TYPE}"'


async def _refused(request: HttpRequest) -> HttpResponse | None:
    """The answer to a request the catalogs do not serve (405, 401), else None."""
    if request.method not in ("GET", "HEAD"):
        error = InvalidRequestError(f"{request.method} is not allowed here: GET the catalog")
        return error_document(error, 405, {"Allow": "GET, HEAD"})
    if a2a_settings.CATALOG_AUTHENTICATION:
        try:
            await auth.authenticate(request)
        except auth.AuthenticationRequiredError as exc:
            return error_document(exc, 401, {"WWW-Authenticate": auth.challenge()})
    return None


def _document(
    request: HttpRequest, document: dict[str, Any], content_type: str, headers: dict[str, str]
) -> HttpResponse:
    body = orjson.dumps(document)
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    private = a2a_settings.CATALOG_AUTHENTICATION
    headers = {
        **headers,
        "ETag": etag,
        "Cache-Control": "private, no-cache" if private else f"public, max-age={a2a_settings.CARD_MAX_AGE}",
        "Vary": "Host, Authorization" if private else "Host",
    }
    if etag in request.headers.get("If-None-Match", ""):
        return HttpResponse(status=304, headers=headers)
    return HttpResponse(body, content_type=content_type, headers=headers)  # a HEAD's body is the server's to drop


@csrf_exempt  # read-only: any other method gets 405, not CSRF's 403
async def ai_catalog(request: HttpRequest) -> HttpResponse:
    """The AI Catalog of the listed agents (``application/ai-catalog+json``)."""
    if refused := await _refused(request):
        return refused
    document = discovery.ai_catalog(listings(request), publisher(request))
    return _document(request, document, discovery.AI_CATALOG_MEDIA_TYPE, {})


@csrf_exempt
async def api_catalog(request: HttpRequest) -> HttpResponse:
    """The RFC 9727 API catalog of the listed agents, with its ``Link`` header
    (``rel="api-catalog"``), which a HEAD answers with (section 2)."""
    if refused := await _refused(request):
        return refused
    anchor = origin(request) + reverse("a2a:api-catalog")
    links = [f'<{anchor}>; rel="api-catalog"', catalog_link(request)]
    link = {"Link": ", ".join(value for value in links if value)}
    return _document(request, discovery.api_catalog(anchor, listings(request)), discovery.API_CATALOG_MEDIA_TYPE, link)
