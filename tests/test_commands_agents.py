"""``manage.py a2a_tasks``, ``a2a_send`` and ``a2a_card`` with ``--agent``: one agent's
tasks (in its own store when it has one), its endpoint, its card."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core.management import CommandError

from stores.memory import MemoryTaskStore
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


def test_an_agents_own_store(agents_tasks, settings):
    own = MemoryTaskStore()
    settings.A2A_AGENTS = {"billing": {"TASK_STORE": own}}
    own.save({**make_task("own-1"), "_agent": "billing"})
    assert listed("--agent", "billing") == {"own-1"}
    assert listed() == {"d-1", "b-1", "b-2", "s-1"}  # the project's store


def test_an_unknown_agent_is_an_error(agents_tasks):
    with pytest.raises(CommandError, match="No agent named 'nobody'"):
        run("list", "--agent", "nobody")
