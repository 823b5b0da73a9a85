"""Every state change of a Task happens here: a save through the store, then an event.

A change is a function from the stored task to its next version (or None for "no
change"); :func:`transition` runs it on the task as stored, under a per-task lock,
so two changes of one task in this process never interleave, and a terminal state
is never overwritten. Each saved version carries ``_version`` (1, 2, ...), which
streams use to tell what a snapshot already contains. The store stays the single
source of truth: nothing here keeps a copy.
"""

from __future__ import annotations

import asyncio
import threading
import zlib
from collections.abc import Callable

from stores.base import TERMINAL_STATES, Task, TaskStore, task_state

from .events import TaskEvent, bus

Change = Callable[[Task], Task | None]
#: Builds the event for a saved version (default: a status update).
EventFor = Callable[[Task], TaskEvent]

_LOCKS = tuple(threading.Lock() for _ in range(64))


def _lock_for(task_id: str) -> threading.Lock:
    return _LOCKS[zlib.crc32(task_id.encode("utf-8", "surrogatepass")) % len(_LOCKS)]


def transition_sync(
    store: TaskStore, task_id: str, change: Change, event: EventFor | None = None
) -> Task | None:
    """Apply ``change`` to the stored task, save the result and publish it; return
    what was saved (None when the task is missing or ``change`` declined). Blocking;
    callable from any thread."""
    with _lock_for(task_id):
        task = store.get(task_id)
        if task is None:
            return None
        version = task.get("_version", 0)
        new = change(task)
        if new is None:
            return None
        new["_version"] = version + 1
        store.save(new)
        bus.publish(new, event(new) if event else None)
        return new


async def transition(
    store: TaskStore, task_id: str, change: Change, event: EventFor | None = None
) -> Task | None:
    """:func:`transition_sync` without blocking the event loop."""
    if store.nonblocking:
        return transition_sync(store, task_id, change, event)
    return await asyncio.to_thread(transition_sync, store, task_id, change, event)


async def create(store: TaskStore, task: Task) -> Task:
    """Save a new task (version 1) and publish it."""
    task["_version"] = 1
    await store.asave(task)
    bus.publish(task, TaskEvent(task, kind="task"))
    return task


def is_terminal(task: Task) -> bool:
    return task_state(task) in TERMINAL_STATES
