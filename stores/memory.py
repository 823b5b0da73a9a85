"""The in-memory store: the default, fast, and gone when the process exits."""

from __future__ import annotations

import threading

import orjson

from .base import Task, TaskPage, TaskQuery, TaskStore, check_task, page_in_memory


class MemoryTaskStore(TaskStore):
    """Tasks in a dict, one per process.

    Each task is kept serialized, so a caller that mutates a task it got (or saved)
    never changes the stored copy behind the store's back, exactly as with the
    durable stores.
    """

    nonblocking = True

    def __init__(self) -> None:
        self._tasks: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, task_id: str) -> Task | None:
        raw = self._tasks.get(task_id) if isinstance(task_id, str) else None
        return orjson.loads(raw) if raw is not None else None

    def save(self, task: Task) -> Task:
        task_id = check_task(task)
        raw = orjson.dumps(task)
        with self._lock:
            self._tasks[task_id] = raw
        return task

    def list(self, query: TaskQuery | None = None) -> TaskPage:
        with self._lock:
            raws = list(self._tasks.values())
        return page_in_memory([orjson.loads(r) for r in raws], query or TaskQuery())

    def delete(self, task_id: str) -> bool:
        with self._lock:
            return self._tasks.pop(task_id, None) is not None

    # Dict operations never block: answer on the event loop without a thread hop.
    async def aget(self, task_id: str) -> Task | None:
        return self.get(task_id)

    async def asave(self, task: Task) -> Task:
        return self.save(task)

    async def adelete(self, task_id: str) -> bool:
        return self.delete(task_id)

    def __len__(self) -> int:
        return len(self._tasks)
