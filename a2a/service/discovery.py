"""The discovery catalogs: where a client finds every agent of the project, when
``/.well-known/agent-card.json`` (the default agent's card) can name only one.

- The AI Catalog (``/.well-known/ai-catalog.json``, ``application/ai-catalog+json``),
  which the A2A specification's pull request 2240 makes the preferred discovery
  mechanism: the draft specification of the AI Catalog working group
  (github.com/Agent-Card/ai-catalog, ``specification/ai-catalog.md``, ``specVersion``
  "1.0"), at its "Discoverable Catalog" level: a ``host`` and one entry per agent, each
  with an ``identifier``, the ``type`` of an A2A Agent Card and the ``url`` of the card.
  The entries carry no ``displayName``, ``description`` or ``version``: the card is
  their authoritative source and the draft says to omit what would drift from it.
- The API Catalog of RFC 9727 (``/.well-known/api-catalog``, a linkset of RFC 9264,
  ``application/linkset+json``): an ``item`` link to each agent's endpoint, and for each
  endpoint a ``service-desc`` link to its card.

An agent with ``LISTED: False`` is in neither. Both are built here from the agents'
URLs (:class:`Listing`), which the HTTP layer knows; what a request may see is its
business (``A2A_CATALOG_AUTHENTICATION``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from a2a.agents import Agent, agents, default_agent

#: The AI Catalog's media type and the version of its draft this catalog follows.
AI_CATALOG_MEDIA_TYPE = "application/ai-catalog+json"
AI_CATALOG_SPEC_VERSION = "1.0"
#: An entry's ``type`` for an A2A Agent Card (the draft's list of known types).
A2A_CARD_TYPE = "application/a2a-agent-card+json"
#: An entry's ``type`` for an MCP server's Streamable HTTP endpoint.
MCP_ENDPOINT_TYPE = "application/mcp"
#: RFC 9727 section 4.2: a linkset, with the profile of an API catalog.
API_CATALOG_PROFILE = "https://www.rfc-editor.org/info/rfc9727"
API_CATALOG_MEDIA_TYPE = f'application/linkset+json; profile="{API_CATALOG_PROFILE}"'


@dataclass(frozen=True)
class Listing:
    """One listed agent and its absolute URLs: its card, and the JSON-RPC endpoint the card names first."""

    agent: Agent
    card_url: str
    endpoint_url: str
    #: Its MCP endpoint's absolute URL (None: it serves no MCP).
    mcp_url: str | None = None


def listed_agents() -> list[Agent]:
    """The agents the catalogs name, the default one first: every agent but those with ``LISTED: False``."""
    return [agent for agent in agents().values() if agent.listed]


def identifier(publisher: str, agent: Agent) -> str:
    """The entry's identifier: ``urn:air:{publisher}:a2a:{agent name}``, the draft's
    ``urn:air`` naming. ``publisher`` is a domain, or an authority with a port
    (``127.0.0.1:8001``): what is not a letter, digit or ``-._~`` is percent-encoded
    (RFC 8141), its ``:`` too, so the URN's segments stay the draft's three."""
    return f"urn:air:{quote(publisher, safe='')}:a2a:{quote(agent.name, safe='')}"


def ai_catalog(listings: list[Listing], publisher: str) -> dict[str, Any]:
    """The AI Catalog of ``listings``: ``host`` names the project (the default agent's
    provider organization, else its name), each entry one agent's card."""
    project = default_agent().settings
    host: dict[str, Any] = {"displayName": project.PROVIDER_ORGANIZATION or project.AGENT_NAME}
    if project.DOCUMENTATION_URL:
        host["documentationUrl"] = project.DOCUMENTATION_URL
    entries = [
        {"identifier": identifier(publisher, listing.agent), "type": A2A_CARD_TYPE, "url": listing.card_url}
        for listing in listings
    ]
    # An agent that serves MCP: a second entry, its MCP endpoint (the draft names no MCP
    # document type yet; the card's MCP extension says the same).
    entries += [
        {
            "identifier": identifier(publisher, listing.agent).replace(":a2a:", ":mcp:", 1),
            "type": MCP_ENDPOINT_TYPE,
            "url": listing.mcp_url,
        }
        for listing in listings
        if listing.mcp_url
    ]
    return {"specVersion": AI_CATALOG_SPEC_VERSION, "host": host, "entries": entries}


def api_catalog(anchor: str, listings: list[Listing]) -> dict[str, Any]:
    """The RFC 9727 API catalog at ``anchor`` (its own URL): the catalog's ``item``
    links are the agents' endpoints, each endpoint's ``service-desc`` its Agent Card."""
    if not listings:
        return {"linkset": []}
    items = [{"href": listing.endpoint_url, "title": listing.agent.settings.AGENT_NAME} for listing in listings]
    described = [
        {"anchor": listing.endpoint_url, "service-desc": [{"href": listing.card_url, "type": "application/json"}]}
        for listing in listings
    ]
    return {"linkset": [{"anchor": anchor, "item": items}, *described]}
