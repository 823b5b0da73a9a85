"""Whose a task is: its owner and tenant, and the scope key the stores index and
filter tasks by (``TaskQuery.owner``)."""

from __future__ import annotations

from stores.base import Task

#: Between the tenant and the owner in a scope key (a tenant never contains it).
SCOPE_SEPARATOR = "\x1f"


def task_owner(task: Task) -> str:
    """Who the task belongs to: its ``_owner`` ("" for an agent without authentication)."""
    owner = task.get("_owner", "")
    return owner if isinstance(owner, str) else ""


def task_tenant(task: Task) -> str:
    """The tenant the task was created under: its ``_tenant`` ("" without one)."""
    tenant = task.get("_tenant", "")
    return tenant if isinstance(tenant, str) else ""


def scope_key(tenant: str, owner: str) -> str:
    """The key the stores scope tasks by (``TaskQuery.owner``): the owner, preceded by
    the tenant and :data:`SCOPE_SEPARATOR` when there is a tenant. Without tenants it
    is the owner itself, so tasks saved before tenants existed keep their key."""
    return f"{tenant}{SCOPE_SEPARATOR}{owner}" if tenant else owner


def task_scope(task: Task) -> str:
    """The scope key of a task (:func:`scope_key` of its tenant and owner): what the
    stores index and filter as its owner."""
    tenant = task.get("_tenant")
    return scope_key(tenant, task_owner(task)) if tenant and isinstance(tenant, str) else task_owner(task)
