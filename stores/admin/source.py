"""The store the admin's pages read: the configured one (:func:`~stores.backends.get_task_store`),
or the reason it cannot be read (a system check reports a misconfigured ``TASK_STORE``)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from stores.backends import get_task_store
from stores.base import TaskStore
from stores.orm import OrmTaskStore


def store_or_error() -> tuple[TaskStore | None, str]:
    """The configured store and "", or None and what is wrong with the configuration."""
    try:
        return get_task_store(), ""
    except ImproperlyConfigured as exc:
        return None, f"The task store is misconfigured: {exc}"


def configured_store() -> TaskStore | None:
    """The configured store, or None when ``TASK_STORE`` is misconfigured."""
    return store_or_error()[0]


def orm_configured() -> bool:
    """Whether the configured store is the ORM one (Django's change list on its table)."""
    return isinstance(configured_store(), OrmTaskStore)
