"""The lease reaper: heartbeats for this process's tasks, and the tasks whose owner died.

See :mod:`a2a.core.leases` for what a lease is. The runner of each process renews the
leases of all its tasks (queued and running) every third of ``A2A_LEASE_SECONDS``
(:func:`heartbeat`: a save through :mod:`a2a.core.lifecycle` that is not published:
streams and webhooks hear nothing). A renewal that finds its task settled elsewhere
(canceled through another worker) stops the local handler.

When an owner dies (``kill -9``, OOM, a lost host) its leases stop being renewed.
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
lease taken and lets go (its late result is dropped; see :mod:`a2a.runtime.runner`).

Each check reads the ``working`` and ``submitted`` tasks (``TaskStore.scan``: an
indexed query on the ORM store, a read of every task file on the file store, which is
why checks are spaced out).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from a2a.agents import store_of, task_stores_in_use
from a2a.conf import a2a_settings
from a2a.core import lifecycle
from a2a.core.leases import (
    LEASED_STATES,
    MAX_RUNS,
    is_expired,
    is_ours,
    is_queued,
    lease_of,
    lease_seconds,
    lost_message,
    new_lease,
    release,
    renew,
    runs,
    taken_over,
)
from a2a.protocol.model import agent_message, set_status
from a2a.runtime import file_sweep, retention
from a2a.runtime.executors import Submits, get_executor
from stores.base import Task, TaskStore
from stores.fields import LEASE, task_state
from stores.scope import task_agent

logger = logging.getLogger(__name__)


class Runs(Submits, Protocol):
    """The runner the reaper works for (see :class:`a2a.runtime.runner.Runner`)."""

    def task_ids(self) -> set[str]: ...

    def cancel(self, task_id: str) -> None: ...

    def agent_name(self, task_id: str) -> str: ...


# --- The reaper --------------------------------------------------------------------------


@dataclass
class Reaped:
    task_id: str
    outcome: str  # "failed", "requeued" (re-run here), "expired" (dry run), "skipped" (changed meanwhile)
    expired: str  # when its lease ran out
    state: str  # the state it was found in


def reap(
    store: TaskStore,
    *,
    runner: Runs | None = None,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> list[Reaped]:
    """Settle every task whose lease expired (see the module doc). With ``runner``
    (a server process), re-run what may be re-run there; without, fail everything."""
    now = now or dt.datetime.now(dt.UTC)
    retry = a2a_settings.RETRY_ON_LOST_LEASE
    mine = runner.task_ids() if runner is not None else set()
    expired = [t for t in store.scan(LEASED_STATES) if is_expired(t, now) and not (t["id"] in mine and is_ours(t))]
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
            # to this process's runner, or onto the queue again; its agent says which store holds it
            get_executor().dispatch(found["id"], runner, task_agent(found))
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


def _settle(store: TaskStore, task_id: str, now: dt.datetime, *, runner: Runs | None, retry: bool) -> str:
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
            task[LEASE] = new_lease(runs=runs(task), queued=get_executor().queued)
            if state == "working":
                set_status(task, "submitted", agent_message(lost_message(state, when, requeued=True), task=task))
            return task
        outcome = "failed"
        release(task)
        return set_status(task, "failed", agent_message(lost_message(state, when), task=task))

    saved = lifecycle.transition_sync(store, task_id, change)
    return outcome if saved is not None else "skipped"


# --- In a server process: heartbeats and periodic checks -------------------------------------


async def maintain(runner: Runs) -> None:
    """Run for the life of ``runner``'s loop: reap once now, renew the leases of the
    runner's tasks every third of the lease, reap every ``A2A_LEASE_CHECK_INTERVAL``.
    Every distinct store of the agents' tasks is reaped; each task is renewed in its agent's.
    Retention sweeps (:func:`a2a.runtime.retention.keep_sweeping`) and the sweep of
    stored files no task references (:func:`a2a.runtime.file_sweep.keep_sweeping`) run
    beside, as tasks of their own: a long sweep never delays a renewal."""
    sweeping = [asyncio.ensure_future(retention.keep_sweeping()), asyncio.ensure_future(file_sweep.keep_sweeping())]
    try:
        await _maintain(runner)
    finally:
        for task in sweeping:
            task.cancel()


class Failures:
    """The periodic work's failures, logged so that a store that stays unusable does not
    fill the log: a failure with its traceback the first time, once more when what it says
    changes, and a line when the work succeeds again; the same failure meanwhile at DEBUG."""

    def __init__(self) -> None:
        self._last: dict[str, str] = {}

    def failed(self, what: str, exc: BaseException) -> None:
        said = f"{type(exc).__name__}: {exc}"
        if self._last.get(what) == said:
            logger.debug("%s failed again: %s", what, said)
            return
        self._last[what] = said
        logger.error("%s failed (logged again only when it changes): %s", what, said, exc_info=exc)

    def succeeded(self, what: str) -> None:
        if self._last.pop(what, None) is not None:
            logger.warning("%s works again", what)


async def _maintain(runner: Runs) -> None:
    next_check = 0.0
    failures = Failures()
    while True:
        try:
            stores = task_stores_in_use()
        except Exception as exc:  # misconfigured: stores.E001 (or a2a.E110) says why; try again later
            failures.failed("finding the task stores for lease checks", exc)
            await asyncio.sleep(lease_seconds() / 3)
            continue
        interval = a2a_settings.LEASE_CHECK_INTERVAL
        if time.monotonic() >= next_check:
            for store in stores:
                what = f"checking {store!r} for expired task leases"
                try:
                    await _io(store, reap, store, runner=runner)
                    failures.succeeded(what)
                except Exception as exc:
                    failures.failed(what, exc)
            # jitter: the workers of one server do not all scan at once
            next_check = time.monotonic() + interval * random.uniform(0.8, 1.2) if interval > 0 else float("inf")
        try:
            for store, task_ids in _by_store(runner):
                await heartbeat(runner, store, task_ids)
            failures.succeeded("renewing task leases")
        except Exception as exc:
            failures.failed("renewing task leases", exc)
        tick = lease_seconds() / 3
        await asyncio.sleep(max(0.05, min(tick, next_check - time.monotonic())))


def _by_store(runner: Runs) -> list[tuple[TaskStore, list[str]]]:
    """The runner's tasks by the store that holds them (their agent's)."""
    groups: dict[int, tuple[TaskStore, list[str]]] = {}
    for task_id in runner.task_ids():
        store = store_of(runner.agent_name(task_id))
        groups.setdefault(id(store), (store, []))[1].append(task_id)
    return list(groups.values())


async def heartbeat(runner: Runs, store: TaskStore, task_ids: Iterable[str] | None = None) -> None:
    """Renew the lease of each task the runner holds (``task_ids``: those of them that
    ``store`` holds; None: all); stop the handler of any that was settled (canceled
    through another process), deleted or taken over meanwhile. A task that cannot be
    read or saved now (StoreUnavailable, a database error) is left running: nothing is
    known about it, and the next heartbeat tries again."""
    for task_id in runner.task_ids() if task_ids is None else task_ids:
        try:
            renewed = await lifecycle.transition(store, task_id, renew, publish=False, durable=False)
            if renewed is None and task_id in runner.task_ids():
                current = await _io(store, store.get, task_id)
                if current is None or lifecycle.is_terminal(current) or taken_over(current):
                    runner.cancel(task_id)
        except Exception as exc:
            logger.warning("could not renew the lease of task %s (%s); trying again later", task_id, exc)


async def _io(store: TaskStore, function: Any, *args: Any, **kwargs: Any) -> Any:
    if store.nonblocking:
        return function(*args, **kwargs)
    return await asyncio.to_thread(function, *args, **kwargs)
