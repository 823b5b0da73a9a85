"""Include in the project's root URLconf: ``path("", include("a2a.urls"))``: the default
agent's routes. The other agents of ``A2A_AGENTS`` are :mod:`a2a.urls.agents`'s."""

from collections.abc import Callable
from typing import Any

from django.urls import URLPattern, URLResolver, include, path, re_path

from a2a.http import browse, discovery, files, openapi, rest, views
from a2a.http import health as ops_views
from a2a.mcp import views as mcp_views

app_name = "a2a"


def agent_patterns(wrap: Callable[[Any], Any]) -> list[URLPattern | URLResolver]:
    """One agent's routes (its card, both bindings in both versions, SSE, the browsable
    page, OpenAPI), each view passed through ``wrap`` (:func:`a2a.http.common.for_agent`
    for the agents of :mod:`a2a.urls.agents`)."""
    browse_patterns = [
        path("", wrap(browse.agent), name="agent"),
        path("stream", wrap(browse.stream), name="stream"),
        path("cancel", wrap(browse.cancel), name="cancel"),
        path("files/<str:task_id>/<str:key>", wrap(browse.file), name="file"),  # the task view's links
    ]
    patterns: list[URLPattern | URLResolver] = [
        path(".well-known/agent-card.json", wrap(views.agent_card), name="agent-card"),
        path(".well-known/agent.json", wrap(views.agent_card)),  # the pre-0.3 location
        # The public keys of the card's signatures and the push notifications' JWTs (a2a.push.tokens).
        path(".well-known/jwks.json", wrap(views.jwks), name="jwks"),
        # The browsable agent (a2a/http/browse.py, A2A_BROWSABLE_AGENT): a namespace of its own
        # ("a2a:browse"), so A2A_DIRECT_ASGI never takes it past the session and CSRF middleware.
        path("a2a/browse/", include((browse_patterns, "browse"))),
        path("a2a/", wrap(views.jsonrpc_endpoint), name="jsonrpc"),
        path("a2a", wrap(views.jsonrpc_endpoint)),
        # MCP over Streamable HTTP (a2a/mcp/, A2A_MCP): the same agent, its tools its skills.
        path("mcp", wrap(mcp_views.endpoint), name="mcp"),
        # Offloaded file parts (a2a.core.files), served to their task's owner only.
        path("a2a/files/<str:task_id>/<str:key>", wrap(files.download), name="file"),
        # HTTP+JSON (REST), spec section 11; v0.3 clients put "/v1" before each path. The routes
        # are a2a.http.rest.ROUTES, which the OpenAPI description is generated from too.
        path("a2a/rest", wrap(rest.get_extended_card), name="rest"),  # the interface URL the card names
        path("a2a/rest/openapi.json", wrap(openapi.openapi_json), name="rest-openapi"),
        *(re_path(route.regex, wrap(route.view), name=route.name) for route in rest.ROUTES),
    ]
    # v1.0 tenant-scoped paths (a2a.proto: "/{tenant}/tasks/{id}", ...): the same views, the
    # tenant scoping the request's tasks. Tried after the paths above, so "v1" and the
    # first segments of those paths ("tasks", "message:send", ...) are never a tenant.
    patterns += [re_path(route.tenant_regex, wrap(route.view)) for route in rest.ROUTES]
    return patterns


urlpatterns: list[URLPattern | URLResolver] = [
    # Operations: health (200/503 JSON) and Prometheus metrics (a2a/http/health.py).
    path("healthz", ops_views.healthz, name="healthz"),
    path("metrics", ops_views.metrics, name="metrics"),
    # Discovery of every listed agent (a2a/http/discovery.py): the AI Catalog and RFC 9727's API catalog.
    path(".well-known/ai-catalog.json", discovery.ai_catalog, name="ai-catalog"),
    path(".well-known/api-catalog", discovery.api_catalog, name="api-catalog"),
    # RFC 9728: the MCP endpoints' protected resource metadata (A2A_MCP_AUTHORIZATION_SERVERS).
    re_path(r"^\.well-known/oauth-protected-resource/(?P<resource>.+)$", mcp_views.protected_resource),
    *agent_patterns(lambda view: view),
]
