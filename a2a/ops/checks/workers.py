"""The checks of where tasks run: the executor (``a2a.E070``, ``W070``), and several worker
processes sharing a task store that cannot be shared (``a2a.W001``)."""

from __future__ import annotations

from django.core.checks import Warning

from a2a.ops.checks.registry import Messages, concern
from a2a.ops.deployment import UNSHARED_HINT, configured_store, expected_workers, unshared_message
from a2a.runtime.executors import executors


@concern(
    "TASK_STORE",
    "A2A_LEASE_SECONDS",
    "A2A_LEASE_CHECK_INTERVAL",
    "A2A_RETRY_ON_LOST_LEASE",
    "A2A_EXPECT_WORKERS",
    "A2A_STALE_AFTER",
    "A2A_HEALTH_TIMEOUT",
    "A2A_TRACING",
)
def check_deployment() -> Messages:
    """Leases and operations; ``a2a.W001``: several workers share a store that cannot be
    shared (``TASK_STORE`` itself is the stores app's check, ``stores.E001``)."""
    count, source = expected_workers()
    store = configured_store()
    if count > 1 and store is not None and not store.shared:
        message = unshared_message(store, f"{source} says there are {count} workers")
        return [Warning(message, hint=UNSHARED_HINT, id="a2a.W001")]
    return []


@concern("A2A_EXECUTOR")
def check_executor() -> Messages:
    """``a2a.E070``: ``A2A_EXECUTOR`` cannot be built or names a queue that cannot be
    used; ``a2a.W070``: handlers run in workers, but events do not leave a process."""
    return executors.check()
