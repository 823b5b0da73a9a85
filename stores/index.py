"""A listing index for the stores that keep no database: pages without full scans.

:class:`TaskIndex` keeps, per task, what ``list`` filters and orders on (status
timestamp, id, context, state, owner), the tasks in their listing order (one sorted
list for all, one per context) and counts per owner and state, so a page costs a
bisect plus a walk of about one page, and ``total_size`` a dict lookup (with a
context, a walk of that context's tasks), whatever the number of tasks. A filter on
a state few tasks are in walks past the others (no index per state). Updates are
cheap when the task's new timestamp is recent (the usual case: a transition happens
now, so its key goes to the end); moving a very old task costs a ``memmove`` of the
list after it (8 bytes a task).

Not thread-safe: the store calls it under its own lock. The memory store keeps one;
the file store builds one from its directory (see ``stores.file``).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable

from .base import Task, TaskPage, TaskQuery, decode_cursor, encode_cursor, format_timestamp, task_owner, task_state
from .base import task_updated as _updated

#: Timestamps never contain NUL: ``updated + SEP + id`` sorts exactly as ``(updated, id)``.
SEP = "\x00"


def sort_key(updated: str, task_id: str) -> str:
    return f"{updated}{SEP}{task_id}"


def _split(key: str) -> tuple[str, str]:
    updated, _, task_id = key.partition(SEP)
    return updated, task_id


class TaskIndex:
    """What ``list`` needs of every task, in listing order. See the module doc."""

    def __init__(self) -> None:
        # id -> (sort key, context id, state, owner)
        self._entries: dict[str, tuple[str, str, str, str]] = {}
        self._all: list[str] = []  # sort keys, ascending (a page walks it backwards)
        # context id -> its tasks' sort keys, ascending (a lone task's key as a str: most
        # contexts hold one task, and a list per task would double the index's size)
        self._by_context: dict[str, str | list[str]] = {}
        # (owner, state), each possibly None (any): how many tasks match
        self._counts: Counter[tuple[str | None, str | None]] = Counter()
        self._interned: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._entries

    def ids(self) -> list[str]:
        return list(self._entries)

    def _intern(self, value: str) -> str:
        return self._interned.setdefault(value, value) if len(self._interned) < 100_000 else value

    def put(self, task: Task) -> None:
        """Index ``task`` (replacing what was indexed for its id)."""
        task_id = task["id"]
        context = task.get("contextId")
        entry = (
            sort_key(_updated(task), task_id),
            self._intern(context if isinstance(context, str) else ""),
            self._intern(task_state(task)),
            self._intern(task_owner(task)),
        )
        old = self._entries.get(task_id)
        if old == entry:
            return
        if old is not None:
            self._unlink(old)
        self._entries[task_id] = entry
        key, context, state, owner = entry
        _insert(self._all, key)
        keys = self._by_context.get(context)
        if keys is None:
            self._by_context[context] = key
        elif isinstance(keys, str):
            self._by_context[context] = sorted((keys, key))
        else:
            _insert(keys, key)
        self._count(owner, state, 1)

    def remove(self, task_id: str) -> None:
        old = self._entries.pop(task_id, None)
        if old is not None:
            self._unlink(old)

    def _unlink(self, entry: tuple[str, str, str, str]) -> None:
        key, context, state, owner = entry
        _delete(self._all, key)
        keys = self._by_context.get(context)
        if isinstance(keys, str):
            if keys == key:
                del self._by_context[context]
        elif keys is not None:
            _delete(keys, key)
            if len(keys) == 1:
                self._by_context[context] = keys[0]
        self._count(owner, state, -1)

    def _count(self, owner: str, state: str, n: int) -> None:
        counts = self._counts
        for key in ((owner, state), (owner, None), (None, state), (None, None)):
            counts[key] += n
            if not counts[key]:
                del counts[key]

    def _keys(self, context_id: str | None) -> list[str]:
        if context_id is None:
            return self._all
        keys = self._by_context.get(context_id, [])
        return [keys] if isinstance(keys, str) else keys

    def page(self, query: TaskQuery, load: Callable[[str], Task | None]) -> TaskPage:
        """One page for ``query``, newest-updated first, the tasks got with ``load(id)``
        (one that loads as None is skipped, and the page filled from the next ones)."""
        keys = self._keys(query.context_id)
        after = format_timestamp(query.updated_after) if query.updated_after else None
        position = len(keys)
        if query.page_token:
            position = bisect.bisect_left(keys, sort_key(*decode_cursor(query.page_token)))
        page: list[Task] = []
        last_key = ""
        more = False
        for i in range(position - 1, -1, -1):
            key = keys[i]
            updated, task_id = _split(key)
            if after is not None and updated <= after:
                break  # everything further is older
            if not self._matches(task_id, query):
                continue
            if len(page) == query.page_size:
                more = True
                break
            task = load(task_id)
            if task is None:
                continue
            page.append(task)
            last_key = key
        token = encode_cursor(*_split(last_key)) if more else ""
        return TaskPage(tasks=page, next_page_token=token, total_size=self.total(query))

    def _matches(self, task_id: str, query: TaskQuery) -> bool:
        entry = self._entries.get(task_id)
        if entry is None:
            return False
        _, _, state, owner = entry
        return (query.state is None or state == query.state) and (query.owner is None or owner == query.owner)

    def total(self, query: TaskQuery) -> int:
        """How many tasks match ``query`` (all pages): a lookup without a context or
        ``updated_after``; else a walk over the context's tasks, or over the tasks
        newer than ``updated_after``."""
        if query.updated_after is None and query.context_id is None:
            return self._counts.get((query.owner, query.state), 0)
        after = format_timestamp(query.updated_after) if query.updated_after else None
        keys = self._keys(query.context_id)
        n = 0
        for i in range(len(keys) - 1, -1, -1):
            updated, task_id = _split(keys[i])
            if after is not None and updated <= after:
                break
            n += self._matches(task_id, query)
        return n


def _insert(keys: list[str], key: str) -> None:
    if not keys or keys[-1] < key:
        keys.append(key)  # the usual case: a transition that happens now
    else:
        bisect.insort(keys, key)


def _delete(keys: list[str], key: str) -> None:
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        del keys[i]
