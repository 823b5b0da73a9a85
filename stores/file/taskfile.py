"""One task file: its name, what it must hold, its lock, and how its damage is logged.

Names are toolnexus's ``sanitize`` of the task id (see :func:`file_stem`), so a
directory is shared with a toolnexus server. Every write of a task holds its lock
(:class:`TaskLocks`: an ``fcntl.flock`` on one of a few lock files), so a
compare-and-swap save is atomic between threads and between processes on one host.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from stores.base import StoreError, Task
from stores.file import fsio

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the lock only covers this process
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
#: Longest file-name stem written; most filesystems cap a name at 255 bytes.
MAX_STEM = 200
#: Tasks share this many lock files (a task always gets the same one).
LOCK_STRIPES = 256
#: How many damaged files are remembered as logged (then the memory starts over).
_MAX_REPORTED = 10_000


def file_stem(task_id: str) -> str:
    """The file-name stem for a task id: toolnexus's ``sanitize`` (anything outside
    ``[a-zA-Z0-9_-]`` becomes ``_``), so ``../x``, ``/etc/passwd`` or a NUL byte can
    never leave the directory; an over-long id is cut and suffixed with its hash."""
    stem = _UNSAFE.sub("_", task_id)
    if len(stem) > MAX_STEM:
        digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()
        stem = f"{stem[: MAX_STEM - 65]}-{digest}"
    return stem


def unique_stem(value: str) -> str:
    """A file-name stem for an id: the id itself when it is already a safe name, else
    its sanitized form suffixed with a hash (so ``a.b`` and ``a_b`` never share a file)."""
    stem = file_stem(value)
    if stem == value:
        return stem
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{stem[: MAX_STEM - 33]}-{digest}"


def belongs_in(task_id: str, stem: str) -> bool:
    """Whether a file named ``stem`` may hold ``task_id`` (ours, or toolnexus's uncut name)."""
    return stem == file_stem(task_id) or stem == _UNSAFE.sub("_", task_id)


def parse(data: bytes, stem: str) -> tuple[Task | None, str]:
    """The task in a file named ``stem`` holding ``data``: (the task, "") or (None,
    what is wrong with the file)."""
    try:
        task = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return None, f"is corrupt: {exc}"
    if not isinstance(task, dict) or not isinstance(task.get("id"), str) or not task["id"]:
        return None, "does not hold a task"
    if not belongs_in(task["id"], stem):
        return None, f"holds task {task['id']!r}, which belongs in {file_stem(task['id'])}.json"
    return task, ""


def move_aside(path: Path, target_dir: Path, *, fsync: bool) -> Path:
    """Move ``path`` into ``target_dir`` under a name of its own (``<name>.<UTC time>``,
    then ``.1``, ``.2``, ...: a file there is never replaced); return where it went.
    Under the task's lock."""
    target_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for n in range(1000):
        target = target_dir / f"{path.name}.{stamp}{f'.{n}' if n else ''}"
        try:
            os.link(path, target)  # fails when the target exists: nothing is ever replaced
        except FileExistsError:
            continue
        except OSError:  # no hard links here: check, then rename (the caller holds the lock)
            if target.exists():
                continue
            os.rename(path, target)
        else:
            os.unlink(path)
        if fsync:
            fsio.fsync_directory(target_dir)
            fsio.fsync_directory(path.parent)
        return target
    raise StoreError(f"could not move {path} aside: too many copies in {target_dir}")


class TaskLocks:
    """The locks of the task files of one directory: ``LOCK_STRIPES`` lock files under
    ``lock_dir`` (so the directory stays small), each task always on the same one.

    Each lock file is kept open once used (a hold is one ``flock`` and its release
    one more, instead of ``open``, ``flock``, ``close``): the threads of this process
    share the descriptor, so they exclude one another first (:class:`_Stripe`), and the
    ``flock`` excludes the other processes. A thread that holds a lock exclusively may
    hold it again inside that hold (a save inside the store's ``locked``): the inner
    hold takes nothing. A forked child opens its own (an ``flock`` through the
    parent's descriptor would be the parent's lock), and :meth:`reopen`
    makes every lock file be opened again on its next hold (the lock directory was
    found replaced: see :class:`~stores.file.journal.Journal`)."""

    def __init__(self, lock_dir: str) -> None:
        self.lock_dir = lock_dir
        self._fallback = tuple(threading.Lock() for _ in range(LOCK_STRIPES)) if fcntl is None else ()
        self._stripes: dict[int, _Stripe] = {}
        self._stripes_lock = threading.Lock()
        self.generation = 0  # bumped by reopen(): a descriptor of an older one is opened again
        fsio.held_across_forks(self)

    def hold(self, stem: str, *, shared: bool = False) -> contextlib.AbstractContextManager[None]:
        """Hold the lock of the task file ``<stem>.json`` (across threads and processes);
        ``shared``: beside other shared holders, never beside an exclusive one."""
        return self._stripe(zlib.crc32(stem.encode("utf-8", "surrogatepass")) % LOCK_STRIPES, shared)

    @contextlib.contextmanager
    def hold_all(self, stems: Iterable[str]) -> Iterator[None]:
        """Hold the locks of all the task files ``stems`` at once: each lock file once
        (two tasks may share one: a second ``flock`` of it would wait for the first),
        in their order, so two holders of several never wait for each other."""
        stripes = sorted({zlib.crc32(stem.encode("utf-8", "surrogatepass")) % LOCK_STRIPES for stem in stems})
        with contextlib.ExitStack() as held:
            for stripe in stripes:
                held.enter_context(self._stripe(stripe))
            yield

    def reopen(self) -> None:
        """Open every lock file again on its next hold (the ones held now: once let go)."""
        self.generation += 1

    def after_fork(self) -> None:
        """In a forked child: none of the parent's descriptors, none of its holds."""
        for stripe in self._stripes.values():
            stripe.close()
        self._stripes = {}
        self._stripes_lock = threading.Lock()

    @contextlib.contextmanager
    def _stripe(self, n: int, shared: bool = False) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover
            with self._fallback[n]:
                yield
            return
        stripe = self._stripes.get(n)
        if stripe is None:
            with self._stripes_lock:
                stripe = self._stripes.setdefault(n, _Stripe(f"{self.lock_dir}/{n:03d}.lock"))
        if stripe.owner == threading.get_ident():  # held by this thread already: inside that hold
            yield
            return
        stripe.acquire(shared, self.generation)
        try:
            yield
        finally:
            stripe.release(shared)


class _Stripe:
    """One lock file, kept open, and this process's holders of it: any number of shared
    holders or one exclusive one (a waiting exclusive holder goes before new shared
    ones). The first holder in takes the ``flock``, the last one out lets it go; a
    blocking ``flock`` is made with the state's lock held (no holder of this process
    can be waiting to let go then: there is none)."""

    __slots__ = ("cond", "fd", "generation", "owner", "path", "readers", "waiting", "writer")

    def __init__(self, path: str) -> None:
        self.path = path
        self.cond = threading.Condition(threading.Lock())
        self.fd: int | None = None
        self.generation = 0
        self.readers = 0
        self.writer = False
        self.owner: int | None = None  # the thread holding it exclusively
        self.waiting = 0  # exclusive holders waiting

    def acquire(self, shared: bool, generation: int) -> None:
        with self.cond:
            if shared:
                while self.writer or self.waiting:
                    self.cond.wait()
                if not self.readers:
                    self._flock(fcntl.LOCK_SH, generation)
                self.readers += 1
                return
            self.waiting += 1
            try:
                while self.writer or self.readers:
                    self.cond.wait()
                self._flock(fcntl.LOCK_EX, generation)
                self.writer = True
                self.owner = threading.get_ident()
            finally:
                self.waiting -= 1
                if not self.writer:
                    self.cond.notify_all()

    def release(self, shared: bool) -> None:
        with self.cond:
            if shared:
                self.readers -= 1
            else:
                self.writer = False
                self.owner = None
            if not self.readers and not self.writer and self.fd is not None:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            self.cond.notify_all()

    def _flock(self, mode: int, generation: int) -> None:
        if self.fd is not None and self.generation != generation:
            self.close()
        if self.fd is None:
            flags = os.O_RDONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            try:
                self.fd = os.open(self.path, flags, 0o666)
            except FileNotFoundError:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                self.fd = os.open(self.path, flags, 0o666)
            self.generation = generation
        fcntl.flock(self.fd, mode)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class DamageLog:
    """The damaged task files already logged, each by (mtime, size): a file is logged
    once, and again only when it changes."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def __contains__(self, name: object) -> bool:
        return name in self._seen

    def report(self, path: Path, problem: str) -> None:
        """Log that ``path`` reads as missing because of ``problem`` (once per version)."""
        try:
            st = path.stat()
            key = (st.st_mtime_ns, st.st_size)
        except OSError:
            key = (0, 0)
        with self._lock:
            if self._seen.get(path.name) == key:
                return
            if len(self._seen) >= _MAX_REPORTED:
                self._seen.clear()
            self._seen[path.name] = key
        logger.warning("task file %s %s; it reads as missing (manage.py a2a_repair moves it aside)", path, problem)

    def forget(self, name: str) -> None:
        """The file ``name`` was replaced or moved aside: not damaged any more."""
        with self._lock:
            self._seen.pop(name, None)
