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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import orjson

from stores.base import (
    StoreError,
    Task,
    TaskPage,
    TaskQuery,
    decode_cursor,
    encode_cursor,
    format_timestamp,
    task_scope,
    task_state,
)
from stores.base import task_updated as _updated

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


class IndexSource(Protocol):
    """What :class:`SharedIndex` needs of the store it indexes (the file store). A
    *stamp* identifies one version of a task's file (the file store's: its inode, taken
    before the file is read, so a stamp never claims a newer version than was read);
    0 is "unknown" (checked again)."""

    def load(self, task_id: str) -> Task | None: ...

    def load_stamped(self, task_id: str) -> tuple[Task | None, int]: ...

    def read_file(self, name: str) -> tuple[Task | None, int]: ...

    def files(self) -> list[tuple[str, int]]: ...

    def name_of(self, task_id: str) -> str: ...

    def version(self) -> int: ...


#: The snapshot's first bytes, and the version of its format.
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
    changes went by. A new instance (a restarted process) loads it instead of reading
    every task file, and trusts it only once checked:

    - the header's length and CRC-32 match the body and the columns make an index
      (a torn or damaged snapshot is rebuilt from the files, and logged);
    - the journal generation it points into is still there (this one or the one
      before), at least as long: the tasks written since are replayed from it; else
      (it is older than two generations, or the journal was lost) a full build;
    - the directory agrees: when its ctime is still the one read just before the index
      last agreed with it (and that was already a second old then), nothing was made,
      replaced or removed in it since; else one directory listing (names and inode
      numbers, no file read, no ``stat``): a file whose stamp differs from the
      snapshot's (replaced by anything: another program, a copy, a write whose journal
      line a crash lost), a new file, a file gone, is read again.

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
        self._index: TaskIndex | None = None
        self._stamps: dict[str, int] = {}  # task id -> the stamp of the version indexed
        self._odd: dict[str, str] = {}  # file name -> task id, where they differ
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
        with self._lock:
            if self._index is not None:
                self._index.put(task)
                self._stamp(task["id"], stamp)
                self._changes += 1
            elif self._building:
                self._pending.add(task["id"])
        self._maybe_persist()

    def deleted(self, task_id: str) -> None:
        self._append(task_id)
        with self._lock:
            if self._index is not None:
                self._index.remove(task_id)
                self._unstamp(task_id)
                self._changes += 1
            elif self._building:
                self._pending.add(task_id)

    def _stamp(self, task_id: str, stamp: int) -> None:
        self._stamps[task_id] = stamp
        name = self.source.name_of(task_id)
        if name != task_id:
            self._odd[name] = task_id

    def _unstamp(self, task_id: str) -> None:
        self._stamps.pop(task_id, None)
        name = self.source.name_of(task_id)
        if name != task_id and self._odd.get(name) == task_id:
            del self._odd[name]

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
        for _ in range(3):
            self._ensure_built()
            with self._lock:
                if self._catch_up() and self._index is not None:
                    page = self._index.page(query, self._load_or_forget)
                    break
        else:
            raise RuntimeError("the task index keeps being rebuilt")  # pragma: no cover
        self._maybe_persist()
        return page

    def rebuild(self) -> None:
        """Forget the index: the next page builds it again (from the snapshot, checked
        against the directory, or from every file)."""
        with self._lock:
            self._index = None

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
            self._index.remove(task_id)  # gone, or damaged: listed again once saved again
            self._unstamp(task_id)
        return task

    def _ensure_built(self) -> None:
        if self._index is not None:
            return
        with self._build_lock:
            if self._index is not None:
                return
            snapshot = self._read_snapshot()
            with self._lock:
                self._close_journal()
                if snapshot is not None and not self._resume_journal(snapshot[3]):
                    logger.info("task index snapshot in %s is older than the journal: rebuilding", self.snapshot_dir)
                    snapshot = None
                if snapshot is None:
                    self._open_journal(at_end=True)  # what others write from now on is replayed
                self._building = True
            try:
                directory = snapshot[4] if snapshot is not None else None
                if self.snapshot_dir is not None:  # made now: making it changes the directory
                    self.snapshot_dir.mkdir(parents=True, exist_ok=True)
                if directory is None or not self._unchanged(directory):
                    # what the directory looks like from here on is what the index will say
                    directory = [self.source.version(), time.time_ns()]
                    changed = None
                else:
                    changed = 0  # nothing in the directory changed since it was last checked
                if snapshot is not None:
                    index, stamps, odd = snapshot[:3]
                    if changed is None:
                        changed = self._check(index, stamps, odd)
                else:
                    stamps, odd, tasks = {}, {}, []
                    for name, _ in self.source.files():
                        task, stamp = self.source.read_file(name)
                        if task is not None:
                            tasks.append(task)
                            stamps[task["id"]] = stamp
                            if name != task["id"]:
                                odd[name] = task["id"]
                    index = TaskIndex.of(tasks)
                    del tasks
                    changed = -1
            except BaseException:
                with self._lock:
                    self._building = False
                    self._pending.clear()
                raise
            with self._lock:
                self._index, self._stamps, self._odd, self._building = index, stamps, odd, False
                self._directory = directory
                self._changes = changed if changed >= 0 else 0
                self.last_build = "snapshot" if snapshot is not None else "full"
                pending, self._pending = self._pending, set()
                self._reload_all(pending)
        if changed < 0 or changed >= self.snapshot_every:
            with contextlib.suppress(OSError, StoreError):
                self.persist()  # the next process starts from here

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

    def _put(self, index: TaskIndex, stamps: dict[str, int], odd: dict[str, str], task: Task, stamp: int) -> None:
        task_id = task["id"]
        index.put(task)
        stamps[task_id] = stamp
        name = self.source.name_of(task_id)
        if name != task_id:
            odd[name] = task_id

    def _check(self, index: TaskIndex, stamps: dict[str, int], odd: dict[str, str]) -> int:
        """Bring a loaded snapshot in line with the directory: read again every file
        whose stamp differs from the snapshot's, and every task whose file is gone.
        Returns how many were read."""
        files = self.source.files()
        indexed, renamed = stamps.get, odd.get
        changed = [name for name, stamp in files if not stamp or indexed(renamed(name, name)) != stamp]
        present = {renamed(name, name) for name, _ in files}
        for name in changed:
            task, stamp = self.source.read_file(name)
            if task is not None:
                self._put(index, stamps, odd, task, stamp)
                present.add(task["id"])
        gone = list(stamps.keys() - present)
        for task_id in gone:  # no file of its own name holds it (now): read it where it belongs
            task, stamp = self.source.load_stamped(task_id)
            if task is None:
                index.remove(task_id)
                del stamps[task_id]
                name = self.source.name_of(task_id)
                if odd.get(name) == task_id:
                    del odd[name]
            else:
                self._put(index, stamps, odd, task, stamp)
        return len(changed) + len(gone)

    def _reload(self, task_id: str) -> None:
        assert self._index is not None
        task, stamp = self.source.load_stamped(task_id)
        if task is None:
            self._index.remove(task_id)
            self._unstamp(task_id)
        else:
            self._index.put(task)
            self._stamp(task_id, stamp)
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
        one was written."""
        if self.snapshot_dir is None or not self._snapshot_lock.acquire(blocking=wait):
            return False
        try:
            with self._lock:
                if self._index is None or self._fd is None:
                    return False
                columns = self._index.export()
                stamps = [self._stamps.get(task_id, 0) for task_id in columns[0]]
                odd = dict(self._odd)
                position = {"current": self._position(self._fd), "old": self._position(self._old_fd)}
                directory = self._directory
                self._changes = 0
            ids, updated, *coded = columns
            encoded = [part for column in coded for part in _encode(column)]
            try:
                body = orjson.dumps([ids, updated, *encoded, stamps, odd])
            except (TypeError, orjson.JSONEncodeError) as exc:  # an id no JSON can hold (a lone surrogate)
                logger.warning("task index snapshot not written: %s", exc)
                return False
            header = orjson.dumps(
                {
                    "tasks": len(stamps),
                    "bytes": len(body),
                    "crc32": zlib.crc32(body),
                    "journal": position,
                    "directory": directory,
                }
            )
            _atomic_write(self.snapshot_dir / SNAPSHOT_NAME, [SNAPSHOT_MAGIC, header, b"\n", body], fsync=self.fsync)
            return True
        finally:
            self._snapshot_lock.release()

    def _read_snapshot(self) -> tuple[TaskIndex, dict[str, int], dict[str, str], Any, Any] | None:
        """The snapshot, when there is a whole one; None when there is none or it does
        not check out (logged: it is then rebuilt from the files)."""
        if self.snapshot_dir is None:
            return None
        path = self.snapshot_dir / SNAPSHOT_NAME
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("task index snapshot %s unreadable (%s): rebuilding it", path, exc)
            return None
        try:
            if not data.startswith(SNAPSHOT_MAGIC):
                raise ValueError("not a snapshot of this format")
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
            stamps = dict(zip(ids, stamp_list, strict=True))
            if not all(isinstance(v, int) for v in stamp_list):
                raise ValueError("bad stamps")
            return index, stamps, odd, header["journal"], header.get("directory")
        except (ValueError, TypeError, KeyError, IndexError, orjson.JSONDecodeError) as exc:
            logger.warning("task index snapshot %s does not check out (%s): rebuilding it", path, exc)
            return None


def _encode(column: list[str]) -> tuple[list[str], list[int]]:
    """(the distinct values, each row's position among them): contexts, states and
    owners repeat, and a snapshot read back so shares one string per value."""
    values = list(dict.fromkeys(column))
    position = {value: i for i, value in enumerate(values)}
    return values, [position[value] for value in column]


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


def _atomic_write(target: Path, chunks: list[bytes], *, fsync: bool) -> None:
    """Write ``target`` whole or not at all (temp file, fsync, rename, fsync the
    directory); temp files a killed writer left here an hour ago are removed."""
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
