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
:class:`SharedIndex` wraps one for the file store, whose tasks other processes write
too (a journal tells each process what the others changed), and persists it beside
the tasks, so a restarted process loads it instead of reading every file.
"""

from __future__ import annotations

import _thread
import bisect
import contextlib
import itertools
import logging
import operator
import os
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson

from stores.base import StoreError, Task, TaskPage, TaskQuery
from stores.cursors import decode_cursor, encode_cursor
from stores.fields import task_state
from stores.fields import task_updated as _updated
from stores.scope import task_scope
from stores.snapshot import Column, MappedSnapshot, Row, SnapshotDamaged, write_snapshot
from stores.snapshot import text as _text
from stores.snapshot import utf8 as _utf8
from stores.timestamps import format_timestamp

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: one rotator at a time is not enforced
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

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
        run in C loops where they can: about 1 µs a task."""
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


class MappedIndex:
    """What the file store pages through: a mapped snapshot (or none) plus the changes
    made since (a :class:`TaskIndex` of the tasks changed, and the ids whose snapshot
    record no longer holds), merged while walking. Each task's stamp is kept too.

    Answers every query as a :class:`TaskIndex` of the same tasks would; a page reads
    about a page of the snapshot's records, ``total`` is a lookup (a walk with a
    context or ``updated_after``, as there). Not thread-safe (the caller locks).
    Raises :class:`~stores.snapshot.SnapshotDamaged` when a record it reads does not
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
    """What :class:`SharedIndex` needs of the store it indexes (the file store). A
    *stamp* identifies one version of a task's file (the file store's: its inode, taken
    before the file is read, so a stamp never claims a newer version than was read);
    0 is "unknown" (checked again)."""

    def load(self, task_id: str) -> Task | None: ...

    def load_stamped(self, task_id: str) -> tuple[Task | None, int]: ...

    def read_file(self, name: str) -> tuple[Task | None, int]: ...

    def files(self) -> Iterable[tuple[str, int]]: ...

    def name_of(self, task_id: str) -> str: ...

    def version(self) -> int: ...


#: The first bytes of a snapshot of the format before (read, then written again as format 2).
SNAPSHOT_MAGIC = b"a2a-task-index 1\n"
SNAPSHOT_NAME = "tasks"
#: A journal generation's first line: ``#<generation id>`` (writer lines never start so).
_GENERATION_MARK = b"#"


class SharedIndex:
    """A :class:`TaskIndex` over tasks that several processes write (the file store).

    **Kept current** from this instance's own writes (:meth:`saved`, :meth:`deleted`)
    and from a journal every instance on the directory appends to
    (``<journal_dir>/journal``, one line per write: who wrote, which task; ``O_APPEND``,
    never fsynced: it only tells the other processes which tasks to read again). Before
    each page the journal's new lines are read and the tasks other writers touched are
    loaded again. The journal is moved aside to ``journal.old`` when it outgrows
    ``max_journal_bytes``; each generation starts with a line naming it (a random id),
    so a position in it is never confused with one in a later generation; a reader that
    missed a whole generation rebuilds.

    **Persisted** (with ``snapshot_dir``): the index, each task's stamp and the journal
    position it reflects are written to ``<snapshot_dir>/tasks`` (temp file, fsync,
    rename: a reader sees a whole snapshot or the previous one) after a full build,
    on :meth:`persist` / :meth:`close`, and in the background once ``snapshot_every``
    changes went by; the index then pages through the file written (mapped, see
    :mod:`stores.snapshot`) plus the changes since. A new instance (a restarted
    process) maps it instead of reading every task file (nothing is read for the
    tasks a page does not reach), and trusts it only once checked:

    - the header's CRC-32 and length; each block's CRC-32 and the records' order as
      they are read (a torn or damaged snapshot is rebuilt from the files, and logged);
    - the journal generation it points into is still there (this one or the one
      before), at least as long: the tasks written since are replayed from it; else
      (it is older than two generations, or the journal was lost) a full build;
    - the directory agrees: when its ctime is still the one read just before the index
      last agreed with it (and that was already a second old then), nothing was made,
      replaced or removed in it since; else one directory listing (names and inode
      numbers, no file read, no ``stat``): a file whose stamp differs from the
      snapshot's (replaced by anything: another program, a copy, a write whose journal
      line a crash lost), a new file, a file gone, is read again. That listing runs in
      a background thread (pausing while pages are served) when the snapshot was
      written since the machine booted: every save a store acknowledged is then in the
      journal, replayed before the first page, and the listing only finds what no
      store acknowledged (see docs/stores.md); after a reboot (or where the boot is
      unknown) it runs before the first page.

    A snapshot is never required: without one (or when it is not trusted) the index is
    built from every file, as before. Several processes may load and write it: each
    snapshot is a whole index at a journal position, and the last rename wins.
    """

    def __init__(
        self,
        journal_dir: os.PathLike[str] | str,
        source: IndexSource,
        *,
        snapshot_dir: os.PathLike[str] | str | None = None,
        fsync: bool = True,
        max_journal_bytes: int = 16 << 20,
        snapshot_every: int = 10_000,
    ) -> None:
        self.journal_dir = Path(journal_dir)
        self.path = self.journal_dir / "journal"
        self.old_path = self.journal_dir / "journal.old"
        self.source = source
        self.snapshot_dir = Path(snapshot_dir) if snapshot_dir is not None else None
        self.fsync = fsync
        self.max_journal_bytes = max_journal_bytes
        self.snapshot_every = snapshot_every
        self._writer = os.urandom(6).hex().encode()
        self._lock = threading.Lock()  # the index and the journal reader; held briefly
        self._build_lock = threading.Lock()
        self._snapshot_lock = threading.Lock()
        self._index: MappedIndex | None = None
        self._odd: dict[str, str] = {}  # file name -> task id, where they differ
        self._distrust = False  # the snapshot failed a check: the next build reads the files
        self._check_first = False  # rebuild() was called: the next build checks the directory first
        # ids changed since the snapshot being written was taken (kept over it), and
        # since the background directory check started (it leaves them be)
        self._since: set[str] | None = None
        self._touched: set[str] | None = None
        self._paging = 0  # pages being served: the background check waits for none
        self._quiet = threading.Condition()
        self.checked = threading.Event()  # the index agrees with the directory (set once it does)
        self._changes = 0  # applied to the index since the snapshot it was loaded or saved as
        # [directory version (ctime), when read]: the index agreed with the directory then
        self._directory: list[int] | None = None
        self._building = False
        self._pending: set[str] = set()  # saved here while the index was being built
        self._fd: int | None = None  # the journal generation being read
        self._old_fd: int | None = None  # the one before (late appends land there)
        self._partial: dict[int, bytes] = {}
        self._generations: dict[int, str] = {}  # descriptor -> its generation's id
        #: How the last build went: "snapshot" (loaded, checked), "full" (every file read).
        self.last_build = ""

    # --- writes (every save and delete of the store) --------------------------------

    def saved(self, task: Task, stamp: int = 0) -> None:
        self._append(task["id"])
        self._follow(task["id"], task, stamp)
        self._maybe_persist()

    def deleted(self, task_id: str) -> None:
        self._append(task_id)
        self._follow(task_id, None, 0)

    def _follow(self, task_id: str, task: Task | None, stamp: int) -> None:
        """Index this instance's own write (a snapshot found damaged meanwhile is
        rebuilt: the write itself is done, never reported failed for it)."""
        try:
            with self._lock:
                if self._index is not None:
                    if task is None:
                        self._remove(task_id)
                    else:
                        self._put(task, stamp)
                    self._changes += 1
                elif self._building:
                    self._pending.add(task_id)
        except SnapshotDamaged as exc:
            self._distrusted(exc)

    def _put(self, task: Task, stamp: int, *, new: bool = False) -> None:
        """Index ``task`` (under the lock, the index built; ``new``: see MappedIndex.put)."""
        assert self._index is not None
        task_id = task["id"]
        self._index.put(task, stamp, new=new)
        self._note(task_id)
        name = self.source.name_of(task_id)
        if name != task_id:
            self._odd[name] = task_id

    def _remove(self, task_id: str) -> None:
        assert self._index is not None
        self._index.remove(task_id)
        self._note(task_id)
        name = self.source.name_of(task_id)
        if name != task_id and self._odd.get(name) == task_id:
            del self._odd[name]

    def _note(self, task_id: str) -> None:
        for changed in (self._since, self._touched):
            if changed is not None:
                changed.add(task_id)

    def _append(self, task_id: str) -> None:
        line = self._writer + b" " + orjson.dumps(task_id) + b"\n"
        fd = self._open_for_append()
        try:
            os.write(fd, line)  # one write of a short line with O_APPEND: never interleaved
            size = os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
        if size > self.max_journal_bytes:
            self._rotate()

    def _open_for_append(self) -> int:
        for _ in range(100):
            try:
                return os.open(self.path, os.O_WRONLY | os.O_APPEND)
            except FileNotFoundError:
                self._create_generation()
        raise OSError(f"could not open {self.path}")  # pragma: no cover

    def _create_generation(self) -> None:
        """Create the journal with its first line, ``#<generation id>``, atomically (a
        temp file linked into place: no one ever sees a journal without its line)."""
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.journal_dir, prefix=".journal-")
        try:
            os.write(fd, _GENERATION_MARK + os.urandom(8).hex().encode() + b"\n")
            os.fchmod(fd, 0o666 & ~_umask())
            with contextlib.suppress(FileExistsError):  # another writer made it first
                os.link(tmp, self.path)
        finally:
            os.close(fd)
            os.unlink(tmp)

    def _rotate(self, *, force: bool = False) -> None:
        """Move the journal aside (one rotator at a time; readers follow, see _catch_up)."""
        lock = os.open(self.journal_dir / "journal.lock", os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # another process is rotating it
            with contextlib.suppress(FileNotFoundError):
                if force or os.stat(self.path).st_size > self.max_journal_bytes:
                    os.replace(self.path, self.old_path)
        finally:
            os.close(lock)

    # --- reads ----------------------------------------------------------------------

    def page(self, query: TaskQuery) -> TaskPage:
        with self._quiet:
            self._paging += 1
        try:
            for _ in range(3):
                try:
                    self._ensure_built()
                    with self._lock:
                        if self._catch_up() and self._index is not None:
                            page = self._index.page(query, self._load_or_forget)
                            break
                except SnapshotDamaged as exc:
                    self._distrusted(exc)
            else:
                raise RuntimeError("the task index keeps being rebuilt")  # pragma: no cover
        finally:
            with self._quiet:
                self._paging -= 1
                self._quiet.notify_all()
        self._maybe_persist()
        return page

    def _distrusted(self, exc: Exception) -> None:
        """A snapshot record failed its check: log, and build the index from the files."""
        logger.warning("task index snapshot in %s does not check out (%s): rebuilding it", self.snapshot_dir, exc)
        with self._lock:
            self._distrust = True
            self._index = None

    def rebuild(self) -> None:
        """Forget the index: the next page builds it again (from the snapshot, checked
        against the directory before that page, or from every file)."""
        with self._lock:
            self._index = None
            self._check_first = True

    def close(self) -> None:
        """Persist the index (with a snapshot directory), then close the journal (a
        later page opens it again)."""
        with contextlib.suppress(OSError, StoreError):
            self.persist()
        with self._lock:
            self._index = None
            self._close_journal()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._close_journal()

    def __len__(self) -> int:
        self._ensure_built()
        with self._lock:
            return len(self._index) if self._index is not None else 0

    def _load_or_forget(self, task_id: str) -> Task | None:
        task = self.source.load(task_id)
        if task is None and self._index is not None:
            self._remove(task_id)  # gone, or damaged: listed again once saved again
        return task

    def _ensure_built(self) -> None:
        if self._index is not None:
            return
        with self._build_lock:
            if self._index is not None:
                return
            snapshot = None if self._distrust else self._read_snapshot()
            with self._lock:
                self._close_journal()
                # Lines this instance wrote before now are replayed like any other's (a
                # new writer id): the snapshot may predate them.
                self._writer = os.urandom(6).hex().encode()
                if snapshot is not None and not self._resume_journal(snapshot[2]):
                    logger.info("task index snapshot in %s is older than the journal: rebuilding", self.snapshot_dir)
                    snapshot = None
                if snapshot is None:
                    self._open_journal(at_end=True)  # what others write from now on is replayed
                self._building = True
            background = False
            try:
                directory = snapshot[3] if snapshot is not None else None
                if self.snapshot_dir is not None:  # made now: making it changes the directory
                    self.snapshot_dir.mkdir(parents=True, exist_ok=True)
                checked = directory is not None and self._unchanged(directory)
                if not checked:
                    # what the directory looks like from here on is what the index will say
                    directory = [self.source.version(), time.time_ns()]
                changed = 0
                if snapshot is not None:
                    index, odd, _, _, boot, changed = snapshot
                    # Since the boot the snapshot was written in, every acknowledged save
                    # is in the journal: the listing only finds what none acknowledged.
                    background = not checked and not self._check_first and boot is not None and boot == _boot_id()
                    if not checked and not background:
                        read = self._check(index, odd, lambda: None)
                        changed = read if changed >= 0 else changed
                else:
                    index, odd = self._read_all()
                    changed = -1
            except BaseException:
                with self._lock:
                    self._building = False
                    self._pending.clear()
                raise
            with self._lock:
                self._index, self._odd, self._building = index, odd, False
                self._check_first = False
                self._directory = None if background else directory
                touched: set[str] | None = set() if background else None
                self._touched = touched
                self._changes = changed if changed >= 0 else 0
                self.last_build = "snapshot" if snapshot is not None else "full"
                pending, self._pending = self._pending, set()
                self._reload_all(pending)
            if background:
                self.checked.clear()
                # not threading.Thread: its start() waits until the thread runs, which on
                # a busy machine is milliseconds of this first page's time
                _thread.start_new_thread(self._check_in_background, (directory, touched))
            else:
                self.checked.set()
        if changed < 0 or changed >= self.snapshot_every:
            with contextlib.suppress(OSError, StoreError):
                self.persist()  # the next process starts from here

    def _read_all(self) -> tuple[MappedIndex, dict[str, str]]:
        """An index of every task file (the build without a snapshot)."""
        stamps: dict[str, int] = {}
        odd: dict[str, str] = {}
        tasks = []
        for name, _ in self.source.files():
            task, stamp = self.source.read_file(name)
            if task is not None:
                tasks.append(task)
                stamps[task["id"]] = stamp
                if name != task["id"]:
                    odd[name] = task["id"]
        return MappedIndex(None, TaskIndex.of(tasks), stamps), odd

    def _unchanged(self, directory: Any) -> bool:
        """Whether the directory is as it was when the snapshot's index last agreed with
        it: its version (the file store's: the directory's ctime) is the same, and was
        already a second old then (a change made in the same tick of the filesystem's
        clock as that check would not show)."""
        try:
            version, seen_at = directory
            return (
                isinstance(version, int) and isinstance(seen_at, int) and version < seen_at - 1_000_000_000
            ) and self.source.version() == version
        except (TypeError, ValueError, OSError):
            return False

    def _pause(self) -> None:
        """In the background check, every few dozen entries: wait while pages are
        served (at most 50 ms at a time: a steady stream of pages slows the check,
        never stops it), else let go of the GIL a moment (a page about to start gets it
        now, not after the interpreter's switch interval)."""
        with self._quiet:
            self._quiet.wait_for(lambda: not self._paging, timeout=0.05)
        time.sleep(0)

    def _check_in_background(self, directory: Any, touched: set[str] | None) -> None:
        """The directory check of the index built with ``touched`` (the ids written
        since it began): a no-op once that index was dropped (another build runs its
        own check)."""
        self._pause()  # after the page that built the index
        try:
            changed = self._check(None, None, self._pause, touched)
        except Exception as exc:
            # The next page builds the index again (and checks the directory again).
            if isinstance(exc, SnapshotDamaged):
                self._distrusted(exc)
            else:
                logger.warning("task index: checking %s against the directory failed: %s", self.snapshot_dir, exc)
                with self._lock:
                    if self._touched is touched:
                        self._index = None
            return
        with self._lock:
            if self._touched is not touched or self._index is None:
                return  # dropped meanwhile: the next build checks again
            self._touched = None
            self._directory = directory
            self._changes += changed
            persist = self._changes >= self.snapshot_every
        self.checked.set()
        if persist:
            self._persist_quietly()

    def _check(
        self,
        index: MappedIndex | None,
        odd: dict[str, str] | None,
        pause: Callable[[], None],
        touched: set[str] | None = None,
    ) -> int:
        """Bring a loaded snapshot in line with the directory: read again every file
        whose stamp differs from the snapshot's, and every task whose file is gone.
        Before the index is in use (``index`` and its ``odd`` names given) it is
        changed directly; in the background, the live index is, under the lock, if it
        is still the one built with ``touched`` (the ids written since the check began,
        left as they are: what they say is newer). Returns how many were read."""
        if index is None or odd is None:
            with self._lock:
                if self._touched is not touched or self._index is None:
                    return 0
                frozen, names = self._index.frozen(), dict(self._odd)
        else:
            frozen, names = index, odd
        indexed: dict[str, int] = {}
        for n, (task_id, stamp) in enumerate(frozen.stamps()):
            indexed[task_id] = stamp
            if n % 32 == 0:
                pause()
        del frozen
        stamp_of, renamed = indexed.get, names.get
        changed, present = [], set()
        for n, (name, stamp) in enumerate(self.source.files()):
            task_id = renamed(name, name)
            present.add(task_id)
            if not stamp or stamp_of(task_id) != stamp:
                changed.append(name)
            if n % 32 == 0:
                pause()
        found: list[tuple[str, Task | None, int]] = []
        for name in changed:
            task, stamp = self.source.read_file(name)
            if task is not None:
                found.append((task["id"], task, stamp))
                present.add(task["id"])
            pause()
        # no file of its own name holds these (now): read each where it belongs
        for n, task_id in enumerate(indexed):
            if task_id not in present:
                found.append((task_id, *self.source.load_stamped(task_id)))
                pause()
            elif n % 32 == 0:
                pause()
        if index is not None and odd is not None:
            for task_id, task, stamp in found:
                self._apply(index, odd, task_id, task, stamp, new=task_id not in indexed)
            return len(found)
        with self._lock:
            if touched is not None and self._touched is touched and self._index is not None:
                for task_id, task, stamp in found:
                    if task_id not in touched:  # else what it says is newer
                        # not indexed when the check began, nor written since: not in the snapshot
                        self._apply(self._index, None, task_id, task, stamp, new=task_id not in indexed)
        return len(found)

    def _apply(
        self,
        index: MappedIndex,
        odd: dict[str, str] | None,
        task_id: str,
        task: Task | None,
        stamp: int,
        *,
        new: bool,
    ) -> None:
        """Index what the check read of ``task_id`` (None: gone); ``new``: it was not
        indexed when the check began (so not in the snapshot: no lookup there)."""
        if odd is None:  # the live index
            if task is None:
                self._remove(task_id)
            else:
                self._put(task, stamp, new=new)
            return
        name = self.source.name_of(task_id)
        if task is None:
            index.remove(task_id)
            if odd.get(name) == task_id:
                del odd[name]
        else:
            index.put(task, stamp, new=new)
            if name != task_id:
                odd[name] = task_id

    def _reload(self, task_id: str) -> None:
        task, stamp = self.source.load_stamped(task_id)
        if task is None:
            self._remove(task_id)
        else:
            self._put(task, stamp)
        self._changes += 1

    # --- the journal ------------------------------------------------------------------

    def _open_journal(self, *, at_end: bool) -> None:
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                self._create_generation()
                continue
            if self._generation(fd) or _ == 99:
                break
            # A journal an older version started (no generation line): moved aside, so
            # that positions in the next one can be named (its readers follow it).
            self._generations.pop(fd, None)
            os.close(fd)
            self._rotate(force=True)
        if at_end:
            os.lseek(fd, 0, os.SEEK_END)
        self._fd = fd

    def _generation(self, fd: int) -> str:
        """The id of the journal generation open on ``fd`` ("" for a journal without one)."""
        generation = self._generations.get(fd)
        if generation is None:
            first = os.pread(fd, 64, 0).partition(b"\n")[0]
            generation = first[1:].decode("ascii", "replace") if first.startswith(_GENERATION_MARK) else ""
            self._generations[fd] = generation
        return generation

    def _position(self, fd: int | None) -> list | None:
        """Where the index stands in the generation open on ``fd``: [its id, offset]."""
        if fd is None:
            return None
        offset = os.lseek(fd, 0, os.SEEK_CUR) - len(self._partial.get(fd, b""))
        return [self._generation(fd), offset]

    def _open_at(self, path: Path, position: Any) -> int | None:
        """``path`` open at ``position`` ([generation id, offset]) when it is that
        generation and at least that long; else None."""
        generation, offset = position
        if not isinstance(generation, str) or not generation or not isinstance(offset, int) or offset < 0:
            return None
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        if self._generation(fd) != generation or os.fstat(fd).st_size < offset:
            self._generations.pop(fd, None)
            os.close(fd)
            return None
        os.lseek(fd, offset, os.SEEK_SET)
        return fd

    def _resume_journal(self, position: Any) -> bool:
        """Open the journal where a snapshot left it (so what was written since is
        replayed); False when that generation is gone."""
        try:
            current, old = position["current"], position.get("old")
            fd = self._open_at(self.path, current)
            if fd is not None:
                self._fd = fd
                self._old_fd = self._open_at(self.old_path, old) if old else None
                return True
            fd = self._open_at(self.old_path, current)  # rotated once since
            if fd is not None:
                self._old_fd = fd
                self._open_journal(at_end=False)
                return True
        except (OSError, TypeError, ValueError, KeyError, AttributeError):
            self._close_journal()
        return False

    def _close_journal(self) -> None:
        for fd in (self._fd, self._old_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._old_fd = None
        self._partial.clear()
        self._generations.clear()

    def _catch_up(self) -> bool:
        """Apply what other writers journaled since the last page; False when a journal
        generation was missed (the index is dropped: the caller builds it again)."""
        if self._index is None or self._fd is None:
            return False
        if self._old_fd is not None:
            self._consume(self._old_fd)
        try:
            current = os.stat(self.path).st_ino
        except FileNotFoundError:
            current = None
        if current is not None and current != os.fstat(self._fd).st_ino:  # rotated
            self._consume(self._fd)
            try:
                previous = os.stat(self.old_path).st_ino
            except FileNotFoundError:
                previous = None
            if previous != os.fstat(self._fd).st_ino:  # a generation went by unread
                self._index = None
                return False
            if self._old_fd is not None:
                os.close(self._old_fd)
                self._partial.pop(self._old_fd, None)
                self._generations.pop(self._old_fd, None)
            self._old_fd = self._fd
            self._open_journal(at_end=False)
        self._consume(self._fd)
        return True

    def _consume(self, fd: int) -> None:
        data = self._partial.pop(fd, b"")
        while chunk := os.read(fd, 1 << 20):
            data += chunk
        lines = data.split(b"\n")
        if lines[-1]:
            self._partial[fd] = lines[-1]  # a line still being written
        touched: set[str] = set()
        for line in lines[:-1]:
            writer, _, task_id = line.partition(b" ")
            if writer != self._writer and task_id and not writer.startswith(_GENERATION_MARK):
                with contextlib.suppress(orjson.JSONDecodeError):
                    touched.add(orjson.loads(task_id))
        self._reload_all(touched_id for touched_id in touched if isinstance(touched_id, str))

    def _reload_all(self, task_ids: Iterable[str]) -> None:
        """Reload each task; when one cannot be read now (StoreUnavailable), the index
        is dropped, to be built again by the next page: the changes not yet applied
        are never lost, nor is a task taken for gone."""
        try:
            for task_id in task_ids:
                self._reload(task_id)
        except BaseException:
            self._index = None
            raise

    # --- the snapshot -----------------------------------------------------------------

    def _maybe_persist(self) -> None:
        """Persist in the background once ``snapshot_every`` changes went by."""
        if self.snapshot_dir is None or self._changes < self.snapshot_every or self._snapshot_lock.locked():
            return
        threading.Thread(target=self._persist_quietly, name="a2a-index-snapshot", daemon=True).start()

    def _persist_quietly(self) -> None:
        try:
            self.persist(wait=False)
        except Exception:  # pragma: no cover - a snapshot is an optimisation: never fatal
            logger.warning("could not write the task index snapshot in %s", self.snapshot_dir, exc_info=True)

    def persist(self, *, wait: bool = True) -> bool:
        """Write the snapshot now (with a snapshot directory and a built index); whether
        one was written. The index then pages through the snapshot written."""
        if self.snapshot_dir is None or not self._snapshot_lock.acquire(blocking=wait):
            return False
        try:
            with self._lock:
                index = self._index
                if index is None or self._fd is None:
                    return False
                frozen = index.frozen()  # O(changes since the snapshot): the rest is read outside the lock
                meta = {
                    "journal": {"current": self._position(self._fd), "old": self._position(self._old_fd)},
                    "directory": self._directory,
                    "boot": _boot_id(),
                    "odd": dict(self._odd),
                }
                self._changes = 0
                since = self._since = set()
            try:
                chunks = write_snapshot(frozen.rows(), meta)
            except SnapshotDamaged as exc:
                self._distrusted(exc)
                return False
            except (TypeError, orjson.JSONEncodeError) as exc:  # an owner or context no JSON can hold
                logger.warning("task index snapshot not written: %s", exc)
                return False
            del frozen
            mapped: list[MappedSnapshot] = []
            _atomic_write(
                self.snapshot_dir / SNAPSHOT_NAME,
                chunks,
                fsync=self.fsync,
                written=lambda path: mapped.append(MappedSnapshot(path)),
            )
            try:
                with self._lock:
                    if self._index is index:
                        self._index = index.rebased(mapped[0], since)
            except SnapshotDamaged as exc:
                self._distrusted(exc)
            return True
        finally:
            self._since = None
            self._snapshot_lock.release()

    def _read_snapshot(self) -> tuple[MappedIndex, dict[str, str], Any, Any, Any, int] | None:
        """The snapshot: (index, odd names, journal position, directory, boot, -1 when
        it is of the format before, to be written again, else 0); None when there is
        none or its header does not check out (logged: it is then rebuilt from the
        files)."""
        if self.snapshot_dir is None:
            return None
        path = self.snapshot_dir / SNAPSHOT_NAME
        try:
            try:
                base = MappedSnapshot(path)
            except SnapshotDamaged:
                with path.open("rb") as fh:
                    if fh.read(len(SNAPSHOT_MAGIC)) != SNAPSHOT_MAGIC:
                        raise
                return self._read_format_1(path)
            header = base.header
            odd = header["odd"]
            if not isinstance(odd, dict):
                raise SnapshotDamaged("odd names not a mapping")
            return MappedIndex(base), odd, header["journal"], header.get("directory"), header.get("boot"), 0
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("task index snapshot %s unreadable (%s): rebuilding it", path, exc)
            return None
        except (ValueError, TypeError, KeyError, IndexError, orjson.JSONDecodeError) as exc:
            logger.warning("task index snapshot %s does not check out (%s): rebuilding it", path, exc)
            return None

    def _read_format_1(self, path: Path) -> tuple[MappedIndex, dict[str, str], Any, Any, Any, int]:
        """A snapshot of the format before (loaded whole; written again in format 2)."""
        data = path.read_bytes()
        header_end = data.index(b"\n", len(SNAPSHOT_MAGIC))
        header = orjson.loads(data[len(SNAPSHOT_MAGIC) : header_end])
        body = memoryview(data)[header_end + 1 :]
        if len(body) != header["bytes"] or zlib.crc32(body) != header["crc32"]:
            raise ValueError("torn or damaged (length or CRC-32)")
        ids, updated, *coded, stamp_list, odd = orjson.loads(body)
        if len(coded) != 6:
            raise ValueError("columns missing")
        contexts, states, owners = (_decode(coded[i], coded[i + 1]) for i in (0, 2, 4))
        index = TaskIndex.restore(ids, updated, contexts, states, owners)
        if len(stamp_list) != len(ids) or not isinstance(odd, dict) or len(ids) != header["tasks"]:
            raise ValueError("inconsistent")
        if not all(isinstance(v, int) for v in stamp_list):
            raise ValueError("bad stamps")
        stamps = dict(zip(ids, stamp_list, strict=True))
        return MappedIndex(None, index, stamps), odd, header["journal"], header.get("directory"), None, -1


def _boot_id() -> str | None:
    """This boot's id (Linux); None where there is none to read."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _decode(values: Any, codes: Any) -> list[str]:
    if not isinstance(values, list) or not isinstance(codes, list):
        raise ValueError("not a column")
    if codes and (min(codes) < 0 or max(codes) >= len(values)):  # TypeError unless ints
        raise ValueError("a code out of range")
    return list(map(values.__getitem__, codes))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(
    target: Path, chunks: list[bytes], *, fsync: bool, written: Callable[[str], object] | None = None
) -> None:
    """Write ``target`` whole or not at all (temp file, fsync, rename, fsync the
    directory); temp files a killed writer left here an hour ago are removed.
    ``written(temp path)`` runs before the rename (what was written, whoever renames
    over it next)."""
    directory = target.parent
    directory.mkdir(parents=True, exist_ok=True)
    cutoff = time.time() - 3600
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith(".tmp-"):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if written is not None:
            written(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
