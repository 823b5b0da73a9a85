"""``manage.py a2a_tasks`` and ``a2a_card`` with ``--agent``: one agent's tasks, its card
(``a2a_send --agent`` is in test_a2a_send.py, against the real site)."""

from __future__ import annotations

import datetime as dt
import io
import json

import httpx
import pytest
from django.core.management import CommandError, call_command

from tests.keys import pem, public_pem
from tests.test_card_signing import EC_KEY
from tests.test_commands import make_task, run

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def agents_tasks(use_store, settings):
    settings.A2A_AGENTS = {"billing": {"AGENT_NAME": "Billing"}, "support": {"AGENT_NAME": "Support"}}
    for task_id, agent in (("d-1", None), ("b-1", "billing"), ("b-2", "billing"), ("s-1", "support")):
        task = make_task(task_id, "working", age=dt.timedelta(hours=2))
        if agent:
            task["_agent"] = agent
        use_store.save(task)
    return use_store


def listed(*args: str) -> set[str]:
    out, _ = run("list", "--json", *args)
    return {json.loads(line)["id"] for line in out.splitlines()}


def test_list_and_export_one_agents_tasks(agents_tasks):
    assert listed() == {"d-1", "b-1", "b-2", "s-1"}
    assert listed("--agent", "billing") == {"b-1", "b-2"}
    assert listed("--agent", "default") == {"d-1"}
    out, _ = run("export", "--agent", "support")
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["s-1"]


def test_show_and_cancel_answer_for_the_named_agent_only(agents_tasks):
    out, _ = run("show", "b-1", "--agent", "billing")
    assert "Agent    billing" in out
    with pytest.raises(CommandError, match="No task 'b-1'"):
        run("show", "b-1", "--agent", "support")
    with pytest.raises(CommandError, match="1 of 2"):
        run("cancel", "b-2", "s-1", "--agent", "billing")
    assert agents_tasks.get("b-2")["status"]["state"] == "canceled"
    assert agents_tasks.get("s-1")["status"]["state"] == "working"


def test_fail_stale_and_prune_keep_to_the_agent(agents_tasks):
    run("fail-stale", "--older-than", "1h", "--agent", "support")
    assert {
        t["id"] for t in (agents_tasks.get(i) for i in ("d-1", "b-1", "s-1")) if t["status"]["state"] == "failed"
    } == {"s-1"}
    run("prune", "--older-than", "1h", "--state", "failed", "--agent", "billing")
    assert agents_tasks.get("s-1") is not None  # support's, not billing's


def test_import_keeps_the_agents_tasks(agents_tasks, tmp_path):
    exported, _ = run("export")
    lines = tmp_path / "tasks.jsonl"
    lines.write_text(exported)
    for task_id in ("d-1", "b-1", "b-2", "s-1"):
        agents_tasks.delete(task_id)
    run("import", str(lines), "--agent", "billing")
    assert listed() == {"b-1", "b-2"}


def test_an_unknown_agent_is_an_error(agents_tasks):
    with pytest.raises(CommandError, match="No agent named 'nobody'"):
        run("list", "--agent", "nobody")


# --- manage.py a2a_card --agent ---------------------------------------------------------------


def card_command(*args: str) -> str:
    out = io.StringIO()
    call_command("a2a_card", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def billing(settings):
    settings.A2A_AGENTS = {"billing": {"AGENT_NAME": "Billing", "AGENT_DESCRIPTION": "Invoices and refunds."}}
    settings.A2A_PUBLIC_URL = "https://agents.example.com"


def test_show_prints_the_agents_card(billing):
    shown = json.loads(card_command("show", "--agent", "billing", "--version", "1.0"))
    assert (shown["name"], shown["description"]) == ("Billing", "Invoices and refunds.")
    urls = {i["url"] for i in shown["supportedInterfaces"]}
    assert urls == {
        "https://agents.example.com/agents/billing/a2a/",
        "https://agents.example.com/agents/billing/a2a/rest",
    }
    assert json.loads(card_command("show"))["name"] != "Billing"  # the default agent's
    with pytest.raises(CommandError, match="No agent named 'nobody'"):
        card_command("show", "--agent", "nobody")


def test_sign_and_verify_the_agents_card(billing, settings, tmp_path, monkeypatch):
    signed = json.loads(card_command("sign", "--agent", "billing", "--key", pem(EC_KEY), "--kid", "k"))
    assert signed["name"] == "Billing" and signed["signatures"][0]["protected"]
    seen = {}

    def fake_get(url, headers, **kwargs):
        seen["url"] = url
        return httpx.Response(200, content=json.dumps(signed).encode(), request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", fake_get)
    out = card_command("verify", "--agent", "billing", "--key", public_pem(EC_KEY))
    assert "valid (covers the card)" in out
    assert seen["url"] == "https://agents.example.com/agents/billing/.well-known/agent-card.json"
    with pytest.raises(CommandError, match="or --agent NAME"):
        card_command("verify", "--key", public_pem(EC_KEY))
