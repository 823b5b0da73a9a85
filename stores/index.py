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
too (a journal tells each process what the others changed).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson

from stores.base import (
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


class SharedIndex:
    """A :class:`TaskIndex` over tasks that several processes write (the file store).

    Built on first use from a full scan (``scan()``: every stored task), then kept
    current from this instance's own writes (:meth:`saved`, :meth:`deleted`) and from
    a journal every instance on the directory appends to (``<journal_dir>/journal``,
    one line per write: who wrote, which task; ``O_APPEND``, never fsynced: it only
    tells the other processes which tasks to read again, and an index is rebuilt from
    the tasks themselves). Before each page the journal's new lines are read and the
    tasks other writers touched are loaded again (``load(id)``).

    The journal is moved aside to ``journal.old`` when it outgrows ``max_journal_bytes``;
    a reader that missed a whole generation (it listed less often than that) rebuilds.
    Tasks written into the directory by anything else (toolnexus, a copy) are listed
    after a rebuild (:meth:`rebuild`, or a new process); ``get`` finds them at once.
    """

    def __init__(
        self,
        journal_dir: os.PathLike[str] | str,
        scan: Callable[[], Iterable[Task]],
        load: Callable[[str], Task | None],
        *,
        max_journal_bytes: int = 16 << 20,
    ) -> None:
        self.journal_dir = Path(journal_dir)
        self.path = self.journal_dir / "journal"
        self._scan, self._load = scan, load
        self.max_journal_bytes = max_journal_bytes
        self._writer = os.urandom(6).hex().encode()
        self._lock = threading.Lock()  # the index and the journal reader; held briefly
        self._build_lock = threading.Lock()
        self._index: TaskIndex | None = None
        self._building = False
        self._pending: set[str] = set()  # saved here while the index was being built
        self._fd: int | None = None  # the journal generation being read
        self._old_fd: int | None = None  # the one before (late appends land there)
        self._partial: dict[int, bytes] = {}

    # --- writes (every save and delete of the store) --------------------------------

    def saved(self, task: Task) -> None:
        self._append(task["id"])
        with self._lock:
            if self._index is not None:
                self._index.put(task)
            elif self._building:
                self._pending.add(task["id"])

    def deleted(self, task_id: str) -> None:
        self._append(task_id)
        with self._lock:
            if self._index is not None:
                self._index.remove(task_id)
            elif self._building:
                self._pending.add(task_id)

    def _append(self, task_id: str) -> None:
        line = self._writer + b" " + orjson.dumps(task_id) + b"\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except FileNotFoundError:
            self.journal_dir.mkdir(exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line)  # one write of a short line with O_APPEND: never interleaved
            size = os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
        if size > self.max_journal_bytes:
            self._rotate()

    def _rotate(self) -> None:
        """Move the journal aside (one rotator at a time; readers follow, see _catch_up)."""
        lock = os.open(self.journal_dir / "journal.lock", os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # another process is rotating it
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_size > self.max_journal_bytes:
                    os.replace(self.path, self.journal_dir / "journal.old")
        finally:
            os.close(lock)

    # --- reads ----------------------------------------------------------------------

    def page(self, query: TaskQuery) -> TaskPage:
        for _ in range(3):
            self._ensure_built()
            with self._lock:
                if self._catch_up() and self._index is not None:
                    return self._index.page(query, self._load_or_forget)
        raise RuntimeError("the task index keeps being rebuilt")  # pragma: no cover

    def rebuild(self) -> None:
        """Forget the index: the next page scans every task again."""
        with self._lock:
            self._index = None

    def close(self) -> None:
        """Close the journal (a later page opens it again)."""
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
        task = self._load(task_id)
        if task is None and self._index is not None:
            self._index.remove(task_id)  # gone, or damaged: listed again once saved again
        return task

    def _ensure_built(self) -> None:
        if self._index is not None:
            return
        with self._build_lock:
            if self._index is not None:
                return
            with self._lock:
                self._close_journal()
                self._open_journal(at_end=True)  # what others write from now on is replayed
                self._building = True
            index = TaskIndex()
            try:
                for task in self._scan():
                    index.put(task)
            except BaseException:
                with self._lock:
                    self._building = False
                    self._pending.clear()
                raise
            with self._lock:
                self._index, self._building = index, False
                pending, self._pending = self._pending, set()
                self._reload_all(pending)

    def _reload(self, task_id: str) -> None:
        assert self._index is not None
        task = self._load(task_id)
        if task is None:
            self._index.remove(task_id)
        else:
            self._index.put(task)

    def _open_journal(self, *, at_end: bool) -> None:
        self.journal_dir.mkdir(exist_ok=True)
        fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666)
        if at_end:
            os.lseek(fd, 0, os.SEEK_END)
        self._fd = fd

    def _close_journal(self) -> None:
        for fd in (self._fd, self._old_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._old_fd = None
        self._partial.clear()

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
                previous = os.stat(self.journal_dir / "journal.old").st_ino
            except FileNotFoundError:
                previous = None
            if previous != os.fstat(self._fd).st_ino:  # a generation went by unread
                self._index = None
                return False
            if self._old_fd is not None:
                os.close(self._old_fd)
                self._partial.pop(self._old_fd, None)
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
            if writer != self._writer and task_id:
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
