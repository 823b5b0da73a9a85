"""The index the file store pages through: a mapped snapshot plus the changes since.

:class:`MappedIndex` answers every query as a :class:`~stores.index.TaskIndex` of the
same tasks would, reading only about a page of the snapshot's records (see
:mod:`stores.file.snapshot`); :class:`IndexSource` is what the index needs of the store
it indexes.
"""

from __future__ import annotations

import bisect
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from stores.base import Task, TaskPage, TaskQuery
from stores.cursors import decode_cursor, encode_cursor
from stores.file.snapshot import Column, MappedSnapshot, Row, SnapshotDamaged
from stores.file.snapshot import text as _text
from stores.file.snapshot import utf8 as _utf8
from stores.index import TaskIndex, fill_page
from stores.timestamps import format_timestamp


class MappedIndex:
    """What the file store pages through: a mapped snapshot (or none) plus the changes
    made since (a :class:`TaskIndex` of the tasks changed, and the ids whose snapshot
    record no longer holds), merged while walking. Each task's stamp is kept too.

    Answers every query as a :class:`TaskIndex` of the same tasks would; a page reads
    about a page of the snapshot's records, ``total`` is a lookup (a walk with a
    context or ``updated_after``, as there). Not thread-safe (the caller locks).
    Raises :class:`~stores.file.snapshot.SnapshotDamaged` when a record it reads does not
    check out."""

    def __init__(
        self,
        base: MappedSnapshot | None = None,
        changes: TaskIndex | None = None,
        stamps: dict[str, int] | None = None,
    ) -> None:
        self.base = base
        self._changes = changes if changes is not None else TaskIndex()
        self._stamps: dict[str, int] = stamps if stamps is not None else {}  # of the tasks in _changes
        self._shadowed: set[bytes] = set()  # ids whose base record no longer holds
        self._shadowed_counts: Counter[tuple[str | None, str | None]] = Counter()
        self._shadowed_n = 0

    def __len__(self) -> int:
        return (self.base.n if self.base else 0) - self._shadowed_n + len(self._changes)

    def __contains__(self, task_id: str) -> bool:
        if task_id in self._changes:
            return True
        return self.stamp_of(task_id) is not None

    def put(self, task: Task, stamp: int = 0, *, new: bool = False) -> None:
        """Index ``task`` (its file's version ``stamp``), replacing what was indexed;
        ``new``: the caller knows the snapshot has no record of it (no lookup there)."""
        if not new:
            self._shadow(task["id"])
        self._changes.put(task)
        self._stamps[task["id"]] = stamp

    def remove(self, task_id: str) -> None:
        self._shadow(task_id)
        self._changes.remove(task_id)
        self._stamps.pop(task_id, None)

    def _shadow(self, task_id: str) -> None:
        if self.base is None:
            return
        encoded = _utf8(task_id)
        if encoded in self._shadowed:
            return
        self._shadowed.add(encoded)
        i = self.base.find(encoded)
        if i is not None:
            _, _, state, owner, _ = self.base.row(i)
            values = self.base.values
            for key in ((values[owner], values[state]), (values[owner], None), (None, values[state]), (None, None)):
                self._shadowed_counts[key] += 1
            self._shadowed_n += 1

    def stamp_of(self, task_id: str) -> int | None:
        """The stamp of the version of ``task_id`` indexed; None when not indexed."""
        if task_id in self._changes:
            return self._stamps.get(task_id, 0)
        encoded = _utf8(task_id)
        if self.base is None or encoded in self._shadowed:
            return None
        i = self.base.find(encoded)
        return None if i is None else self.base.row(i)[1]

    def stamps(self) -> Iterator[tuple[str, int]]:
        """(id, stamp) of every task indexed (a generator: the caller may pause in it)."""
        if self.base is not None:
            shadowed = self._shadowed
            for key, stamp, _, _, _ in self.base.rows():
                raw_id = key.partition(b"\0")[2]
                if raw_id not in shadowed:
                    yield _text(raw_id), stamp
        for task_id in self._changes.ids():
            yield task_id, self._stamps.get(task_id, 0)

    def total(self, query: TaskQuery) -> int:
        """How many tasks match ``query`` (as :meth:`TaskIndex.total`)."""
        if query.updated_after is None and query.context_id is None:
            key = (query.owner, query.state)
            base = self.base.counts.get(key, 0) - self._shadowed_counts.get(key, 0) if self.base else 0
            return base + self._changes.total(query)
        return sum(1 for _ in self._walk(query, None))

    def page(self, query: TaskQuery, load: Callable[[str], Task | None]) -> TaskPage:
        """One page for ``query`` (as :meth:`TaskIndex.page`); ``load`` may remove the
        task it is given (gone) while the walk goes on."""
        cursor = _utf8("\0".join(decode_cursor(query.page_token)[:2])) if query.page_token else None
        page, last = fill_page(self._walk(query, cursor), query.page_size, load)
        token = ""
        if last is not None:
            updated, _, task_id = _text(last).partition("\0")
            token = encode_cursor(updated, task_id)
        return TaskPage(tasks=page, next_page_token=token, total_size=self.total(query))

    def _walk(self, query: TaskQuery, cursor: bytes | None) -> Iterator[tuple[bytes, str]]:
        """(key, id) of the tasks matching ``query`` newest first, from before
        ``cursor``: the snapshot's records (less the shadowed) and the changes, merged."""
        after = _utf8(format_timestamp(query.updated_after)) if query.updated_after else None
        changes = self._changes
        keys = changes.keys(query.context_id)
        j = len(keys) if cursor is None else bisect.bisect_left(keys, _text(cursor))
        base = self._base_walk(query, cursor)
        b = next(base, None)
        while True:
            change = _utf8(keys[j - 1]) if j else None
            if b is None and change is None:
                return
            if change is None or (b is not None and b[0] > change):
                assert b is not None
                key, raw_id, matches = b
                b = next(base, None)
            else:
                key, j = change, j - 1
                raw_id = key.partition(b"\0")[2]
                matches = changes.matches(_text(raw_id), query)
            if after is not None and key.partition(b"\0")[0] <= after:
                return  # everything further is older
            if matches:
                yield key, _text(raw_id)

    def _base_walk(self, query: TaskQuery, cursor: bytes | None) -> Iterator[tuple[bytes, bytes, bool]]:
        """(key, id, whether it matches) of the snapshot's records still current,
        newest first, from before ``cursor``; checks their order as it goes."""
        base = self.base
        if base is None or not base.n:
            return
        state, owner = base.code(query.state), base.code(query.owner)
        context = b""
        if query.context_id is None:
            rows: Iterable[tuple[bytes, int, int, int, bytes]] = _runs_before(
                base, base.bisect(cursor) if cursor else base.n
            )
        else:
            context = _utf8(query.context_id)
            lo, hi = base.context_range(context)
            if cursor:
                hi = bisect.bisect_left(Column(hi, base.context_position), base.bisect(cursor), lo, hi)
            rows = map(base.row, map(base.context_position, range(hi - 1, lo - 1, -1)))
        shadowed = self._shadowed
        previous = None
        for key, _, state_code, owner_code, record_context in rows:
            if previous is not None and key >= previous:
                raise SnapshotDamaged("records not in listing order")
            if query.context_id is not None and record_context != context:
                raise SnapshotDamaged("context order does not hold")
            previous = key
            task_id = key.partition(b"\0")[2]
            if task_id in shadowed:
                continue
            yield key, task_id, (state is None or state == state_code) and (owner is None or owner == owner_code)

    def rows(self) -> list[Row]:
        """Every task, in listing order: what :func:`write_snapshot` takes."""
        rows: list[Row] = []
        if self.base is not None:
            values, shadowed = self.base.values, self._shadowed
            for raw_key, stamp, state_code, owner_code, raw_context in self.base.rows():
                if raw_key.partition(b"\0")[2] not in shadowed:
                    rows.append((raw_key, raw_context, values[state_code], values[owner_code], stamp))
        stamps = self._stamps
        for task_id, (key, context, state, owner) in self._changes.entries():
            rows.append((_utf8(key), _utf8(context), state, owner, stamps.get(task_id, 0)))
        rows.sort(key=operator.itemgetter(0))  # two sorted runs: merged in linear time
        return rows

    def rebased(self, base: MappedSnapshot, changed: Iterable[str]) -> MappedIndex:
        """This index over a newer snapshot of it, that ``changed`` (the ids changed
        since that snapshot was taken) are kept over."""
        index = MappedIndex(base)
        for task_id in changed:
            index._shadow(task_id)
            entry = self._changes.entry(task_id)
            if entry is not None:
                index._changes.put_entry(task_id, entry)
                index._stamps[task_id] = self._stamps.get(task_id, 0)
        return index

    def frozen(self) -> MappedIndex:
        """A copy that later changes to this one do not touch (the base is shared: it
        never changes): what a snapshot is written from outside the lock."""
        copy = MappedIndex(self.base, self._changes.copy(), dict(self._stamps))
        copy._shadowed = set(self._shadowed)
        copy._shadowed_counts = Counter(self._shadowed_counts)
        copy._shadowed_n = self._shadowed_n
        return copy


def _runs_before(base: MappedSnapshot, stop: int) -> Iterator[tuple[bytes, int, int, int, bytes]]:
    """The records before ``stop``, last first, read in runs (64 first: about a page)."""
    count = 64
    while stop > 0:
        yield from base.rows_before(stop, count)
        stop -= count
        count = min(count * 2, 4096)


class IndexSource(Protocol):
    """What the shared index (:class:`stores.file.index.SharedIndex`) needs of the store
    it indexes (the file store). A
    *stamp* identifies one version of a task's file (the file store's: its inode, taken
    before the file is read, so a stamp never claims a newer version than was read);
    0 is "unknown" (checked again)."""

    def load(self, task_id: str) -> Task | None: ...

    def load_stamped(self, task_id: str) -> tuple[Task | None, int]: ...

    def read_file(self, name: str) -> tuple[Task | None, int]: ...

    def files(self) -> Iterable[tuple[str, int]]: ...

    def name_of(self, task_id: str) -> str: ...

    def version(self) -> int: ...
