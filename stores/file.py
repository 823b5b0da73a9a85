"""The file store: one ``<id>.json`` per task in a directory, written atomically.

The files are in the toolnexus ``FileTaskStore`` layout and shape, so a directory
written by a toolnexus server reads back here and ours reads back there.

Concurrency: every write (save, delete, repair) of a task holds that task's lock, an
``fcntl.flock`` on a lock file under ``<dir>/.locks/`` (the tasks are spread over 256
lock files, so the directory stays small), so a compare-and-swap save
(``expected_version``) is atomic between the threads of a process *and* between
processes on one host. Reads take no lock: a file is only ever replaced whole.

On a shared volume the lock is as good as the filesystem's ``flock``: NFSv4 (and
NFSv3 with ``lockd``) passes it to the server on Linux, so several hosts exclude one
another; filesystems that keep ``flock`` local to a host (some FUSE and SMB mounts,
NFS mounted with ``nolock``/``local_lock=all``) do not, and several hosts writing one
directory there may lose a concurrent update. Use the ORM store across hosts.

Damage: a file that does not parse, or does not hold the task its name says, reads
as missing (logged once per file, with its path); ``repair`` (``manage.py
a2a_repair``) moves such files into ``<dir>/.corrupt/``, and a save never silently
replaces a file this store found corrupt (it moves it there first). A read that
fails for a reason that says nothing about the file (out of file descriptors, out of
memory, an I/O error: :data:`TRANSIENT_ERRNOS`) raises
:class:`~stores.base.StoreUnavailable` instead: the task is not missing.

Temp files: each write's temp file is named ``.tmp-<host>.<pid>.<random>.json``
(``<host>`` a short hash of the host name). When the store is created it removes the
temp files that interrupted writes left behind: those of a process of this host that
is no longer alive, at once, and any other one (another host's, an older name) once
it is older than ``stale_temp_seconds``.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import errno
import hashlib
import logging
import os
import re
import socket
import tempfile
import threading
import time
import zlib
from collections.abc import Collection, Iterator
from pathlib import Path

import orjson

from stores.base import StaleTaskError, StoreError, StoreUnavailable, Task, TaskPage, TaskQuery, TaskStore
from stores.fields import check_task, task_state, task_version
from stores.index import SharedIndex
from stores.push_configs import PushConfig, PushConfigStore, check_config, config_order

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the lock only covers this process
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
#: Longest file-name stem we write; most filesystems cap a name at 255 bytes.
MAX_STEM = 200
TEMP_PREFIX = ".tmp-"
#: Subdirectories of the task directory (dot-prefixed: the task listing skips them).
LOCK_DIRECTORY = ".locks"
CORRUPT_DIRECTORY = ".corrupt"
INDEX_DIRECTORY = ".index"
#: Tasks share this many lock files (a task always gets the same one).
LOCK_STRIPES = 256
#: At start-up, temp files older than this (seconds) are left-overs of a dead writer.
STALE_TEMP_SECONDS = 60.0
#: How many damaged files the store remembers having logged (then it starts over).
_MAX_REPORTED = 10_000
#: Read errors that say nothing about the task file: the process or the system is short
#: of something right now. A read failing so raises StoreUnavailable (never "missing").
_TRANSIENT = "EMFILE ENFILE ENOMEM ENOBUFS EAGAIN EINTR EBUSY EIO ETIMEDOUT ESTALE ENOLCK EDEADLK"
TRANSIENT_ERRNOS = frozenset(getattr(errno, name) for name in _TRANSIENT.split() if hasattr(errno, name))
#: ``.tmp-<host>.<pid>.<started>.<random>.json``: whose temp file it is (see :func:`temp_prefix`).
_TEMP_NAME = re.compile(r"^\.tmp-([0-9a-f]{8})\.(\d+)\.(\d+)\.")


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux); 0 where this
    platform cannot tell; None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return None if Path("/proc/self/stat").exists() else _alive_or_none(pid)
    except OSError:
        return 0
    try:
        return int(stat[stat.rindex(b")") + 2 :].split()[19])
    except (ValueError, IndexError):
        return 0


def _alive_or_none(pid: int) -> int | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:  # EPERM: alive, another user's
        pass
    return 0


#: (pid, its temp-file prefix): worked out once per process, not per save.
_PREFIX: tuple[int, str] = (0, "")


def temp_prefix() -> str:
    """The prefix of this process's temp files, ``.tmp-<host>.<pid>.<started>.``: a
    start-up tells a dead writer's left-overs (no such process, or the pid now names
    a process started later) from a live writer's file."""
    global _PREFIX
    pid = os.getpid()
    if _PREFIX[0] != pid:  # (a forked child: its own pid, its own start time)
        _PREFIX = (pid, f"{TEMP_PREFIX}{_host_tag()}.{pid}.{_started(pid) or 0}.")
    return _PREFIX[1]


def read_file(path: Path) -> bytes:
    """The file's bytes: ``Path.read_bytes`` without the buffered file object (whose
    extra ``fstat``, ``ioctl`` and ``lseek`` each let go of the GIL, which a thread then
    waits to take back while the event loop runs)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _writer_gone(pid: int, started: int) -> bool:
    """Whether the process of this host that named a temp file so is gone."""
    now = _started(pid)
    return now is None or (started != 0 and now != 0 and now != started)


def unavailable(exc: OSError) -> StoreUnavailable:
    """The error a read that failed for now raises (see :data:`TRANSIENT_ERRNOS`)."""
    return StoreUnavailable(f"could not read the task now: {_describe(exc)}; try again")


def file_stem(task_id: str) -> str:
    """The file-name stem for a task id: toolnexus's ``sanitize`` (anything outside
    ``[a-zA-Z0-9_-]`` becomes ``_``), so ``../x``, ``/etc/passwd`` or a NUL byte can
    never leave the directory; an over-long id is cut and suffixed with its hash."""
    stem = _UNSAFE.sub("_", task_id)
    if len(stem) > MAX_STEM:
        digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()
        stem = f"{stem[: MAX_STEM - 65]}-{digest}"
    return stem


def _belongs_in(task_id: str, stem: str) -> bool:
    """Whether a file named ``stem`` may hold ``task_id`` (ours, or toolnexus's uncut name)."""
    return stem == file_stem(task_id) or stem == _UNSAFE.sub("_", task_id)


def atomic_write(target: str | os.PathLike[str], data: bytes, *, fsync: bool = True) -> int:
    """Write ``data`` to ``target`` atomically: a temp file in the same directory,
    flushed and fsynced, ``os.replace``d over the target, then the directory synced
    (:func:`sync_directory`: one directory fsync shared by the writes renamed
    meanwhile). A reader sees the old file or the new one, never a partial one; with
    ``fsync`` the new one survives power loss once this returns. Returns the new
    file's inode number."""
    target = os.fspath(target)  # (str operations: a Path's .parent is a new object, and a str again)
    directory = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=temp_prefix(), suffix=".json")
    try:
        try:  # (no buffered file object: fewer system calls, each of which lets go of the GIL)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
            inode = os.fstat(fd).st_ino
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        sync_directory(directory)
    return inode


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename or unlink in ``directory`` durable (one ``fsync`` of it, now)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_directory(directory: str | os.PathLike[str]) -> None:
    """Make the renames and unlinks already done in ``directory`` durable: returns once
    a :func:`fsync_directory` of it that *began after this call* has completed. Group
    commit: the threads of this process that call it at once share one fsync
    (:class:`DirectorySync`)."""
    key = os.fspath(directory)
    group = _SYNC_GROUPS.get(key)
    if group is None:
        with _SYNC_GROUPS_LOCK:
            group = _SYNC_GROUPS.setdefault(key, DirectorySync(directory))
    group.sync()


class DirectorySync:
    """Group commit of one directory's fsync.

    The rule: a caller of :meth:`sync` (which has already renamed its file) returns
    only after a directory fsync that *started after it called* has completed, since
    an fsync already running may have read the directory before that rename. Fsyncs
    are numbered (generations); a caller arriving when ``started`` fsyncs have begun
    needs generation ``started + 1``. At most one runs at a time: a caller finding
    none running starts the next one itself (for everyone waiting), else it waits on
    the condition; one fsync thus covers every rename made before it began. A failed
    fsync fails every caller it was to cover (its renames may not be on disk: Linux
    may not report the error again to a retry) and the next caller starts another.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = directory
        self._cond = threading.Condition(threading.Lock())
        self._started = 0  # generations begun
        self._done = 0  # the last generation completed
        self._running = False
        self._failed: tuple[int, OSError] | None = None  # the last failed generation

    def sync(self) -> None:
        with self._cond:
            needed = self._started + 1
            while True:
                if self._failed is not None and self._failed[0] >= needed:  # (even if a later one worked)
                    exc = self._failed[1]
                    raise OSError(exc.errno, exc.strerror, os.fspath(self.directory))
                if self._done >= needed:
                    return
                if not self._running:
                    break
                self._cond.wait()
            self._running = True
            self._started += 1
            generation = self._started  # >= needed: _started never goes down
        done, failure = False, None
        try:
            fsync_directory(self.directory)  # a module global: tests (and the shim) replace it
            done = True
        except OSError as exc:
            failure = exc
        finally:  # (interrupted otherwise: neither done nor failed, the next caller starts one)
            with self._cond:
                self._running = False
                if done:
                    self._done = generation
                elif failure is not None:
                    self._failed = (generation, failure)
                self._cond.notify_all()
        if failure is not None:
            raise failure


#: Directory (as given) -> its :class:`DirectorySync`, shared by every store of the process.
_SYNC_GROUPS: dict[str, DirectorySync] = {}
_SYNC_GROUPS_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child starts with no fsync under way
    os.register_at_fork(after_in_child=_SYNC_GROUPS.clear)


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)


#: What :func:`read_if_cached` answers when the read would wait for the disk.
NOT_CACHED = object()


def read_if_cached(path: str | os.PathLike[str]) -> bytes | object | None:
    """The file's bytes when all of them are in the page cache (a ``preadv`` with
    ``RWF_NOWAIT``, which never waits for the disk); None when there is no such file;
    :data:`NOT_CACHED` when reading would block (or this platform cannot tell)."""
    nowait = getattr(os, "RWF_NOWAIT", None)
    if nowait is None:
        return NOT_CACHED
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError:
        return NOT_CACHED
    try:
        size = os.fstat(fd).st_size
        buffer = bytearray(size)
        read = os.preadv(fd, [buffer], 0, nowait) if size else 0
    except OSError:  # BlockingIOError: not (all) cached; EOPNOTSUPP: not on this filesystem
        return NOT_CACHED
    finally:
        os.close(fd)
    return bytes(buffer) if read == size else NOT_CACHED


class FileTaskStore(TaskStore):
    """Tasks as JSON files under ``directory`` (created if missing).

    ``save`` writes a temp file in the same directory, flushes and fsyncs it, moves it
    over the target with ``os.replace`` and fsyncs the directory: a reader sees the old
    file or the new one, never a partial one, and a saved task survives power loss.
    ``fsync=False`` skips the two fsyncs (atomic still, durable only to a process
    crash), e.g. for throwaway test directories. ``stale_temp_seconds``: when the
    store is created, temp files of dead writers of this host are removed, and any
    other temp file older than this (None: none are removed).
    """

    durable = True
    shared = True  # on one host; across hosts only where flock and rename are (see above)
    supports_compare_and_swap = True

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        fsync: bool = True,
        stale_temp_seconds: float | None = STALE_TEMP_SECONDS,
    ) -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        self.directory.mkdir(parents=True, exist_ok=True)
        # The hot paths (each save, each read) build their paths as str: cheaper than Paths.
        self._prefix = os.path.join(self.directory, "")
        self._lock_dir = os.path.join(self.directory, LOCK_DIRECTORY)
        # File name -> (mtime, size) of a damaged file already logged (and not yet replaced).
        self._damaged: dict[str, tuple[int, int]] = {}
        self._damaged_lock = threading.Lock()
        self._fallback_locks = tuple(threading.Lock() for _ in range(LOCK_STRIPES)) if fcntl is None else ()
        # ``list`` pages through an index (kept current from every process's writes by a
        # journal in .locks/; persisted in .index/, so a restart need not read every file).
        self._listing = SharedIndex(
            self.directory / LOCK_DIRECTORY,
            _IndexSource(self),
            snapshot_dir=self.directory / INDEX_DIRECTORY,
            fsync=fsync,
        )
        if stale_temp_seconds is not None:
            try:
                removed = self.clean_temp_files(older_than=stale_temp_seconds)
            except OSError as exc:  # a read-only directory, say: nothing to clean there
                logger.debug("could not clean temp files in %s: %s", self.directory, exc)
            else:
                if removed:
                    logger.warning(
                        "removed %d temp file(s) left in %s by an interrupted write", len(removed), self.directory
                    )

    def create_push_configs(self) -> PushConfigStore:
        return FilePushConfigStore(self.directory / FILE_SUBDIRECTORY, fsync=self.fsync)

    def path(self, task_id: str) -> Path:
        """Where the task with this id lives."""
        return self.directory / f"{file_stem(task_id)}.json"

    # --- Locking ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, stem: str) -> Iterator[None]:
        """Hold the lock of the task file ``<stem>.json`` (across threads and processes)."""
        stripe = zlib.crc32(stem.encode("utf-8", "surrogatepass")) % LOCK_STRIPES
        if fcntl is None:  # pragma: no cover
            with self._fallback_locks[stripe]:
                yield
            return
        path = f"{self._lock_dir}/{stripe:03d}.lock"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(self._lock_dir)
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when the descriptor closes
            yield
        finally:
            os.close(fd)

    # --- Reading ---------------------------------------------------------------------------

    def get(self, task_id: str) -> Task | None:
        if not isinstance(task_id, str) or not task_id:
            return None
        return self._read(self.path(task_id), task_id)

    async def aget(self, task_id: str) -> Task | None:
        """:meth:`get`, answered on the event loop when the file is in the page cache
        (the usual case for a task being polled): a worker thread costs more than the
        read, and waits behind saves busy in ``fsync``. Anything else (a read that would
        wait for the disk, a damaged file to report) goes to a thread as before."""
        if not isinstance(task_id, str) or not task_id:
            return None
        stem = file_stem(task_id)
        data = read_if_cached(f"{self._prefix}{stem}.json")
        if data is None:
            return None
        if isinstance(data, bytes):
            task, _ = self._parse(data, stem)
            if task is not None:
                return task if task["id"] == task_id else None
        return await asyncio.to_thread(self.get, task_id)

    def _read(self, path: Path, task_id: str | None = None) -> Task | None:
        """The task in ``path``; None when missing, damaged, or (with ``task_id``) when
        it holds another task. Raises StoreUnavailable when the read failed for now
        (:data:`TRANSIENT_ERRNOS`): the task is not missing."""
        try:
            data = read_file(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in TRANSIENT_ERRNOS:
                raise unavailable(exc) from exc
            self._report(path, f"is unreadable: {_describe(exc)}")
            return None
        task, problem = self._parse(data, path.stem)
        if task is None:
            self._report(path, problem)
            return None
        # Two ids can share a file name after sanitizing ("a.b", "a_b"): a file only
        # answers for the id it holds.
        if task_id is not None and task["id"] != task_id:
            return None
        return task

    @staticmethod
    def _parse(data: bytes, stem: str) -> tuple[Task | None, str]:
        """(the task, "") or (None, what is wrong with the file)."""
        try:
            task = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            return None, f"is corrupt: {exc}"
        if not isinstance(task, dict) or not isinstance(task.get("id"), str) or not task["id"]:
            return None, "does not hold a task"
        if not _belongs_in(task["id"], stem):
            return None, f"holds task {task['id']!r}, which belongs in {file_stem(task['id'])}.json"
        return task, ""

    def _report(self, path: Path, problem: str) -> None:
        """Log a damaged file once (again only when it changes)."""
        try:
            st = path.stat()
            key = (st.st_mtime_ns, st.st_size)
        except OSError:
            key = (0, 0)
        with self._damaged_lock:
            if self._damaged.get(path.name) == key:
                return
            if len(self._damaged) >= _MAX_REPORTED:
                self._damaged.clear()
            self._damaged[path.name] = key
        logger.warning("task file %s %s; it reads as missing (manage.py a2a_repair moves it aside)", path, problem)

    def _task_files(self) -> list[Path]:
        with os.scandir(self.directory) as entries:
            return [
                Path(e.path) for e in entries if e.name.endswith(".json") and not e.name.startswith(".") and e.is_file()
            ]

    def _read_stamped(self, path: Path, task_id: str | None = None) -> tuple[Task | None, int]:
        """:meth:`_read` and the file's inode number, taken before the read (so it never
        names a newer file than the one read); (None, 0) when there is no file."""
        try:
            stamp = os.stat(path).st_ino
        except FileNotFoundError:
            return None, 0
        except OSError as exc:
            if exc.errno in TRANSIENT_ERRNOS:
                raise unavailable(exc) from exc
            stamp = 0
        return self._read(path, task_id), stamp

    def scan(self, states: Collection[str] = ()) -> Iterator[Task]:
        """Every task in one directory scan (``list`` pages through the index)."""
        for path in self._task_files():
            task = self._read(path)
            if task is not None and (not states or task_state(task) in states):
                yield task

    def list(self, query: TaskQuery | None = None) -> TaskPage:
        return self._listing.page(query or TaskQuery())

    # --- Writing ---------------------------------------------------------------------------

    def save(self, task: Task, expected_version: int | None = None) -> Task:
        task_id = check_task(task)
        data = orjson.dumps(task)
        path = self.path(task_id)
        try:
            with self.lock(path.stem):
                if expected_version is not None:
                    self._check_version(path, task_id, expected_version)
                elif path.name in self._damaged:
                    self._set_aside_if_damaged(path)
                stamp = atomic_write(path, data, fsync=self.fsync)
                self._listing.saved(task, stamp)
        except OSError as exc:
            raise StoreError(f"could not save the task: {_describe(exc)}") from exc
        with self._damaged_lock:
            self._damaged.pop(path.name, None)
        return task

    def _check_version(self, path: Path, task_id: str, expected: int) -> None:
        """Raise StaleTaskError unless ``path`` holds ``task_id`` at version ``expected``
        (a missing file is version 0). Under the task's lock."""
        try:
            data = read_file(path)
        except FileNotFoundError:
            data = None
        if data is None:
            found = None
        else:
            current, _ = self._parse(data, path.stem)
            if current is None:  # damaged: never overwritten in place
                self._set_aside_if_damaged(path)
                found = None
            elif current["id"] != task_id:
                raise StaleTaskError(task_id, expected, None)  # another task's file: never clobbered
            else:
                found = task_version(current)
        if (found or 0) != expected:
            raise StaleTaskError(task_id, expected, found)

    def delete(self, task_id: str) -> bool:
        """Remove the task's file and its push notification configs; True when there was
        a task. A damaged file is left for repair, with the configs."""
        if not isinstance(task_id, str) or not task_id:
            return False
        path = self.path(task_id)
        with self.lock(path.stem):
            found = self._read(path, task_id) is not None
            if found:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    found = False
                self._listing.deleted(task_id)
            if found or not path.exists():
                self.push_configs.delete_task_push_configs(task_id)
        return found

    # --- Repair ----------------------------------------------------------------------------

    def damaged_files(self) -> builtins.list[tuple[Path, str]]:  # `list` is a method here
        """Every task file that does not read as a task, with what is wrong with it."""
        found = []
        for path in self._task_files():
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                found.append((path, f"is unreadable: {_describe(exc)}"))
                continue
            task, problem = self._parse(data, path.stem)
            if task is None:
                found.append((path, problem))
        return found

    def set_aside(self, path: Path) -> Path | None:
        """Move the damaged task file ``path`` into ``.corrupt/`` (never replacing a file
        there); return where it went, or None when it is no longer damaged (rewritten
        meanwhile) or gone."""
        with self.lock(path.stem):
            return self._set_aside_if_damaged(path)

    def _set_aside_if_damaged(self, path: Path) -> Path | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            data = None
        if data is not None and self._parse(data, path.stem)[0] is not None:
            return None
        target_dir = self.directory / CORRUPT_DIRECTORY
        target_dir.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        for n in range(1000):
            target = target_dir / f"{path.name}.{stamp}{f'.{n}' if n else ''}"
            try:
                os.link(path, target)  # fails when the target exists: nothing is ever replaced
            except FileExistsError:
                continue
            except OSError:  # no hard links here: check, then rename (we hold the task's lock)
                if target.exists():
                    continue
                os.rename(path, target)
            else:
                os.unlink(path)
            if self.fsync:
                fsync_directory(target_dir)
                fsync_directory(self.directory)
            with self._damaged_lock:
                self._damaged.pop(path.name, None)
            logger.warning("moved damaged task file %s to %s", path, target)
            return target
        raise StoreError(f"could not move {path} aside: too many copies in {target_dir}")

    def stale_temp_files(self, older_than: float = STALE_TEMP_SECONDS) -> builtins.list[Path]:
        """The temp files (``.tmp-*``) interrupted writes left: those of a process of
        this host that is gone (whatever their age), and any other one ``older_than``
        seconds old (a live writer finishes well within that)."""
        cutoff = time.time() - older_than
        host = _host_tag()
        stale = []
        with os.scandir(self.directory) as entries:
            temps = [e for e in entries if e.name.startswith(TEMP_PREFIX) and e.is_file(follow_symlinks=False)]
        for entry in temps:
            named = _TEMP_NAME.match(entry.name)
            if named is not None and named.group(1) == host and _writer_gone(int(named.group(2)), int(named.group(3))):
                stale.append(Path(entry.path))
                continue
            try:
                if entry.stat(follow_symlinks=False).st_mtime <= cutoff:
                    stale.append(Path(entry.path))
            except FileNotFoundError:
                continue
        return stale

    def clean_temp_files(self, older_than: float = STALE_TEMP_SECONDS) -> builtins.list[Path]:
        """Remove :meth:`stale_temp_files`; return what was removed."""
        removed = []
        for path in self.stale_temp_files(older_than):
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            removed.append(path)
        return removed

    def __repr__(self) -> str:
        return f"<FileTaskStore {str(self.directory)!r}>"


class _IndexSource:
    """The file store as its listing index sees it (:class:`stores.index.IndexSource`):
    task files by name, each with its inode number as the stamp of its version."""

    def __init__(self, store: FileTaskStore) -> None:
        self.store = store
        self.load = store.get
        self.name_of = file_stem

    def load_stamped(self, task_id: str) -> tuple[Task | None, int]:
        return self.store._read_stamped(self.store.path(task_id), task_id)

    def read_file(self, name: str) -> tuple[Task | None, int]:
        return self.store._read_stamped(self.store.directory / f"{name}.json")

    def version(self) -> int:
        """The directory's ctime (ns): any file made, replaced or removed in it changes
        it, and unlike the mtime nothing can set it back (a restore from a backup, ``touch``)."""
        return os.stat(self.store.directory).st_ctime_ns

    def files(self) -> Iterator[tuple[str, int]]:
        """(name, inode number) of every task file: one directory listing, no ``stat``
        (read as it is consumed)."""
        with os.scandir(self.store.directory) as entries:
            for e in entries:
                if e.name.endswith(".json") and not e.name.startswith(".") and e.is_file():
                    yield e.name[:-5], e.inode()


#: The subdirectory of a file store's push configs (dot-prefixed: the task listing ignores it).
FILE_SUBDIRECTORY = ".push-configs"


def _unique_stem(value: str) -> str:
    """A file-name stem for an id: the id itself when it is already a safe name, else
    its sanitized form suffixed with a hash (so ``a.b`` and ``a_b`` never share a file)."""
    stem = file_stem(value)
    if stem == value:
        return stem
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{stem[: MAX_STEM - 33]}-{digest}"


class FilePushConfigStore(PushConfigStore):
    """One JSON file per config: ``<directory>/<task>/<config>.json``, written like the
    file task store writes tasks (temp file, fsync, ``os.replace``, fsync the
    directory). One file per config, so two configs saved at once on one task, from
    two threads or two processes, both survive. A file only answers for the
    ``(taskId, id)`` it holds."""

    #: :meth:`has_configs` is one ``stat``: cheap enough for the publisher's thread.
    cheap_has_configs = True

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.fsync = fsync

    def _task_dir(self, task_id: str) -> Path:
        return self.directory / _unique_stem(task_id)

    def has_configs(self, task_id: str) -> bool:
        """Whether the task may have configs: its directory exists (a config is saved
        into it only after it is made). False lets a saved task skip push delivery."""
        return isinstance(task_id, str) and bool(task_id) and self._task_dir(task_id).is_dir()

    def path(self, task_id: str, config_id: str) -> Path:
        return self._task_dir(task_id) / f"{_unique_stem(config_id)}.json"

    def _read(self, path: Path, task_id: str, config_id: str | None = None) -> PushConfig | None:
        try:
            config = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, orjson.JSONDecodeError) as exc:
            logger.warning("push config file %s is unreadable: %s", path, exc)
            return None
        try:
            found = check_config(config)
        except ValueError:
            logger.warning("push config file %s does not hold a push config", path)
            return None
        if found[0] != task_id or (config_id is not None and found[1] != config_id):
            return None
        return config

    def save_push_config(self, config: PushConfig) -> PushConfig:
        task_id, config_id = check_config(config)
        directory = self._task_dir(task_id)
        created = not directory.is_dir()
        directory.mkdir(parents=True, exist_ok=True)
        if created and self.fsync:
            fsync_directory(directory.parent)
        atomic_write(self.path(task_id, config_id), orjson.dumps(config), fsync=self.fsync)
        return config

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        if not isinstance(task_id, str) or not task_id or not isinstance(config_id, str) or not config_id:
            return None
        return self._read(self.path(task_id, config_id), task_id, config_id)

    def list_push_configs(self, task_id: str) -> list[PushConfig]:
        if not isinstance(task_id, str) or not task_id:
            return []
        try:
            with os.scandir(self._task_dir(task_id)) as entries:
                paths = [Path(e.path) for e in entries if e.name.endswith(".json") and not e.name.startswith(".")]
        except (FileNotFoundError, NotADirectoryError):
            return []
        configs = [c for c in (self._read(p, task_id) for p in paths) if c is not None]
        return sorted(configs, key=config_order)

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        if self.get_push_config(task_id, config_id) is None:
            return False
        try:
            os.unlink(self.path(task_id, config_id))
        except FileNotFoundError:
            return False
        if self.fsync:
            fsync_directory(self._task_dir(task_id))
        return True

    def delete_task_push_configs(self, task_id: str) -> int:
        """Remove the task's directory: its config files, then the directory itself."""
        if not isinstance(task_id, str) or not task_id:
            return 0
        directory = self._task_dir(task_id)
        deleted = 0
        try:
            with os.scandir(directory) as entries:
                names = [e.name for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            return 0
        for name in names:
            path = directory / name
            # Count only this task's configs (a file answers for the ids it holds).
            counted = name.endswith(".json") and self._read(path, task_id) is not None
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                deleted += counted
        with contextlib.suppress(OSError):  # gone already, or a config saved meanwhile
            directory.rmdir()
        if self.fsync:
            fsync_directory(self.directory)
        return deleted

    def __repr__(self) -> str:
        return f"<FilePushConfigStore {str(self.directory)!r}>"
