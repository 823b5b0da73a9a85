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
    ``lock_dir`` (so the directory stays small), each task always on the same one."""

    def __init__(self, lock_dir: str) -> None:
        self.lock_dir = lock_dir
        self._fallback = tuple(threading.Lock() for _ in range(LOCK_STRIPES)) if fcntl is None else ()

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

    @contextlib.contextmanager
    def _stripe(self, stripe: int, shared: bool = False) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover
            with self._fallback[stripe]:
                yield
            return
        path = f"{self.lock_dir}/{stripe:03d}.lock"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
        except FileNotFoundError:
            os.makedirs(self.lock_dir, exist_ok=True)
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)  # released when the descriptor closes
            yield
        finally:
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
