"""Leases: a task in flight belongs to one process, for a while, and says so.

A task that a process accepts (``submitted``) or runs (``working``) carries
``_lease = {"owner": "<host>:<pid>:<token>", "expires": "<ISO time>", "runs": n}``
(``"queued": true`` while it waits on the queue of ``A2A_EXECUTOR = "tasks"``).
Settling a task drops its lease. These are the rules, pure functions of a task and
the clock; :mod:`a2a.runtime.reaper` renews the leases of a process's tasks and
settles the tasks whose owner died. Leases compare wall clocks: keep hosts sharing a
store in sync (NTP).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import socket
from typing import Any

from a2a.conf import a2a_settings
from stores.base import Task
from stores.fields import LEASE, task_state
from stores.timestamps import format_timestamp, parse_timestamp

logger = logging.getLogger(__name__)

#: The states a task holds a lease in.
LEASED_STATES = ("submitted", "working")
#: With A2A_RETRY_ON_LOST_LEASE, a task is run at most this many times in all.
MAX_RUNS = 3


def _new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


#: Minted once, at import (and again in a forked child: another owner). Never lazily:
#: threads that minted it at once would each lease tasks under a name of their own, and
#: the tasks leased under the name that lost would never start here.
_owner = _new_owner()


def _forked() -> None:
    global _owner
    _owner = _new_owner()


os.register_at_fork(after_in_child=_forked)


def owner_id() -> str:
    """This process's name on its leases: host, pid and a random token (a pid is reused)."""
    return _owner


def lease_seconds() -> float:
    return a2a_settings.LEASE_SECONDS


def new_lease(*, runs: int = 0, now: dt.datetime | None = None, queued: bool = False) -> dict[str, Any]:
    """A lease for this process, valid for ``A2A_LEASE_SECONDS`` from ``now``.

    ``queued``: the task waits on the queue of ``A2A_EXECUTOR = "tasks"`` for any
    worker to start it (:func:`held_elsewhere`); this process only put it there, and when
    the lease runs out before a worker started it, the reaper enqueues it again."""
    now = now or dt.datetime.now(dt.UTC)
    lease = {
        "owner": owner_id(),
        "expires": format_timestamp(now + dt.timedelta(seconds=lease_seconds())),
        "runs": runs,
    }
    if queued:
        lease["queued"] = True
    return lease


def lease_of(task: Task) -> dict[str, Any] | None:
    lease = task.get(LEASE)
    return lease if isinstance(lease, dict) else None


def expires_at(lease: dict[str, Any]) -> dt.datetime | None:
    try:
        return parse_timestamp(lease["expires"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def is_expired(task: Task, now: dt.datetime | None = None) -> bool:
    """The task has a lease and it ran out (an unreadable one counts as run out)."""
    lease = lease_of(task)
    if lease is None:
        return False
    when = expires_at(lease)
    return when is None or when <= (now or dt.datetime.now(dt.UTC))


def is_ours(task: Task) -> bool:
    lease = lease_of(task)
    return lease is not None and lease.get("owner") == owner_id()


def taken_over(task: Task) -> bool:
    """Another process holds the task's lease now (it took the task over from us)."""
    lease = lease_of(task)
    return lease is not None and lease.get("owner") != owner_id()


def is_queued(task: Task) -> bool:
    """The task waits on the executor's queue for any worker (see :func:`new_lease`)."""
    lease = lease_of(task)
    return lease is not None and lease.get("queued") is True


def held_elsewhere(task: Task) -> str | None:
    """Why this process may not start the task, or None when it may (no lease, ours, a
    queued one, or an expired one): another owner's live lease."""
    lease = lease_of(task)
    if lease is None or is_ours(task) or is_queued(task) or is_expired(task):
        return None
    return f"its lease is held by {lease.get('owner')} until {lease.get('expires')}"


def runs(task: Task) -> int:
    lease = lease_of(task) or {}
    count = lease.get("runs", 0)
    return count if isinstance(count, int) else 0


def start(task: Task) -> None:
    """Lease the task to this process for one more run (on submitted -> working)."""
    task[LEASE] = new_lease(runs=runs(task) + 1)


def release(task: Task) -> None:
    """Drop the lease (the task settled, or waits for the client)."""
    task.pop(LEASE, None)


def renew(task: Task) -> Task | None:
    """The change of a heartbeat: push our lease's expiry forward (None when the task
    settled or another process holds it now)."""
    if task_state(task) not in LEASED_STATES or taken_over(task):
        return None
    task[LEASE] = new_lease(runs=runs(task))
    return task


def lost_message(state: str, expired: str, *, requeued: bool = False) -> str:
    who = "The process running this task" if state == "working" else "The process that accepted this task"
    if requeued:
        return f"{who} stopped (its lease expired at {expired}); running the task again."
    what = "" if state == "working" else " before running it"
    return f"{who} stopped{what} (its lease expired at {expired}); the task was marked failed. Send the message again."
