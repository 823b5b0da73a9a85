"""Where clients find each agent's MCP endpoint when ``A2A_MCP`` is on: the card's MCP
extension (not ``supportedInterfaces``: those are A2A bindings), the AI Catalog, the
front page and the agent page; nothing of it when off."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.admin.utils import quote
from django.core.management import CommandError, call_command
from django.urls import reverse

from a2a.service.card import MCP_EXTENSION_URI
from a2a.testing import v10_message
from stores.backends import resolve_store
from tests.agents_support import AGENTS
from tests.helpers import call, rpc10
from tests.mcp.support import modern, result

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


def test_a2a_agents_own_names_each_agents_mcp_endpoint(settings):
    settings.A2A_MCP = True
    out = io.StringIO()
    call_command("a2a_agents", "--own", stdout=out)
    lines = dict(line.split(None, 1) for line in out.getvalue().splitlines())
    assert set(lines) == {"default", *AGENTS}
    assert lines["default"].endswith("mcp /mcp") and lines["billing"].endswith("mcp /agents/billing/mcp")
    settings.A2A_PUBLIC_URL = "https://agents.example"
    settings.A2A_AGENTS = {name: {**conf, "MCP": False} for name, conf in AGENTS.items()}
    out = io.StringIO()
    call_command("a2a_agents", "--own", "billing", "default", stdout=out)
    billing, default = out.getvalue().splitlines()
    assert billing.endswith("mcp off (A2A_MCP)") and "card https://agents.example/agents/billing/" in billing
    assert default.endswith("mcp https://agents.example/mcp")
    with pytest.raises(CommandError, match="Not in A2A_AGENTS: nobody"):
        call_command("a2a_agents", "--own", "nobody")


@pytest.mark.django_db(transaction=True)  # the ORM store saves from the app's threads
@pytest.mark.parametrize("kind", ["memory", "file", "orm"])
def test_the_admin_and_the_agent_page_show_where_a_task_came_from(settings, admin_client, kind, tmp_path):
    """An MCP call's task says MCP; a SendMessage's the A2A binding and version."""
    settings.TASK_STORE = resolve_store({"memory": "memory", "file": f"file:{tmp_path}", "orm": "orm"}[kind])
    settings.A2A_MCP = True

    mcp_task = result(modern("tools/call", {"name": "echo", "arguments": {"message": "hi"}}))["_meta"]["a2a/taskId"]
    sent = rpc10("SendMessage", {"message": v10_message("hi")})["result"]["task"]["id"]
    for task_id, shown in ((mcp_task, "MCP"), (sent, "A2A JSONRPC 1.0")):
        page = admin_client.get(reverse("admin:stores_taskrecord_change", args=[quote(task_id)])).content.decode()
        assert f'<label>Came over:</label><div class="readonly">{shown}</div>' in page, re.findall("Came.{0,80}", page)
        page = admin_client.get(f"/a2a/browse/?task={task_id}").content.decode()
        assert f'<span id="task-binding" class="muted">over {shown}</span>' in page
