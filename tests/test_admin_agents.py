"""The admin with several agents, on every store: the agent filter, ``agent:<name>`` in
the search box, the dashboard's tasks per agent. The agent is read from the stored task
(``_agent``; none for the default agent), so the admin needs no registry of agents."""

from __future__ import annotations

import html

import pytest

from a2a.agents import DEFAULT_AGENT
from stores.admin import agents, dashboard, search
from stores.scope import DEFAULT_AGENT as STORES_DEFAULT_AGENT
from tests.test_admin_find import DASHBOARD, TASK_LIST, ago, ids, make, store  # noqa: F401 (the store fixture)


@pytest.fixture
def two_agents(store):  # noqa: F811 (the store fixture above)
    store.save(make("d-1", "refund my order", when=ago(minutes=1)))
    store.save(make("b-1", "refund the invoice", _agent="billing", when=ago(minutes=2)))
    store.save(make("b-2", "print the invoice", _agent="billing", _owner="alice", state="failed", when=ago(minutes=3)))
    store.save(make("s-1", "reset my password", _agent="support", _owner="alice", when=ago(minutes=4)))
    return store


def test_the_admin_names_the_default_agent_as_a2a_does():
    assert STORES_DEFAULT_AGENT == DEFAULT_AGENT


def test_the_agent_filter(admin_client, two_agents):
    assert ids(admin_client.get(TASK_LIST, {"agent": "billing"})) == ["b-1", "b-2"]
    assert ids(admin_client.get(TASK_LIST, {"agent": "support"})) == ["s-1"]
    assert ids(admin_client.get(TASK_LIST, {"agent": "default"})) == ["d-1"]
    assert ids(admin_client.get(TASK_LIST, {"agent": "nobody"})) == []
    assert ids(admin_client.get(TASK_LIST, {"agent": "billing", "state": "failed"})) == ["b-2"]
    assert ids(admin_client.get(TASK_LIST, {"agent": "billing", "owner": "alice"})) == ["b-2"]
    body = html.unescape(admin_client.get(TASK_LIST).content.decode())
    assert "By agent" in body
    for name in ("default", "billing", "support"):
        assert f"?agent={name}" in body, name


def test_search_by_agent_keeps_the_words_and_the_filters(admin_client, two_agents):
    assert ids(admin_client.get(TASK_LIST, {"q": "agent:billing"})) == ["b-1", "b-2"]
    assert ids(admin_client.get(TASK_LIST, {"q": "refund agent:billing"})) == ["b-1"]
    assert ids(admin_client.get(TASK_LIST, {"q": "agent:default refund"})) == ["d-1"]
    assert ids(admin_client.get(TASK_LIST, {"q": "refund"})) == ["d-1", "b-1"]
    assert ids(admin_client.get(TASK_LIST, {"q": "agent:support", "state": "failed"})) == []
    assert ids(admin_client.get(TASK_LIST, {"q": "b-2 agent:billing"})) == ["b-2"]
    assert ids(admin_client.get(TASK_LIST, {"q": "b-2 agent:support"})) == []  # that id, not that agent's
    assert ids(admin_client.get(TASK_LIST, {"q": "ctx-b-1 agent:billing"})) == ["b-1"]


def test_the_filter_pages_on_a_store_without_a_query_by_agent(admin_client, settings, monkeypatch):
    """Memory and file stores have no query by agent: the list reads their tasks, at most
    SEARCH_SCAN_LIMIT a page, and the next page goes on, so no task of the agent is lost."""
    from stores.backends import resolve_store

    settings.TASK_STORE = memory = resolve_store("memory")
    for i in range(10):
        memory.save(make(f"t{i}", "x", _agent="billing" if i in (1, 8) else "support", when=ago(minutes=10 - i)))
    monkeypatch.setattr(search, "SEARCH_SCAN_LIMIT", 4)
    found, url = [], TASK_LIST + "?agent=billing"
    for _ in range(5):
        response = admin_client.get(url)
        found += ids(response)
        link = response.content.decode().partition('class="next-page"')[0].rpartition('<a href="')[2]
        if 'class="next-page"' not in response.content.decode():
            break
        url = TASK_LIST + html.unescape(link.rstrip('" '))
    assert found == ["t8", "t1"]


def test_the_dashboard_splits_the_tasks_by_agent(admin_client, two_agents):
    stats = dashboard.collect(two_agents)
    assert stats.per_agent == {"default": 1, "billing": 2, "support": 1}
    body = admin_client.get(DASHBOARD).content.decode()
    assert 'id="chart-agents"' in body and "Tasks per agent" in body
    assert f'href="{TASK_LIST}?agent=billing"' in body


def test_one_agent_shows_no_split(admin_client, store):  # noqa: F811
    store.save(make("d-1", "hello"))
    assert dashboard.collect(store).per_agent == {"default": 1}
    assert 'id="chart-agents"' not in admin_client.get(DASHBOARD).content.decode()


def test_the_search_names_its_agent_word():
    assert agents.split_search("refund agent:billing now") == ("billing", "refund now")
    assert agents.split_search("agent: refund") == ("", "agent: refund")
    assert agents.split_search("") == ("", "")


def test_the_owner_filter_offers_callers_not_scope_keys(admin_client, two_agents):
    """The ORM table's ``owner`` column folds the agent into the key: the filter shows the caller."""
    body = html.unescape(admin_client.get(TASK_LIST).content.decode())
    owners = body.split('data-filter-title="owner"')[1].split("</details>")[0]
    assert "?owner=alice" in owners and "\x1e" not in owners and "\x1f" not in owners
    assert ids(admin_client.get(TASK_LIST, {"owner": "alice"})) == ["b-2", "s-1"]
