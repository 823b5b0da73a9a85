"""Whose a task is: its agent, owner and tenant, and the scope key the stores index and
filter tasks by (``TaskQuery.owner``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stores.fields import AGENT, OWNER, TENANT

if TYPE_CHECKING:  # stores.base reads a task's scope through this module
    from stores.base import Task

#: Between the tenant and the owner in a scope key (a tenant never contains it).
SCOPE_SEPARATOR = "\x1f"
#: After the agent in a scope key (an agent's name never contains it).
AGENT_SEPARATOR = "\x1e"


def task_owner(task: Task) -> str:
    """Who the task belongs to: its ``_owner`` ("" for an agent without authentication)."""
    owner = task.get(OWNER, "")
    return owner if isinstance(owner, str) else ""


def task_tenant(task: Task) -> str:
    """The tenant the task was created under: its ``_tenant`` ("" without one)."""
    tenant = task.get(TENANT, "")
    return tenant if isinstance(tenant, str) else ""


def task_agent(task: Task) -> str:
    """The agent the task was created by: its ``_agent`` ("" for the default agent)."""
    agent = task.get(AGENT, "")
    return agent if isinstance(agent, str) else ""


def scope_key(tenant: str, owner: str, agent: str = "") -> str:
    """The key the stores scope tasks by (``TaskQuery.owner``): the owner, preceded by
    the tenant and :data:`SCOPE_SEPARATOR` when there is a tenant, and by the agent and
    :data:`AGENT_SEPARATOR` for an agent other than the default one (``agent`` ""). For
    the default agent without tenants it is the owner itself, so tasks saved before
    tenants and agents existed keep their key."""
    key = f"{tenant}{SCOPE_SEPARATOR}{owner}" if tenant else owner
    return f"{agent}{AGENT_SEPARATOR}{key}" if agent else key


def task_scope(task: Task) -> str:
    """The scope key of a task (:func:`scope_key` of its tenant, owner and agent): what
    the stores index and filter as its owner."""
    return scope_key(task_tenant(task), task_owner(task), task_agent(task))


def task_context(task: Task) -> tuple[str, str] | None:
    """The conversation ``task`` belongs to: (its scope key, its ``contextId``), or None
    for a task without a context (a conversation of its own). A context is per owner:
    callers who send the same ``contextId`` each have their own."""
    context = task.get("contextId")
    return (task_scope(task), context) if isinstance(context, str) and context else None


#: The name of the agent of the project's single-agent settings (``a2a.agents`` reads it
#: from here): its tasks carry no ``_agent``, so their scope key is the caller's and tenant's alone.
DEFAULT_AGENT = "default"


def agent_name(task: Task) -> str:
    """The name of the agent ``task`` belongs to: its ``_agent``, else :data:`DEFAULT_AGENT`."""
    return task_agent(task) or DEFAULT_AGENT
