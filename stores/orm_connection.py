"""The ORM stores' database connections, kept usable from any thread.

Django checks a connection around each request (``close_if_unusable_or_obsolete`` on
``request_started`` and ``request_finished``); the stores also run in threads those
signals never reach (the runner's, the push deliverer's, a worker's), so each use
checks first (:func:`refresh_connection`).
"""

from __future__ import annotations

import select
from typing import Any

from django.db import connections


def _nothing_to_read(connection) -> bool:
    """Whether an idle PostgreSQL connection's socket has nothing waiting: a server that
    dropped it (restart, ``pg_terminate_backend``, idle timeout) has sent an error or
    EOF, which makes it readable. A poll, not a ``SELECT 1`` round trip."""
    if connection.vendor != "postgresql" or connection.connection is None:
        return False
    try:
        readable, _, _ = select.select([connection.connection.fileno()], [], [], 0)
    except (OSError, ValueError, AttributeError):
        return False
    return not readable


def refresh_connection(using: str) -> None:
    """Before a use from a thread Django's request signals never reach: drop the
    thread's connection to ``using`` when it broke (the database restarted) or is
    obsolete, as Django does around each request (see :attr:`OrmTaskStore.objects`).
    Every ORM-backed store of this app calls it (tasks, push configs)."""
    connection: Any = connections[using]  # health_check_* are missing from django-stubs
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()
        if connection.health_check_enabled and not connection.health_check_done and _nothing_to_read(connection):
            connection.health_check_done = True
