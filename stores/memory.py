"""The in-memory store: the default, fast, and gone when the process exits."""

from __future__ import annotations

import builtins
import contextlib
import threading
from collections.abc import Collection, Iterator, Sequence

import orjson

from stores.base import StaleTaskError, Task, TaskPage, TaskQuery, TaskStore
from stores.fields import check_task, task_version
from stores.index import TaskIndex
from stores.push_configs import MemoryPushConfigStore, PushConfigStore
from stores.scope import task_context


class MemoryTaskStore(TaskStore):
    """Tasks in a dict, one per process.

    Each task is kept serialized, so a caller that mutates a task it got (or saved)
    never changes the stored copy behind the store's back, exactly as with the
    durable stores. A :class:`~stores.index.TaskIndex` answers ``list`` without
    reading every task.
    """

    nonblocking = True
    supports_compare_and_swap = True

    def __init__(self) -> None:
        self._tasks: dict[str, bytes] = {}
        self._versions: dict[str, int] = {}  # each task's _version, for compare-and-swap saves
        self._index = TaskIndex()
        self._lock = threading.RLock()  # re-entrant: a save inside locked()

    def create_push_configs(self) -> PushConfigStore:
        return MemoryPushConfigStore()

    def get(self, task_id: str) -> Task | None:
        raw = self._tasks.get(task_id) if isinstance(task_id, str) else None
        return orjson.loads(raw) if raw is not None else None

    def save(self, task: Task, expected_version: int | None = None) -> Task:
        task_id = check_task(task)
        # A copy: orjson's own bytes object keeps a 4 KB buffer however short the JSON.
        raw = bytes(memoryview(orjson.dumps(task)))
        with self._lock:
            if expected_version is not None:
                found = self._versions.get(task_id) if task_id in self._tasks else None
                if (found or 0) != expected_version:
                    raise StaleTaskError(task_id, expected_version, found)
            self._tasks[task_id] = raw
            self._versions[task_id] = task_version(task)
            self._index.put(task)
        return task

    @contextlib.contextmanager
    def locked(self, task_id: str) -> Iterator[None]:
        """The store's lock: every other thread's save and delete waits (there is no
        other process)."""
        with self._lock:
            yield

    def list(self, query: TaskQuery | None = None) -> TaskPage:
        with self._lock:
            return self._index.page(query or TaskQuery(), self.get)

    def delete(self, task_id: str) -> bool:
        """Remove the task and its push notification configs; True when there was a task."""
        with self._lock:
            self._versions.pop(task_id, None)
            self._index.remove(task_id)
            found = self._tasks.pop(task_id, None) is not None
        self.push_configs.delete_task_push_configs(task_id)
        return found

    def delete_many(self, tasks: Collection[Task]) -> builtins.list[str]:
        """Each task unchanged since it was read, under the lock (one task at a time)."""
        gone = []
        for task in tasks:
            task_id = task["id"]
            with self._lock:
                if task_id not in self._tasks or self._versions.get(task_id) != task_version(task):
                    continue
                self._versions.pop(task_id, None)
                self._index.remove(task_id)
                del self._tasks[task_id]
            self.push_configs.delete_task_push_configs(task_id)
            gone.append(task_id)
        return gone

    def delete_contexts(self, contexts: Sequence[Collection[Task]]) -> builtins.list[Task]:
        """Each context whole or not at all, decided and deleted under the store's lock,
        which every save (a task created in the context, one resumed) takes too."""
        deleted: builtins.list[Task] = []
        for tasks in contexts:
            read = {t["id"]: task_version(t) for t in tasks}
            with self._lock:
                if not tasks or self._context_versions(next(iter(tasks)), read) != read:
                    continue
                for task_id in read:
                    self._versions.pop(task_id, None)
                    self._index.remove(task_id)
                    del self._tasks[task_id]
            for task_id in read:
                self.push_configs.delete_task_push_configs(task_id)
            deleted += tasks
        return deleted

    def _context_versions(self, task: Task, read: dict[str, int]) -> dict[str, int]:
        """Task id -> ``_version`` of what the conversation of ``task`` holds now (for a
        task without a context, of the tasks of ``read`` still stored). Under the lock."""
        key = task_context(task)
        if key is None:
            ids: Collection[str] = [i for i in read if i in self._tasks]
        else:
            ids = self._index.context_ids(key[1], key[0])
        return {i: self._versions.get(i, 0) for i in ids}

    # Dict operations never block: answer on the event loop without a thread hop.
    async def aget(self, task_id: str) -> Task | None:
        return self.get(task_id)

    async def asave(self, task: Task, expected_version: int | None = None) -> Task:
        return self.save(task, expected_version)

    async def alist(self, query: TaskQuery | None = None) -> TaskPage:
        return self.list(query)  # a page of the index: about one page of work

    async def adelete(self, task_id: str) -> bool:
        return self.delete(task_id)

    def __len__(self) -> int:
        return len(self._tasks)
