"""Where clients find each agent's MCP endpoint when ``A2A_MCP`` is on: the card's MCP
extension (not ``supportedInterfaces``: those are A2A bindings), the AI Catalog, the
front page and the agent page; nothing of it when off."""

from __future__ import annotations

import pytest

from a2a.service.card import MCP_EXTENSION_URI
from tests.agents_support import AGENTS
from tests.helpers import call

V10 = {"A2A-Version": "1.0"}


@pytest.fixture(autouse=True)
def _agents(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_AGENTS = AGENTS


def mcp_declared(card: dict) -> list[dict]:
    return [e for e in card["capabilities"]["extensions"] if e["uri"] == MCP_EXTENSION_URI]


def test_the_card_names_the_mcp_endpoint_as_an_extension_not_an_interface(settings):
    settings.A2A_MCP = True
    card = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    (declared,) = mcp_declared(card)
    assert declared["params"]["url"] == "http://testserver/mcp"
    assert declared["params"]["protocolVersions"] == ["2026-07-28", "2025-11-25"]
    assert {i["protocolBinding"] for i in card["supportedInterfaces"]} <= {"JSONRPC", "HTTP+JSON", "GRPC"}
    billing = call("GET", "/agents/billing/.well-known/agent-card.json", headers=V10).json()
    assert mcp_declared(billing)[0]["params"]["url"] == "http://testserver/agents/billing/mcp"


def test_an_agent_with_mcp_off_has_none(settings):
    settings.A2A_MCP = True
    settings.A2A_AGENTS = {name: {**conf, "MCP": False} for name, conf in AGENTS.items()}
    assert not mcp_declared(call("GET", "/agents/billing/.well-known/agent-card.json", headers=V10).json())
    assert mcp_declared(call("GET", "/.well-known/agent-card.json", headers=V10).json())
    settings.A2A_MCP = False
    assert not mcp_declared(call("GET", "/.well-known/agent-card.json", headers=V10).json())


def test_the_ai_catalog_has_an_mcp_entry_per_agent_that_serves_it(settings):
    settings.A2A_MCP = False
    off = call("GET", "/.well-known/ai-catalog.json").json()["entries"]
    assert all(e["type"] == "application/a2a-agent-card+json" for e in off)
    settings.A2A_MCP = True
    entries = call("GET", "/.well-known/ai-catalog.json").json()["entries"]
    mcp = [e for e in entries if e["type"] == "application/mcp"]
    assert [e["url"] for e in mcp] == ["http://testserver/mcp", "http://testserver/agents/billing/mcp"]
    assert all(":mcp:" in e["identifier"] for e in mcp)
    assert len({e["identifier"] for e in entries}) == len(entries)


def test_the_agent_page_names_the_mcp_endpoint(settings, admin_client):
    settings.A2A_MCP = True
    page = admin_client.get("/a2a/browse/")
    assert page.status_code == 200 and "http://testserver/mcp" in page.content.decode()
    settings.A2A_MCP = False
    assert 'id="mcp"' not in admin_client.get("/a2a/browse/").content.decode()
