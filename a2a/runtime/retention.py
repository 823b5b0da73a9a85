"""Retention by policy: the tasks ``A2A_RETENTION`` says have expired, deleted from every
store in use, in short batches (what expires and how a batch is deleted:
:mod:`stores.retention`).

Where it runs, one code path each time (:func:`sweep_store` / :func:`asweep_store`):

- in every server process and queue worker, every ``A2A_RETENTION_INTERVAL`` seconds
  (with jitter; the first sweep a tenth to a third of it after start):
  :func:`keep_sweeping`, which the lease reaper's loop (:func:`a2a.runtime.reaper.maintain`)
  runs beside its checks, as a task of its own, so a long sweep never delays a lease
  renewal. Between two batches it pauses (:data:`PAUSE`): on an event loop it yields
  to the requests, on a database it ends the batch's transaction;
- ``manage.py a2a_tasks prune`` (the policy, or its own ``--state``/``--older-than``);
- :func:`a2a.runtime.worker.sweep_job` (:func:`sweep_once`), a task of Django's Tasks
  framework: with ``A2A_RETENTION_INTERVAL = 0``, a queue deployment has its workers
  sweep when something enqueues it (a cron job, a scheduler), and no web process spends
  time on it.

Several processes sweeping one store at once is harmless: a conversation is deleted only
as the store finds it at the moment of the delete (``TaskStore.delete_contexts``: a
follow-up stored in it meanwhile keeps it whole), and a deleted one is gone for the
others. Each deletion is counted (``a2a_retention_deleted_tasks_total{state,agent}``)
and each store's sweep timed (``a2a_retention_sweep_seconds``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from a2a.agents import task_stores_in_use
from a2a.conf import a2a_settings
from a2a.core.metrics import RETENTION_DELETED, RETENTION_SECONDS
from stores.base import Task, TaskStore
from stores.fields import task_state
from stores.retention import Policy, Swept, sweep
from stores.scope import agent_name

logger = logging.getLogger(__name__)

#: Seconds a sweep pauses between two batches (requests run meanwhile).
PAUSE = 0.01


def policy() -> Policy:
    """``A2A_RETENTION`` as a policy (ValueError when it is not one: ``a2a.E130`` says why)."""
    return Policy.from_setting(a2a_settings.RETENTION)


def _batches(store: TaskStore, rules: Policy, now: dt.datetime | None, swept: Swept, **options: Any) -> Iterator:
    return sweep(store, rules, now=now, batch_size=a2a_settings.RETENTION_BATCH, swept=swept, **options)


def _counted(batch: list[Task]) -> None:
    for task in batch:
        RETENTION_DELETED.labels(task_state(task), agent_name(task)).inc()


def sweep_store(
    store: TaskStore,
    rules: Policy | None = None,
    *,
    now: dt.datetime | None = None,
    dry_run: bool = False,
    whole_contexts: bool = True,
    select: Callable[[Task], bool] | None = None,
    progress: Callable[[list[Task]], object] | None = None,
) -> Swept:
    """Delete what ``rules`` (default: ``A2A_RETENTION``) says has expired in ``store``,
    blocking, pausing between batches; ``progress`` hears each batch. See
    :func:`stores.retention.sweep` for the options."""
    started = time.monotonic()
    swept = Swept()
    options = {"dry_run": dry_run, "whole_contexts": whole_contexts, "select": select}
    for batch in _batches(store, rules if rules is not None else policy(), now, swept, **options):
        if not dry_run:
            _counted(batch)
        if progress is not None:
            progress(batch)
        time.sleep(PAUSE)
    if not dry_run:
        RETENTION_SECONDS.observe(time.monotonic() - started)
    return swept


async def asweep_store(store: TaskStore, rules: Policy | None = None, *, now: dt.datetime | None = None) -> Swept:
    """:func:`sweep_store` on an event loop: each batch in a worker thread (on the loop
    for a store that never blocks), a pause on the loop between batches."""
    started = time.monotonic()
    swept = Swept()
    batches = _batches(store, rules if rules is not None else policy(), now, swept)
    while (batch := await _io(store, next, batches, None)) is not None:
        _counted(batch)
        await asyncio.sleep(PAUSE)
    RETENTION_SECONDS.observe(time.monotonic() - started)
    return swept


async def sweep_all(rules: Policy | None = None) -> int:
    """One sweep of every store in use (:func:`a2a.agents.task_stores_in_use`); the number
    of tasks deleted. A store that fails is logged and left for the next sweep."""
    rules = rules if rules is not None else policy()
    deleted = 0
    for store in task_stores_in_use():
        try:
            swept = await asweep_store(store, rules)
        except Exception:
            logger.exception("the retention sweep of %r failed; trying again at the next one", store)
            continue
        deleted += swept.total
        if swept.total:
            logger.info("retention: deleted %d expired task(s) from %r (%s)", swept.total, store, swept.deleted)
    return deleted


async def keep_sweeping() -> None:
    """Sweep every ``A2A_RETENTION_INTERVAL`` seconds (with jitter) for as long as the
    loop runs; nothing while the interval is 0 or the policy empty (both read again
    each time, so a change of settings takes effect without a restart)."""
    first = True
    while True:
        try:
            interval = a2a_settings.RETENTION_INTERVAL
            rules = policy() if interval > 0 else Policy()
        except Exception:  # a2a.E130 (or the setting's own check) says why: nothing is deleted
            logger.exception("the retention settings cannot be used; no task is swept")
            interval, rules = 0.0, Policy()
        if interval <= 0:
            await asyncio.sleep(60)
            continue
        # jitter: the processes of one deployment do not all sweep at once
        await asyncio.sleep(interval * (random.uniform(0.1, 0.3) if first else random.uniform(0.8, 1.2)))
        first = False
        if rules:
            try:
                await sweep_all(rules)
            except Exception:  # the stores cannot be built now (stores.E001 says why)
                logger.exception("the retention sweep failed; trying again at the next one")


def sweep_once() -> int:
    """One sweep of every store in use, blocking (the body of the Tasks job
    :func:`a2a.runtime.worker.sweep_job`); the number of tasks deleted."""
    rules = policy()
    return sum(sweep_store(store, rules).total for store in task_stores_in_use()) if rules else 0


async def _io(store: TaskStore, function: Any, *args: Any) -> Any:
    if store.nonblocking:
        return function(*args)
    return await asyncio.to_thread(function, *args)
