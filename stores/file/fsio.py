"""The file store's file operations: every write, fsync and temp file goes through here.

One write policy for task files, push configs, the journal and the index snapshot: a
temp file made (``O_EXCL``, as ``mkstemp`` does) in the target's directory, named
``.tmp-<host>.<pid>.<started>.<n>`` (:func:`temp_prefix`), written and fsynced,
renamed over the target (:func:`atomic_write`) or linked into place
(:func:`atomic_create`), then the directory fsynced (:func:`sync_directory`: a group
commit the writes renamed meanwhile share). One cleanup policy for the temp files an
interrupted write leaves (:func:`stale_temp_files`): a dead process of this host's at
once, any other once it is older than a cutoff. What is kept open between writes (a
task directory, and through :func:`held_across_forks` the lock files and the journal)
is let go of in a forked child.

Reads that fail for a reason that says nothing about the file (:data:`TRANSIENT_ERRNOS`)
are the store's to turn into :class:`~stores.base.StoreUnavailable`.

The calls that follow one another with nothing for Python to do between them (a temp
file's write and rename, a file's read, a kept directory's check and fsync; in the
journal, a line's append and its check) go through the store's system-call backend
(:mod:`stores.file.syscalls`), which each function here is given: the same calls from
Python, or from the C companion in one release of the GIL.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from stores.file.syscalls import Syscalls, write_all

TEMP_PREFIX = ".tmp-"
#: Temp files older than this (seconds) are left-overs of a dead writer.
STALE_TEMP_SECONDS = 60.0
#: Read errors that say nothing about the file read: the process or the system is short
#: of something right now.
_TRANSIENT = "EMFILE ENFILE ENOMEM ENOBUFS EAGAIN EINTR EBUSY EIO ETIMEDOUT ESTALE ENOLCK EDEADLK"
TRANSIENT_ERRNOS = frozenset(getattr(errno, name) for name in _TRANSIENT.split() if hasattr(errno, name))
#: ``.tmp-<host>.<pid>.<started>.<n>``: whose temp file it is (see :func:`temp_prefix`).
_TEMP_NAME = re.compile(r"^\.tmp-([0-9a-f]{8})\.(\d+)\.(\d+)\.")


def describe(exc: OSError) -> str:
    """What went wrong, for a message (the strerror, without the path)."""
    return exc.strerror or str(exc)


# --- temp files ---------------------------------------------------------------------------


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


#: This process's temp-file prefix: worked out once per process (again in a forked child).
_PREFIX = ""
#: The temp files' names: the prefix names the process, a count tells its files apart.
_NAMES = itertools.count()


def temp_prefix() -> str:
    """The prefix of this process's temp files, ``.tmp-<host>.<pid>.<started>.``: a
    cleanup tells a dead writer's left-overs (no such process, or the pid now names a
    process started later) from a live writer's file."""
    global _PREFIX
    if not _PREFIX:
        pid = os.getpid()
        _PREFIX = f"{TEMP_PREFIX}{_host_tag()}.{pid}.{_started(pid) or 0}."
    return _PREFIX


def _forget_prefix() -> None:
    global _PREFIX
    _PREFIX = ""


def _writer_gone(pid: int, started: int) -> bool:
    """Whether the process of this host that named a temp file so is gone."""
    now = _started(pid)
    return now is None or (started != 0 and now != 0 and now != started)


def stale_temp_files(directory: str | os.PathLike[str], older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """The temp files (``.tmp-*``) in ``directory`` that interrupted writes left: those
    of a process of this host that is gone (whatever their age), and any other one
    ``older_than`` seconds old (a live writer finishes well within that). None when
    the directory does not exist."""
    cutoff = time.time() - older_than
    host = _host_tag()
    try:
        with os.scandir(directory) as entries:
            temps = [e for e in entries if e.name.startswith(TEMP_PREFIX) and e.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    stale = []
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


def clean_temp_files(directory: str | os.PathLike[str], older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove :func:`stale_temp_files`; return what was removed."""
    removed = []
    for path in stale_temp_files(directory, older_than):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


# --- reads --------------------------------------------------------------------------------


#: How much one ``read`` of a file asks for.
_READ_SIZE = 1 << 16


def read_file(path: str | os.PathLike[str], syscalls: Syscalls, *, to_end: bool = False) -> bytes:
    """The file's bytes, read by ``syscalls``: ``Path.read_bytes`` without the buffered
    file object (whose extra ``fstat``, ``ioctl`` and ``lseek`` each let go of the GIL,
    which a thread then waits to take back while the event loop runs). A ``read`` that
    returns less than asked is taken for the end (what a regular file's read does on
    Linux), without the empty ``read`` that would confirm it; ``to_end``: read until that
    empty one (a caller about to call the file damaged reads it so first)."""
    return syscalls.read(path, _READ_SIZE, to_end)


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


# --- writes -------------------------------------------------------------------------------


def _temp_names(directory: str) -> Iterator[str]:
    """The paths a write tries for its temp file in ``directory``, in turn: named by
    :func:`temp_prefix` and a count (no random name, no ``getpid`` per file); the next
    when one is taken (left by a process of the same pid and start), 100 at most."""
    prefix = temp_prefix()
    for _ in range(100):
        yield f"{directory}/{prefix}{next(_NAMES)}.json"


def _no_free_name(directory: str) -> FileExistsError:
    return FileExistsError(errno.EEXIST, "no free temp file name", directory)


def _create_temp(directory: str) -> tuple[int, str]:
    """A new temp file in ``directory`` (``mkstemp``'s flags and permissions, named by
    :func:`_temp_names`): its descriptor and path."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    for path in _temp_names(directory):
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise _no_free_name(directory)  # pragma: no cover


def _write_temp(directory: str, chunks: Iterable[bytes], *, fsync: bool, mode: int | None) -> str:
    """A temp file in ``directory`` holding ``chunks`` (fsynced with ``fsync``; its
    permissions ``mode`` less the umask, else 0600): its path."""
    fd, tmp = _create_temp(directory)
    try:
        try:
            for chunk in chunks:
                write_all(fd, chunk)
            if mode is not None:
                os.fchmod(fd, mode & ~_umask())
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def atomic_write(
    target: str | os.PathLike[str],
    data: bytes,
    syscalls: Syscalls,
    *,
    fsync: bool = True,
    keep_directory_open: bool = False,
) -> int:
    """Write ``data`` to ``target`` atomically: a temp file in the same directory,
    written and fsynced, renamed over the target (``syscalls.write_replace``), then the
    directory synced (:func:`sync_directory`). A reader sees the old file or the new
    one, never a partial one; with ``fsync`` the new one survives power loss once this
    returns. ``keep_directory_open``: see :func:`sync_directory`. Returns the new
    file's inode number."""
    target = os.fspath(target)  # str operations: a Path's .parent is a new object
    directory = os.path.dirname(target) or "."
    for path in _temp_names(directory):
        inode = syscalls.write_replace(path, target, data, fsync)
        if inode is not None:  # None: the name was taken
            break
    else:  # pragma: no cover
        raise _no_free_name(directory)
    if fsync:
        sync_directory(directory, syscalls if keep_directory_open else None)
    return inode


def atomic_write_chunks(
    target: str | os.PathLike[str], chunks: Iterable[bytes], *, fsync: bool, written: Callable[[str], object]
) -> None:
    """:func:`atomic_write` of ``chunks`` (a file too big to join first), from Python:
    ``written(temp path)`` runs before the rename (what was written, whoever renames
    over it next)."""
    target = os.fspath(target)
    directory = os.path.dirname(target) or "."
    tmp = _write_temp(directory, chunks, fsync=fsync, mode=None)
    try:
        written(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        sync_directory(directory)


def atomic_create(target: str | os.PathLike[str], data: bytes, *, mode: int = 0o666) -> bool:
    """Create ``target`` holding ``data`` unless it exists: a temp file linked into
    place, so no one ever sees it partly written. Its permissions are ``mode`` less the
    umask. Whether this call created it (False: another writer did first)."""
    target = os.fspath(target)
    tmp = _write_temp(os.path.dirname(target) or ".", [data], fsync=False, mode=mode)
    try:
        os.link(tmp, target)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- directory fsync ----------------------------------------------------------------------


def fsync_directory(directory: str | os.PathLike[str], fd: int | None = None) -> None:
    """Make a rename or unlink in ``directory`` durable: one ``fsync`` of it, now (of
    ``fd``, a descriptor of it kept open, when given; else of one opened for it)."""
    if fd is not None:
        os.fsync(fd)
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_directory(directory: str | os.PathLike[str], kept_by: Syscalls | None = None) -> None:
    """Make the renames and unlinks already done in ``directory`` durable: returns once
    a :func:`fsync_directory` of it that *began after this call* has completed. Group
    commit: the threads of this process that call it at once share one fsync
    (:class:`DirectorySync`). ``kept_by``: the directory is synced often (a task
    directory): its descriptor is kept open between fsyncs, each checked and synced by
    this backend."""
    key = (os.fspath(directory), kept_by)
    group = _SYNC_GROUPS.get(key)
    if group is None:
        with _SYNC_GROUPS_LOCK:
            group = _SYNC_GROUPS.setdefault(key, DirectorySync(directory, kept_by=kept_by))
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

    With ``kept_by`` (a system-call backend) the directory's descriptor stays open
    between fsyncs (one ``stat`` and the ``fsync``, ``kept_by.fsync_if_same``, instead
    of ``open``, ``fsync``, ``close``): before each fsync the path is checked to still
    name the directory open (same device and inode), else it is opened again, so a directory removed and made again, or
    moved away and replaced, is the one synced. A forked child never uses its
    parent's (see :func:`_after_fork`).
    """

    def __init__(self, directory: str | os.PathLike[str], *, kept_by: Syscalls | None = None) -> None:
        self.directory = directory
        self.kept_by = kept_by
        self._cond = threading.Condition(threading.Lock())
        self._started = 0  # generations begun
        self._done = 0  # the last generation completed
        self._running = False
        self._failed: tuple[int, OSError] | None = None  # the last failed generation
        self._fd: int | None = None  # with kept_by: the directory, as (device, inode) says
        self._identity = (0, 0)

    def sync(self) -> None:
        """Return once a directory fsync that began after this call has completed
        (raise the OSError of the one that was to cover it, when it failed)."""
        with self._cond:
            needed = self._started + 1
            while True:
                if self._failed is not None and self._failed[0] >= needed:  # even if a later one worked
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
            self._fsync()
            done = True
        except OSError as exc:
            failure = exc
        finally:  # interrupted otherwise: neither done nor failed, the next caller starts one
            with self._cond:
                self._running = False
                if done:
                    self._done = generation
                elif failure is not None:
                    self._failed = (generation, failure)
                self._cond.notify_all()
        if failure is not None:
            raise failure

    def _fsync(self) -> None:
        """One fsync of the directory (only ever one thread at a time: the one running)."""
        if self.kept_by is None:
            fsync_directory(self.directory)
            return
        fd = self._fd
        if fd is not None and self.kept_by.fsync_if_same(self.directory, fd, *self._identity):
            return  # the path still names the one open
        st = os.stat(self.directory)
        if self._fd is None or (st.st_dev, st.st_ino) != self._identity:
            self.close()
            fd = os.open(self.directory, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_DIRECTORY", 0))
            opened = os.fstat(fd)
            self._fd, self._identity = fd, (opened.st_dev, opened.st_ino)
        fsync_directory(self.directory, self._fd)

    def close(self) -> None:
        """Close the descriptor kept open, if any (the next fsync opens it again)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


#: Directory (as given) and the backend keeping it open -> its :class:`DirectorySync`,
#: shared by every store of the process.
_SYNC_GROUPS: dict[tuple[str, Syscalls | None], DirectorySync] = {}
_SYNC_GROUPS_LOCK = threading.Lock()


# --- descriptors kept open, and fork --------------------------------------------------------

#: What else keeps descriptors open between operations (the lock stripes, the journal):
#: each is told when this process forks (:func:`held_across_forks`).
_HOLDERS: weakref.WeakSet[Any] = weakref.WeakSet()


def held_across_forks(holder: Any) -> None:
    """Have ``holder.after_fork()`` run in a forked child before anything else there:
    a descriptor inherited across ``fork`` shares its open file with the parent (an
    ``flock`` taken through it would be the parent's lock), so a child closes its
    copies and opens its own on next use; and a lock a parent thread held at the fork
    would never be let go in the child."""
    _HOLDERS.add(holder)


def _after_fork() -> None:
    global _SYNC_GROUPS_LOCK
    _forget_prefix()  # its own pid, its own start time
    for group in _SYNC_GROUPS.values():  # no fsync under way, no descriptor of the parent's
        group.close()
    _SYNC_GROUPS.clear()
    _SYNC_GROUPS_LOCK = threading.Lock()
    for holder in list(_HOLDERS):
        holder.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
