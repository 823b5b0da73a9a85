"""The store the admin's pages read: the configured one (:func:`~stores.backends.get_task_store`),
or the reason it cannot be read (a system check reports a misconfigured ``TASK_STORE``)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from stores.backends import get_task_store
from stores.base import TaskStore
from stores.file import FileTaskStore
from stores.memory import MemoryTaskStore
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


def store_label(store: TaskStore) -> str:
    """The store in words, for the pages (not its Python repr)."""
    if isinstance(store, OrmTaskStore):
        return f"the database (the ORM store, database “{store.using}”)"
    if isinstance(store, FileTaskStore):
        return f"the files in {store.directory} (the file store)"
    if isinstance(store, MemoryTaskStore):
        return "this process's memory (the memory store: gone when the server stops)"
    return f"{type(store).__name__} (a store of this project's own)"
