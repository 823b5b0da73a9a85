"""The agent of a task as the admin selects it: on a store other than the ORM one, the
``_agent`` the A2A server stamps on a task of any agent but the default one
(:func:`stores.scope.agent_name`); in the ORM store's table, the scope key it is folded
into (the ``owner`` column). Read from the stored tasks: the admin needs no registry of agents."""

from __future__ import annotations

from django.db.models import Q

from stores.scope import AGENT_SEPARATOR, DEFAULT_AGENT

#: The search box's prefix for "this agent's tasks" (``agent:billing refund``).
SEARCH_PREFIX = "agent:"


def agent_of_scope(scope: str) -> str:
    """The name of the agent in a scope key (the ORM store's ``owner`` column)."""
    agent, separator, _ = scope.partition(AGENT_SEPARATOR)
    return agent if separator and agent else DEFAULT_AGENT


def orm_agent_condition(name: str) -> Q:
    """The rows of agent ``name`` in the ORM store's table: their scope key starts with
    the agent (the indexed ``owner`` column), or for the default agent names none."""
    if name == DEFAULT_AGENT:
        return ~Q(owner__contains=AGENT_SEPARATOR)
    return Q(owner__startswith=name + AGENT_SEPARATOR)


def split_search(term: str) -> tuple[str, str]:
    """The agent an ``agent:<name>`` word of a search names ("" for none) and the rest of the search."""
    agent = ""
    rest = []
    for word in term.split():
        if word.startswith(SEARCH_PREFIX) and len(word) > len(SEARCH_PREFIX):
            agent = word[len(SEARCH_PREFIX) :]
        else:
            rest.append(word)
    return agent, " ".join(rest)
