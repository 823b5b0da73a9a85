"""The routes of the agents ``A2A_AGENTS`` names, one set per agent under its name:
``path("agents/", include("a2a.urls.agents"))`` serves ``agents/<name>/.well-known/agent-card.json``,
``agents/<name>/a2a/`` (JSON-RPC), ``agents/<name>/a2a/rest/...`` (HTTP+JSON, v1.0 and v0.3's
``/v1``, tenant paths), ``agents/<name>/a2a/browse/`` and the OpenAPI description; an unknown
name (and "default", whose routes are :mod:`a2a.urls`'s) is a 404. See docs/agents.md."""

from django.urls import URLPattern, URLResolver, include, path

from a2a.agents import AGENTS_NAMESPACE
from a2a.http.common import for_agent
from a2a.urls import agent_patterns

app_name = AGENTS_NAMESPACE

urlpatterns: list[URLPattern | URLResolver] = [path("<slug:agent>/", include(agent_patterns(for_agent)))]
