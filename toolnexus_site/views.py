"""The example site's front page: what this project serves, linked (the admin's "View
site" leads here)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from a2a.agents import agents
from a2a.conf import project_name
from a2a.service.mcp_endpoint import mcp_url


def home(request: HttpRequest) -> HttpResponse:
    """Each agent (its card, its JSON-RPC and MCP endpoints, its page), the admin and the catalog."""
    served = []
    for agent in agents().values():
        try:
            routes = {route: agent.path(route) for route in ("agent-card", "jsonrpc", "browse:agent")}
        except NoReverseMatch:  # an agent no URLconf serves (a2a.W110 says so)
            continue
        name = agent.settings.AGENT_NAME or (project_name() if agent.is_default else agent.name)
        urls = {route.replace("-", "_").replace(":", "_"): url for route, url in routes.items()}
        served.append({"name": name, **urls, "mcp": mcp_url(agent, request)})
    context = {
        "agents": served,
        "admin": reverse("admin:index"),
        "catalog": reverse("a2a:ai-catalog"),
        "site": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "toolnexus_site/home.html", context)
