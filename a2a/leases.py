"""Leases: a task in flight belongs to one process, for a while, and says so.

A task that a process accepts (``submitted``) or runs (``working``) carries
``_lease = {"owner": "<host>:<pid>:<token>", "expires": "<ISO time>", "runs": n}``.
The runner of that process renews the leases of all its tasks (queued and running)
every third of ``A2A_LEASE_SECONDS`` (a save through :mod:`a2a.lifecycle` that is not
published: streams and webhooks hear nothing). Settling a task drops its lease.

When the owner dies (``kill -9``, OOM, a lost host) its leases stop being renewed.
:func:`reap` finds the tasks whose lease expired: at runner start, every
``A2A_LEASE_CHECK_INTERVAL`` seconds in every server process, and on demand with
``manage.py a2a_leases``. What happens to them:

- ``working`` (the handler was running): saved ``failed``, the status message saying
  that the process running it stopped and when its lease expired. With
  ``A2A_RETRY_ON_LOST_LEASE = True`` a server process re-runs it instead (back to
  ``submitted``, then through the handler again), at most :data:`MAX_RUNS` runs in
  all; only for handlers that are safe to run twice (idempotent).
- ``submitted`` (accepted, the handler never started): a server process re-runs it
  (whatever the setting: nothing ran yet); ``manage.py a2a_leases`` has no server
  to run it in, and fails it.

Every step is a compare-and-swap transition, so when several processes reap at once
exactly one of them acts on a task, and a live owner that was merely slow finds its
lease taken and lets go (its late result is dropped; see ``a2a.runner``). A renewal
that finds its task settled elsewhere (canceled through another worker) stops the
local handler.

Cost: each check lists the ``working`` and ``submitted`` tasks (an indexed query on
the ORM store; a read of every task file on the file store, which is why checks are
spaced out). Leases compare wall clocks: keep hosts sharing a store in sync (NTP).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stores.base import MAX_PAGE_SIZE, Task, TaskQuery, TaskStore, format_timestamp, parse_timestamp, task_state

from . import lifecycle
from .conf import a2a_settings
from .executors import dispatch
from .protocol.model import agent_message, set_status

if TYPE_CHECKING:
    from .runner import Runner

logger = logging.getLogger(__name__)

#: The states a task holds a lease in.
LEASED_STATES = ("submitted", "working")
#: With A2A_RETRY_ON_LOST_LEASE, a task is run at most this many times in all.
MAX_RUNS = 3

_owner: tuple[int, str] | None = None


def owner_id() -> str:
    """This process's name on its leases: host, pid and a random token (a pid is reused)."""
    global _owner
    pid = os.getpid()
    if _owner is None or _owner[0] != pid:  # a forked child is another owner
        _owner = (pid, f"{socket.gethostname()}:{pid}:{secrets.token_hex(4)}")
    return _owner[1]


def lease_seconds() -> float:
    return float(a2a_settings.LEASE_SECONDS)


def new_lease(*, runs: int = 0, now: dt.datetime | None = None, queued: bool = False) -> dict[str, Any]:
    """A lease for this process, valid for ``A2A_LEASE_SECONDS`` from ``now``.

    ``queued``: the task waits on the queue of ``A2A_EXECUTOR = "tasks"`` for any
    worker to start it (:func:`may_start`); this process only put it there, and when
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


def accept_lease(*, runs: int = 0) -> dict[str, Any]:
    """The lease of a task this process accepts for fulfilment: its own (the runner
    here runs it), or a queued one (``A2A_EXECUTOR = "tasks"``: a worker will)."""
    from .executors import get_executor

    return new_lease(runs=runs, queued=get_executor().queued)


def lease_of(task: Task) -> dict[str, Any] | None:
    lease = task.get("_lease")
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


def may_start(task: Task) -> bool:
    """This process may start the task: no lease, ours, a queued one, or an expired one."""
    return lease_of(task) is None or is_ours(task) or is_queued(task) or is_expired(task)


def runs(task: Task) -> int:
    lease = lease_of(task) or {}
    count = lease.get("runs", 0)
    return count if isinstance(count, int) else 0


def start(task: Task) -> None:
    """Lease the task to this process for one more run (on submitted -> working)."""
    task["_lease"] = new_lease(runs=runs(task) + 1)


def release(task: Task) -> None:
    """Drop the lease (the task settled, or waits for the client)."""
    task.pop("_lease", None)


def renew(task: Task) -> Task | None:
    """The change of a heartbeat: push our lease's expiry forward (None when the task
    settled or another process holds it now)."""
    if task_state(task) not in LEASED_STATES or taken_over(task):
        return None
    task["_lease"] = new_lease(runs=runs(task))
    return task


# --- The reaper --------------------------------------------------------------------------


@dataclass
class Reaped:
    task_id: str
    outcome: str  # "failed", "requeued" (re-run here), "expired" (dry run), "skipped" (changed meanwhile)
    expired: str  # when its lease ran out
    state: str  # the state it was found in


def lost_message(state: str, expired: str, *, requeued: bool = False) -> str:
    who = "The process running this task" if state == "working" else "The process that accepted this task"
    if requeued:
        return f"{who} stopped (its lease expired at {expired}); running the task again."
    what = "" if state == "working" else " before running it"
    return f"{who} stopped{what} (its lease expired at {expired}); the task was marked failed. Send the message again."


def _candidates(store: TaskStore) -> Iterator[Task]:
    """The tasks in a leased state: one directory scan on the file store, else a
    paged, state-filtered listing per state."""
    from .maintenance import _read_all

    everything = _read_all(store)
    if everything is not None:
        yield from (t for t in everything if task_state(t) in LEASED_STATES)
        return
    for state in LEASED_STATES:
        token: str | None = None
        while True:
            page = store.list(TaskQuery(state=state, page_size=MAX_PAGE_SIZE, page_token=token))
            yield from page.tasks
            token = page.next_page_token
            if not token:
                break


def reap(
    store: TaskStore,
    *,
    runner: Runner | None = None,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> list[Reaped]:
    """Settle every task whose lease expired (see the module doc). With ``runner``
    (a server process), re-run what may be re-run there; without, fail everything."""
    now = now or dt.datetime.now(dt.UTC)
    retry = bool(a2a_settings.RETRY_ON_LOST_LEASE)
    mine = set(runner._jobs) if runner is not None else set()
    expired = [t for t in _candidates(store) if is_expired(t, now) and not (t["id"] in mine and is_ours(t))]
    done: list[Reaped] = []
    for found in expired:
        lease = lease_of(found) or {}
        when = str(lease.get("expires", "an unknown time"))
        state = task_state(found)
        if dry_run:
            done.append(Reaped(found["id"], "expired", when, state))
            continue
        try:
            outcome = _settle(store, found["id"], now, runner=runner, retry=retry)
        except Exception as exc:  # cannot read or save it now: nothing is decided; the next check tries again
            logger.warning("could not settle task %s, whose lease expired (%s); trying again later", found["id"], exc)
            outcome = "skipped"
        done.append(Reaped(found["id"], outcome, when, state))
        if outcome == "requeued" and runner is not None:
            dispatch(found["id"], runner)  # to this process's runner, or onto the queue again
        if outcome == "requeued" and is_queued(found) and state == "submitted":
            logger.info("task %s still waits on the queue (lease expired at %s): enqueued again", found["id"], when)
        elif outcome != "skipped":
            logger.warning(
                "task %s (%s) lost its lease (held by %s, expired at %s): %s",
                found["id"],
                state,
                lease.get("owner", "?"),
                when,
                outcome,
            )
    return done


def _settle(store: TaskStore, task_id: str, now: dt.datetime, *, runner: Runner | None, retry: bool) -> str:
    outcome = "skipped"

    def change(task: Task) -> Task | None:
        nonlocal outcome
        outcome = "skipped"
        state = task_state(task)
        if state not in LEASED_STATES or not is_expired(task, now):
            return None  # settled, renewed or taken over meanwhile
        when = str((lease_of(task) or {}).get("expires", "an unknown time"))
        if runner is not None and (state == "submitted" or (retry and runs(task) < MAX_RUNS)):
            outcome = "requeued"
            task["_lease"] = accept_lease(runs=runs(task))
            if state == "working":
                set_status(task, "submitted", agent_message(lost_message(state, when, requeued=True), task=task))
            return task
        outcome = "failed"
        release(task)
        return set_status(task, "failed", agent_message(lost_message(state, when), task=task))

    saved = lifecycle.transition_sync(store, task_id, change)
    return outcome if saved is not None else "skipped"


# --- In a server process: heartbeats and periodic checks -------------------------------------


async def maintain(runner: Runner) -> None:
    """Run for the life of ``runner``'s loop: reap once now, renew the leases of the
    runner's tasks every third of the lease, reap every ``A2A_LEASE_CHECK_INTERVAL``."""
    from stores.resolve import get_task_store

    next_check = 0.0
    while True:
        try:
            store = get_task_store()
        except Exception:  # misconfigured: stores.E001 says why; try again later
            logger.exception("the task store cannot be used for lease checks")
            await asyncio.sleep(lease_seconds() / 3)
            continue
        interval = float(a2a_settings.LEASE_CHECK_INTERVAL)
        if time.monotonic() >= next_check:
            try:
                await _io(store, reap, store, runner=runner)
            except Exception:
                logger.exception("checking for expired task leases failed")
            # jitter: the workers of one server do not all scan at once
            next_check = time.monotonic() + interval * random.uniform(0.8, 1.2) if interval > 0 else float("inf")
        try:
            await heartbeat(runner, store)
        except Exception:
            logger.exception("renewing task leases failed")
        tick = lease_seconds() / 3
        await asyncio.sleep(max(0.05, min(tick, next_check - time.monotonic())))


async def heartbeat(runner: Runner, store: TaskStore) -> None:
    """Renew the lease of each task the runner holds; stop the handler of any that was
    settled (canceled through another process), deleted or taken over meanwhile. A
    task that cannot be read or saved now (StoreUnavailable, a database error) is left
    running: nothing is known about it, and the next heartbeat tries again."""
    for task_id in list(runner._jobs):
        try:
            renewed = await lifecycle.transition(store, task_id, renew, publish=False)
            if renewed is None and task_id in runner._jobs:
                current = await _io(store, store.get, task_id)
                if current is None or lifecycle.is_terminal(current) or taken_over(current):
                    runner.cancel(task_id)
        except Exception as exc:
            logger.warning("could not renew the lease of task %s (%s); trying again later", task_id, exc)


async def _io(store: TaskStore, function: Any, *args: Any, **kwargs: Any) -> Any:
    if store.nonblocking:
        return function(*args, **kwargs)
    return await asyncio.to_thread(function, *args, **kwargs)
