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

:class:`TaskIndex` is not thread-safe: the memory store calls it under its own lock.
The file store keeps the tasks changed since its snapshot in one
(:class:`stores.file.mapped.MappedIndex`).
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from stores.base import Task, TaskPage, TaskQuery
from stores.cursors import decode_cursor, encode_cursor
from stores.fields import task_state
from stores.fields import task_updated as _updated
from stores.scope import task_scope
from stores.timestamps import format_timestamp

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

    def entries(self) -> Iterable[tuple[str, tuple[str, str, str, str]]]:
        """(id, (sort key, context, state, owner)) of every task."""
        return self._entries.items()

    def copy(self) -> TaskIndex:
        """An index later changes to this one do not touch."""
        copy = TaskIndex()
        copy._entries = dict(self._entries)
        copy._all = list(self._all)
        copy._by_context = {c: k if isinstance(k, str) else list(k) for c, k in self._by_context.items()}
        copy._counts = Counter(self._counts)
        copy._interned = self._interned
        return copy

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
            self._intern(task_scope(task)),
        )
        self.put_entry(task_id, entry)

    def entry(self, task_id: str) -> tuple[str, str, str, str] | None:
        """What is indexed of ``task_id``: (sort key, context, state, owner), or None."""
        return self._entries.get(task_id)

    def put_entry(self, task_id: str, entry: tuple[str, str, str, str]) -> None:
        """Index ``task_id`` as ``entry`` (what :meth:`entry` gives)."""
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

    def export(self) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
        """The index as columns (ids, status timestamps, contexts, states, owners), in
        listing order: what :meth:`restore` takes back (a persisted snapshot)."""
        entries = self._entries
        split = [key.partition(SEP) for key in self._all]
        ids = [task_id for _, _, task_id in split]
        rows = [entries[task_id] for task_id in ids]
        return (
            ids,
            [updated for updated, _, _ in split],
            [r[1] for r in rows],
            [r[2] for r in rows],
            [r[3] for r in rows],
        )

    @classmethod
    def of(cls, tasks: Iterable[Task]) -> TaskIndex:
        """An index of ``tasks`` (the last one of an id wins), built sorted at once: a
        ``put`` each would move the list's tail for every task out of order."""
        rows: dict[str, tuple[str, str, str, str]] = {}
        values: dict[str, str] = {}
        intern = values.setdefault
        for task in tasks:
            context = task.get("contextId")
            context = context if isinstance(context, str) else ""
            state, owner = task_state(task), task_scope(task)
            rows[task["id"]] = (_updated(task), intern(context, context), intern(state, state), intern(owner, owner))
        if not rows:
            return cls()
        ordered = sorted(rows.items(), key=lambda row: sort_key(row[1][0], row[0]))
        ids, updated, contexts, states, owners = (list(c) for c in zip(*((i, *r) for i, r in ordered), strict=True))
        return cls.restore(ids, updated, contexts, states, owners)

    @classmethod
    def restore(cls, ids: list, updated: list, contexts: list, states: list, owners: list) -> TaskIndex:
        """An index from :meth:`export`'s columns; ValueError when they do not make one
        (lengths, types, not in listing order, an id twice). The checks and the build
        run in C loops where they can."""
        n = len(ids)
        columns = (ids, updated, contexts, states, owners)
        if not all(isinstance(column, list) and len(column) == n for column in columns):
            raise ValueError("columns of different lengths")
        try:
            if SEP in "".join(updated):
                raise ValueError("a timestamp holds NUL")
            for column in (ids, contexts, states, owners):
                "".join(column)  # a TypeError unless every value is a str
            keys = list(map(SEP.join, zip(updated, ids, strict=True)))
        except TypeError:
            raise ValueError("not strings") from None
        if not all(map(operator.lt, keys, itertools.islice(keys, 1, None))):
            raise ValueError("not in listing order")
        index = cls()
        index._entries = dict(zip(ids, zip(keys, contexts, states, owners, strict=True), strict=True))
        if len(index._entries) != n:
            raise ValueError("an id twice")
        index._all = keys
        by_context = index._by_context
        for key, context in zip(keys, contexts, strict=True):  # keys ascending: appended in order
            keys_of = by_context.get(context)
            if keys_of is None:
                by_context[context] = key
            elif keys_of.__class__ is str:
                by_context[context] = [keys_of, key]
            else:
                keys_of.append(key)  # type: ignore[union-attr]
        counts = index._counts
        counts.update(zip(owners, states, strict=True))
        for (owner, state), k in list(counts.items()):
            counts[(owner, None)] += k
            counts[(None, state)] += k
            counts[(None, None)] += k
        return index

    def keys(self, context_id: str | None) -> list[str]:
        """The sort keys of all tasks, or of a context's, ascending (the index's own list:
        read it, do not change it)."""
        if context_id is None:
            return self._all
        keys = self._by_context.get(context_id, [])
        return [keys] if isinstance(keys, str) else keys

    def context_ids(self, context_id: str, owner: str) -> list[str]:
        """The ids of ``owner``'s tasks in ``context_id`` (one conversation)."""
        return [i for i in (_split(k)[1] for k in self.keys(context_id)) if self._entries[i][3] == owner]

    def page(self, query: TaskQuery, load: Callable[[str], Task | None]) -> TaskPage:
        """One page for ``query``, newest-updated first, the tasks got with ``load(id)``
        (one that loads as None is skipped, and the page filled from the next ones)."""
        keys = self.keys(query.context_id)
        after = format_timestamp(query.updated_after) if query.updated_after else None
        position = len(keys)
        if query.page_token:
            position = bisect.bisect_left(keys, sort_key(*decode_cursor(query.page_token)))

        def matching() -> Iterator[tuple[str, str]]:
            for i in range(position - 1, -1, -1):
                updated, task_id = _split(keys[i])
                if after is not None and updated <= after:
                    return  # everything further is older
                if self.matches(task_id, query):
                    yield keys[i], task_id

        page, last_key = fill_page(matching(), query.page_size, load)
        token = encode_cursor(*_split(last_key)) if last_key is not None else ""
        return TaskPage(tasks=page, next_page_token=token, total_size=self.total(query))

    def matches(self, task_id: str, query: TaskQuery) -> bool:
        """Whether ``task_id`` is indexed in the state and for the owner ``query`` asks."""
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
        keys = self.keys(query.context_id)
        n = 0
        for i in range(len(keys) - 1, -1, -1):
            updated, task_id = _split(keys[i])
            if after is not None and updated <= after:
                break
            n += self.matches(task_id, query)
        return n


K = TypeVar("K", str, bytes)  # a sort key: TaskIndex's str, the mapped snapshot's bytes


def fill_page(
    candidates: Iterable[tuple[K, str]], page_size: int, load: Callable[[str], Task | None]
) -> tuple[list[Task], K | None]:
    """Up to ``page_size`` tasks loaded from the ``(sort key, id)`` candidates, newest
    first (one that loads as None is skipped and the page filled from the next ones),
    and the last one's key when more candidates follow (the next page starts there)."""
    page: list[Task] = []
    last: K | None = None
    for key, task_id in candidates:
        if len(page) == page_size:
            return page, last
        task = load(task_id)
        if task is not None:
            page.append(task)
            last = key
    return page, None


def _insert(keys: list[str], key: str) -> None:
    if not keys or keys[-1] < key:
        keys.append(key)  # the usual case: a transition that happens now
    else:
        bisect.insort(keys, key)


def _delete(keys: list[str], key: str) -> None:
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        del keys[i]
