"""Every state change of a Task happens here: a save through the store, then an event.

A change is a function from the stored task to its next version (or None for "no
change"); :func:`transition` runs it on the task as stored, under a per-task lock,
so two changes of one task in this process never interleave, and a terminal state
is never overwritten. The store stays the single source of truth: nothing here
keeps a copy.
"""

from __future__ import annotations

import asyncio
import threading
import zlib
from collections.abc import Callable

from stores.base import TERMINAL_STATES, Task, TaskStore, task_state

from .events import bus

Change = Callable[[Task], Task | None]

_LOCKS = tuple(threading.Lock() for _ in range(64))


def _lock_for(task_id: str) -> threading.Lock:
    return _LOCKS[zlib.crc32(task_id.encode("utf-8", "surrogatepass")) % len(_LOCKS)]


def transition_sync(store: TaskStore, task_id: str, change: Change) -> Task | None:
    """Apply ``change`` to the stored task and save the result; return what was saved
    (None when the task is missing or ``change`` declined). Blocking."""
    with _lock_for(task_id):
        task = store.get(task_id)
        if task is None:
            return None
        new = change(task)
        if new is None:
            return None
        store.save(new)
        return new


async def transition(store: TaskStore, task_id: str, change: Change) -> Task | None:
    """:func:`transition_sync` without blocking the loop, then publish what was saved."""
    if store.nonblocking:
        task = transition_sync(store, task_id, change)
    else:
        task = await asyncio.to_thread(transition_sync, store, task_id, change)
    if task is not None:
        bus.publish(task)
    return task


async def create(store: TaskStore, task: Task) -> Task:
    """Save a new task and publish it."""
    await store.asave(task)
    bus.publish(task)
    return task


def is_terminal(task: Task) -> bool:
    return task_state(task) in TERMINAL_STATES
