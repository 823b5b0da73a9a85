"""What many tests need: waiting for a task or a condition (one copy, not one per file)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any

from stores.base import StoreUnavailable, Task, TaskStore


def wait_for_state(store: TaskStore, task_id: str, states: Collection[str], timeout: float = 10.0) -> Task:
    """The task once it is in one of ``states`` (a store that cannot read right now is
    asked again); AssertionError naming where it stood after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    task = None
    while time.monotonic() < deadline:
        try:
            task = store.get(task_id)
        except StoreUnavailable:
            task = None
        if task and task["status"]["state"] in states:
            return task
        time.sleep(0.01)
    raise AssertionError(f"task {task_id} never reached {set(states)}: {task}")


def wait_until(predicate: Callable[[], Any], *, timeout: float = 5.0, what: str = "a condition") -> Any:
    """``predicate()``'s first truthy value, asked every 10 ms; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
