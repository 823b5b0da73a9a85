"""What the HTTP views and both bindings share: the requested version, SSE responses,
a document's error answer, the agent a route names, the public URLs the card
advertises, the call context."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import orjson
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from a2a.agents import DEFAULT_AGENT, Agent, agents, default_agent
from a2a.conf import a2a_settings
from a2a.core import tracing
from a2a.handlers.credentials import credential_headers
from a2a.protocol import V03
from a2a.protocol.errors import A2AError
from a2a.service.context import CallContext


def requested_version(request: HttpRequest) -> str | None:
    """The ``A2A-Version`` service parameter: header first, then query parameter.

    Read from ``META`` (and ``GET`` only when there is a query string): building
    ``request.headers`` and ``request.GET`` cost a third of a ``GetTask``'s view."""
    meta = request.META
    return meta.get("HTTP_A2A_VERSION") or (request.GET.get("A2A-Version") if meta.get("QUERY_STRING") else None)


def later_response(body: Callable[[], Coroutine[Any, Any, bytes]], content_type: str) -> StreamingHttpResponse:
    """A response whose head goes now and whose one body chunk, ``body()``, when it is
    known (a held long-poll): streamed, so the middleware chain's worker thread lets go of
    it at once, and a client that leaves cancels the wait (a2a/asgi.py)."""

    async def chunks() -> AsyncIterator[bytes]:
        yield await body()

    return StreamingHttpResponse(chunks(), content_type=content_type, headers={"Cache-Control": "no-store"})


def error_document(error: A2AError, status: int, headers: dict[str, str] | None = None) -> HttpResponse:
    """The error answer of a document's URL (the Agent Card, the JWK Set, the catalogs):
    ``{"error": ...}``, the error object as JSON-RPC v0.3 renders it."""
    body = orjson.dumps({"error": V03.render_error(error)})
    return HttpResponse(body, content_type="application/json", status=status, headers=headers)


def event_stream(events: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """An SSE response that no proxy buffers or caches."""
    return StreamingHttpResponse(
        events,
        content_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


#: Host header values that passed ``ALLOWED_HOSTS`` (checking one costs more than
#: serving a GetTask's JSON); cleared when a setting it depends on changes.
_allowed_hosts: set[str] = set()


def _forget_hosts(*, setting: str, **kwargs: Any) -> None:
    if setting in ("ALLOWED_HOSTS", "DEBUG", "USE_X_FORWARDED_HOST", "USE_X_FORWARDED_PORT"):
        _allowed_hosts.clear()


setting_changed.connect(_forget_hosts)


def checked_host(request: HttpRequest) -> str:
    """``request.get_host()`` (raising ``DisallowedHost`` for a host ``ALLOWED_HOSTS``
    refuses), with the hosts that passed remembered: the check is per host, not per
    request."""
    host: str = request._get_raw_host()  # type: ignore[attr-defined]  # private Django API, not in django-stubs
    if host not in _allowed_hosts:
        request.get_host()
        if len(_allowed_hosts) < 1024:
            _allowed_hosts.add(host)
    return host


def origin(request: HttpRequest) -> str:
    """The public base URL of the request: ``A2A_PUBLIC_URL``, else its scheme and host."""
    base = a2a_settings.PUBLIC_URL
    return base.rstrip("/") if base else f"{request.scheme}://{checked_host(request)}"


#: The request attribute the agent of an ``a2a.urls.agents`` route is kept in.
_AGENT_ATTR = "a2a_agent"

AsyncView = Callable[..., Coroutine[Any, Any, HttpResponseBase]]


def request_agent(request: HttpRequest) -> Agent:
    """The agent the request's route names (:func:`for_agent`); the default agent on
    ``a2a.urls``'s routes."""
    agent: Agent | None = getattr(request, _AGENT_ATTR, None)
    return default_agent() if agent is None else agent


def for_agent(view: AsyncView) -> AsyncView:
    """``view`` serving the agent its route's ``<agent>`` names (``a2a.urls.agents``):
    a 404 for a name ``A2A_AGENTS`` does not configure, and for "default", whose routes
    are ``a2a.urls``'s (one URL per agent)."""

    @functools.wraps(view)
    async def wrapped(request: HttpRequest, agent: str, **kwargs: Any) -> HttpResponseBase:
        found = agents().get(agent) if agent != DEFAULT_AGENT else None
        if found is None:
            body = {"error": {"code": 404, "status": "NOT_FOUND", "message": f"No agent named {agent!r} here"}}
            return HttpResponse(orjson.dumps(body), content_type="application/json", status=404)
        setattr(request, _AGENT_ATTR, found)
        return await view(request, **kwargs)

    return wrapped


def public_url(request: HttpRequest, route: str) -> str:
    """The absolute URL of one of the request's agent's routes (``"jsonrpc"``, ``"rest"``),
    as its card advertises it."""
    return origin(request) + request_agent(request).path(route)


def call_context(
    request: HttpRequest, caller: str, binding: str, version: str = "1.0", *, tenant: str = "", method: str = ""
) -> CallContext:
    """The service layer's context of this request (the binding sets the version it
    parsed, and the tenant and method it read); with tracing on, the trace context of
    the request's W3C ``traceparent`` header."""
    meta = request.META  # (not request.headers: building it costs more than the rest of this)
    raw = meta.get("HTTP_A2A_EXTENSIONS") or meta.get("HTTP_X_A2A_EXTENSIONS") or ""
    extensions = tuple(uri.strip() for uri in raw.split(",") if uri.strip()) if raw else ()
    trace = tracing.incoming(meta.get("HTTP_TRACEPARENT"), meta.get("HTTP_TRACESTATE"))
    credentials = credential_headers(lambda name: meta.get("HTTP_" + name.upper().replace("-", "_")))
    return CallContext(
        caller=caller,
        version=version,
        binding=binding,
        origin=origin(request),
        extensions=extensions,
        tenant=tenant,
        method=method,
        trace=trace,
        credentials=tuple(credentials.items()),
        agent_name=request_agent(request).name,
        last_event_id=meta.get("HTTP_LAST_EVENT_ID", ""),
    )
