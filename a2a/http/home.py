"""A front page for a project's ``/``, opt-in: ``path("", include("a2a.urls.home"))``.
It links each listed agent (its card, its JSON-RPC endpoint, its page), the admin and the
AI Catalog; the admin's "View site" leads there."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from a2a.conf import a2a_settings, project_name
from a2a.service.discovery import listed_agents
from a2a.service.mcp_endpoint import mcp_url


def home(request: HttpRequest) -> HttpResponse:
    """The agents the catalog lists (none to a visitor who is not staff while
    ``A2A_CATALOG_AUTHENTICATION`` keeps the catalog private), the admin and the catalog."""
    user = getattr(request, "user", None)
    private = a2a_settings.CATALOG_AUTHENTICATION and not getattr(user, "is_staff", False)
    served = []
    for agent in [] if private else listed_agents():
        try:
            routes = {route: agent.path(route) for route in ("agent-card", "jsonrpc", "browse:agent")}
        except NoReverseMatch:  # an agent no URLconf serves (a2a.W110 says so)
            continue
        name = agent.settings.AGENT_NAME or (project_name() if agent.is_default else agent.name)
        urls = {route.replace("-", "_").replace(":", "_"): url for route, url in routes.items()}
        served.append({"name": name, **urls, "mcp": mcp_url(agent, request)})
    try:
        admin = reverse("admin:index")
    except NoReverseMatch:  # a project without the admin
        admin = ""
    context = {
        "agents": served,
        "admin": admin,
        "catalog": reverse("a2a:ai-catalog"),
        "site": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "a2a/home.html", context)
