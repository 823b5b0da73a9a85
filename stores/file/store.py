"""The file store: one ``<id>.json`` per task in a directory, written atomically.

The files are in the toolnexus ``FileTaskStore`` layout and shape, so a directory
written by a toolnexus server reads back here and ours reads back there.

Concurrency: every write (save, delete, repair) of a task holds that task's lock
(:class:`~stores.file.taskfile.TaskLocks`, an ``fcntl.flock`` under ``<dir>/.locks/``),
so a compare-and-swap save (``expected_version``) is atomic between the threads of a
process *and* between processes on one host. Reads take no lock: a file is only ever
replaced whole (:func:`stores.file.fsio.atomic_write`).

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
memory, an I/O error: :data:`~stores.file.fsio.TRANSIENT_ERRNOS`) raises
:class:`~stores.base.StoreUnavailable` instead: the task is not missing.

Start-up: the store touches nothing when it is made. On first use (:meth:`FileTaskStore.open`)
it creates the directory and removes the temp files that interrupted writes left
behind (see :func:`stores.file.fsio.stale_temp_files`).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import os
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import orjson
from django.core.checks import CheckMessage, Error, Info

from stores.base import (
    StaleTaskError,
    StoreError,
    StoreUnavailable,
    Task,
    TaskPage,
    TaskQuery,
    TaskStore,
    context_versions,
)
from stores.fields import check_task, task_state, task_version
from stores.file import fsio
from stores.file.contexts import Context, Conversations
from stores.file.index import SharedIndex
from stores.file.push import FILE_SUBDIRECTORY, FilePushConfigStore
from stores.file.syscalls import Syscalls, backend_named
from stores.file.taskfile import DamageLog, TaskLocks, file_stem, move_aside, parse
from stores.push_configs import PushConfigStore
from stores.scope import task_context
from stores.writable import directory_problem

logger = logging.getLogger(__name__)

#: Subdirectories of the task directory (dot-prefixed: the task listing skips them).
LOCK_DIRECTORY = ".locks"
CORRUPT_DIRECTORY = ".corrupt"
INDEX_DIRECTORY = ".index"


def unavailable(exc: OSError) -> StoreUnavailable:
    """The error a read that failed for now raises (see :data:`fsio.TRANSIENT_ERRNOS`)."""
    return StoreUnavailable(f"could not read the task now: {fsio.describe(exc)}; try again")


class FileTaskStore(TaskStore):
    """Tasks as JSON files under ``directory`` (created on first use).

    ``save`` writes a temp file in the same directory, flushes and fsyncs it, moves it
    over the target with ``os.replace`` and fsyncs the directory: a reader sees the old
    file or the new one, never a partial one, and a saved task survives power loss.
    ``fsync=False`` skips the two fsyncs (atomic still, durable only to a process
    crash), e.g. for throwaway test directories. ``stale_temp_seconds``: on first use,
    temp files of dead writers of this host are removed, and any other temp file
    older than this (None: none are removed). ``syscalls``: who makes the system calls
    of a save and a read (:mod:`stores.file.syscalls`): ``"auto"`` (the default: the C
    companion when it is installed), ``"python"`` or ``"c"``.
    """

    durable = True
    shared = True  # on one host; across hosts only where flock and rename are (see above)
    supports_compare_and_swap = True

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        fsync: bool = True,
        stale_temp_seconds: float | None = fsio.STALE_TEMP_SECONDS,
        syscalls: Syscalls | str | None = None,
    ) -> None:
        self.directory = Path(directory)
        #: The system-call backend every part of the store makes its calls through.
        self.syscalls = backend_named(syscalls)
        self.fsync = fsync
        self.stale_temp_seconds = stale_temp_seconds
        # The hot paths (each save, each read) build their paths as str: cheaper than Paths.
        self._prefix = os.path.join(self.directory, "")
        self._locks = TaskLocks(os.path.join(self.directory, LOCK_DIRECTORY))
        self._conversations = Conversations(self.directory / LOCK_DIRECTORY, self.syscalls)
        self._damaged = DamageLog()
        self._opened = False
        self._open_lock = threading.Lock()
        # ``list`` pages through an index (kept current from every process's writes by a
        # journal in .locks/; persisted in .index/, so a restart need not read every file).
        self._listing = SharedIndex(
            self.directory / LOCK_DIRECTORY,
            _IndexSource(self),
            self.syscalls,
            snapshot_dir=self.directory / INDEX_DIRECTORY,
            fsync=fsync,
            journal_moved=self._lock_files_moved,
        )

    def open(self) -> None:
        """Create the directory and remove the temp files interrupted writes left (with
        ``stale_temp_seconds``). Runs once, on first use; raises StoreUnavailable when
        the directory cannot be created (:meth:`check` says so up front)."""
        if self._opened:
            return
        with self._open_lock:
            if self._opened:
                return
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(f"could not create {self.directory}: {fsio.describe(exc)}") from exc
            if self.stale_temp_seconds is not None:
                self._remove_stale_temp_files(self.stale_temp_seconds)
            self._opened = True

    def _remove_stale_temp_files(self, older_than: float) -> None:
        try:
            removed = self.clean_temp_files(older_than=older_than)
        except OSError as exc:  # a read-only directory, say: nothing to clean there
            logger.debug("could not clean temp files in %s: %s", self.directory, exc)
            return
        if removed:
            logger.warning("removed %d temp file(s) left in %s by an interrupted write", len(removed), self.directory)

    def check(self, *, databases: Collection[str] | None = None) -> builtins.list[CheckMessage]:
        """``stores.I001``: which system-call backend is in use; ``stores.E003`` when the
        directory cannot be created or written: tried (a temporary file or directory,
        removed at once), not read off the permission bits, which root bypasses."""
        backend = Info(f"file store system calls: {self.syscalls.description}", id="stores.I001")
        problem = directory_problem(self.directory)
        if problem is None:
            return [backend]
        return [
            backend,
            Error(
                f"TASK_STORE is the file store in {self.directory}, which {problem}.",
                hint="Point TASK_STORE at a directory this process may create and write "
                '(e.g. "file:./tasks", under BASE_DIR), or create it and give this user write access.',
                id="stores.E003",
            ),
        ]

    def create_push_configs(self) -> PushConfigStore:
        return FilePushConfigStore(self.directory / FILE_SUBDIRECTORY, fsync=self.fsync, syscalls=self.syscalls)

    def path(self, task_id: str) -> Path:
        """Where the task with this id lives."""
        return self.directory / f"{file_stem(task_id)}.json"

    def _lock_files_moved(self) -> None:
        """The journal was moved aside or its directory replaced: the lock files beside it
        (kept open) are opened again on their next hold."""
        self._locks.reopen()
        self._conversations.reopen()

    def lock(self, stem: str) -> contextlib.AbstractContextManager[None]:
        """Hold the lock of the task file ``<stem>.json`` (across threads and processes)."""
        return self._locks.hold(stem)

    @contextlib.contextmanager
    def locked(self, task_id: str) -> Iterator[None]:
        """The task file's lock (:meth:`lock`), which every write of the file takes. A
        task stored without a ``_version`` (by toolnexus) is not held: its next save may
        make its file anew, which takes its conversation's lock first (as a delete of the
        conversation does, before its tasks' locks), and that order is kept."""
        self.open()
        path = self.path(task_id)
        if not task_version(self._read(path, task_id)):
            yield
            return
        with self.lock(path.stem):
            yield

    # --- Reading ---------------------------------------------------------------------------

    def get(self, task_id: str) -> Task | None:
        if not isinstance(task_id, str) or not task_id:
            return None
        self.open()
        return self._read(self.path(task_id), task_id)

    async def aget(self, task_id: str) -> Task | None:
        """:meth:`get`, answered on the event loop when the file is in the page cache
        (the usual case for a task being polled): a worker thread costs more than the
        read, and waits behind saves busy in ``fsync``. Anything else (a read that would
        wait for the disk, a damaged file to report, the first use) goes to a thread."""
        if not isinstance(task_id, str) or not task_id:
            return None
        if self._opened:
            stem = file_stem(task_id)
            data = fsio.read_if_cached(f"{self._prefix}{stem}.json")
            if data is None:
                return None
            if isinstance(data, bytes):
                task, _ = parse(data, stem)
                if task is not None:
                    return task if task["id"] == task_id else None
        return await asyncio.to_thread(self.get, task_id)

    def _read(self, path: Path, task_id: str | None = None) -> Task | None:
        """The task in ``path``; None when missing, damaged, or (with ``task_id``) when
        it holds another task. Raises StoreUnavailable when the read failed for now
        (:data:`fsio.TRANSIENT_ERRNOS`): the task is not missing."""
        task, problem = self._parse_file(path)
        if problem:  # read to its end before it is called damaged (see fsio.read_file)
            task, problem = self._parse_file(path, to_end=True)
        if task is None:
            if problem:
                self._damaged.report(path, problem)
            return None
        # Two ids can share a file name after sanitizing ("a.b", "a_b"): a file only
        # answers for the id it holds.
        if task_id is not None and task["id"] != task_id:
            return None
        return task

    def _parse_file(self, path: Path, *, to_end: bool = False) -> tuple[Task | None, str]:
        """(the task in ``path``, "") or (None, what is wrong with the file; "" when there
        is none). Raises StoreUnavailable when the read failed for now."""
        try:
            data = fsio.read_file(path, self.syscalls, to_end=to_end)
        except FileNotFoundError:
            return None, ""
        except OSError as exc:
            if exc.errno in fsio.TRANSIENT_ERRNOS:
                raise unavailable(exc) from exc
            return None, f"is unreadable: {fsio.describe(exc)}"
        return parse(data, path.stem)

    def _task_files(self) -> builtins.list[Path]:
        self.open()
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
            if exc.errno in fsio.TRANSIENT_ERRNOS:
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
        self.open()
        return self._listing.page(query or TaskQuery())

    # --- Writing ---------------------------------------------------------------------------

    def save(self, task: Task, expected_version: int | None = None) -> Task:
        task_id = check_task(task)
        data = orjson.dumps(task)
        path = self.path(task_id)
        self.open()
        # A new task (or a plain save, which may make one) waits for a delete of its
        # conversation under way: that delete then either saw it or is over.
        context = task_context(task) if not expected_version else None
        try:
            if context is None:
                self._write(path, task, data, expected_version)
            elif not self._write_in(context, path, task, data, expected_version):
                # a crash left a delete of this conversation half done: finish it first, alone
                with self._conversations.hold(context):
                    self._finish_deletes(context)
                    self._write(path, task, data, expected_version)
        except OSError as exc:
            raise StoreError(f"could not save the task: {fsio.describe(exc)}") from exc
        self._damaged.forget(path.name)
        return task

    def _write_in(self, context: Context, path: Path, task: Task, data: bytes, expected_version: int | None) -> bool:
        """:meth:`_write` a new task into ``context`` under its conversation's shared lock
        (a delete holds it alone), unless a delete a crash interrupted is recorded: False."""
        with self._conversations.hold(context, shared=True):
            if self._conversations.record(context) is not None:
                return False
            self._write(path, task, data, expected_version)
            return True

    def _write(self, path: Path, task: Task, data: bytes, expected_version: int | None) -> None:
        """Write ``task`` (``data``) to ``path`` under its lock (a compare-and-swap with
        ``expected_version``), and index it."""
        with self.lock(path.stem):
            if expected_version is not None:
                self._check_version(path, task["id"], expected_version)
            elif path.name in self._damaged:
                self._set_aside_if_damaged(path)
            stamp = fsio.atomic_write(path, data, self.syscalls, fsync=self.fsync, keep_directory_open=True)
            self._listing.saved(task, stamp)

    def _check_version(self, path: Path, task_id: str, expected: int) -> None:
        """Raise StaleTaskError unless ``path`` holds ``task_id`` at version ``expected``
        (a missing file is version 0). Under the task's lock."""
        try:
            data = fsio.read_file(path, self.syscalls)
        except FileNotFoundError:
            data = None
        found = None
        if data is not None:
            current, _ = parse(data, path.stem)
            if current is None:  # damaged: never overwritten in place
                self._set_aside_if_damaged(path)
            elif current["id"] != task_id:
                raise StaleTaskError(task_id, expected, None)  # another task's file: never clobbered
            else:
                found = task_version(current)
        if (found or 0) != expected:
            raise StaleTaskError(task_id, expected, found)

    def delete(self, task_id: str) -> bool:
        """Remove the task's file and its push notification configs; True when there was
        a task. A damaged file is left for repair, with the configs."""
        return self._delete(task_id)

    def delete_many(self, tasks: Collection[Task]) -> builtins.list[str]:
        """Each task unchanged since it was read, under its lock (one task at a time)."""
        return [task["id"] for task in tasks if self._delete(task["id"], task_version(task))]

    def _delete(self, task_id: str, version: int | None = None) -> bool:
        """:meth:`delete`; with ``version``, only when the task is still at that version."""
        if not isinstance(task_id, str) or not task_id:
            return False
        self.open()
        path = self.path(task_id)
        with self.lock(path.stem):
            current = self._read(path, task_id)
            if current is not None and version is not None and task_version(current) != version:
                return False
            return self._remove(path, task_id, current is not None)

    def _remove(self, path: Path, task_id: str, found: bool) -> bool:
        """Remove the task file ``path`` (``found``: it holds ``task_id``) and the task's
        push configs (not when a damaged file is left for repair). Under the task's lock."""
        if found:
            try:
                os.unlink(path)
            except FileNotFoundError:
                found = False
            self._listing.deleted(task_id)
        if found or not path.exists():
            self.push_configs.delete_task_push_configs(task_id)
        return found

    def delete_contexts(self, contexts: Sequence[Collection[Task]]) -> builtins.list[Task]:
        """Each conversation whole or not at all, decided under its lock (which creating
        a task in it takes too) and its tasks' locks, from what the directory holds now
        (the listing index, brought up to date from every process's journal under the
        conversation's lock). Finishes first the deletes a crash interrupted
        (:mod:`stores.file.contexts`)."""
        self.open()
        deleted = self._finish_deletes()
        for tasks in contexts:
            context = task_context(next(iter(tasks)))
            if context is None:
                deleted += [t for t in tasks if self._delete(t["id"], task_version(t))]
                continue
            with self._conversations.hold(context):
                if self._remove_context(context, tasks):
                    deleted += tasks
        return deleted

    def _remove_context(self, context: Context, tasks: Collection[Task]) -> bool:
        """Remove the conversation ``context`` when it holds exactly ``tasks`` at their
        versions; whether it did. Under the conversation's lock."""
        read = {t["id"]: task_version(t) for t in tasks}
        if context_versions(self, tasks) != read:
            return False
        with self._locks.hold_all(self.path(task_id).stem for task_id in read):
            for task_id, version in read.items():
                current = self._read(self.path(task_id), task_id)
                if current is None or task_version(current) != version:
                    return False
            if len(read) > 1:  # a crash in the middle would leave part of it: written down first
                self._conversations.begin(context, read)
            for task_id in read:
                self._remove(self.path(task_id), task_id, True)
            self._conversations.end(context)
        return True

    def _finish_deletes(self, context: Context | None = None) -> builtins.list[Task]:
        """Finish the deletes of conversations a crash interrupted (of ``context`` only,
        whose lock the caller holds; else of every conversation with a record, each
        under its lock): the tasks named, still at the versions named."""
        if context is not None:
            return self._finish_delete(context)
        finished: builtins.list[Task] = []
        for found in self._conversations.recorded():
            with self._conversations.hold(found):
                finished += self._finish_delete(found)
        return finished

    def _finish_delete(self, context: Context) -> builtins.list[Task]:
        versions = self._conversations.record(context)  # under the lock: no delete is under way
        if versions is None:
            return []
        tasks = [t for t in map(self.get, versions) if t is not None]
        finished = [t for t in tasks if self._delete(t["id"], versions[t["id"]])]
        self._conversations.end(context)
        logger.warning("finished the delete of a conversation a crash interrupted (%d task(s) left)", len(tasks))
        return finished

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
                found.append((path, f"is unreadable: {fsio.describe(exc)}"))
                continue
            task, problem = parse(data, path.stem)
            if task is None:
                found.append((path, problem))
        return found

    def set_aside(self, path: Path) -> Path | None:
        """Move the damaged task file ``path`` into ``.corrupt/`` (never replacing a file
        there); return where it went, or None when it is no longer damaged (rewritten
        meanwhile) or gone."""
        self.open()
        with self.lock(path.stem):
            return self._set_aside_if_damaged(path)

    def _set_aside_if_damaged(self, path: Path) -> Path | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            data = None
        if data is not None and parse(data, path.stem)[0] is not None:
            return None
        target = move_aside(path, self.directory / CORRUPT_DIRECTORY, fsync=self.fsync)
        self._damaged.forget(path.name)
        logger.warning("moved damaged task file %s to %s", path, target)
        return target

    def _temp_directories(self) -> tuple[Path, ...]:
        """Where this store's writes make temp files: the tasks, the journal, the snapshot,
        the records of deletes under way."""
        locks = self.directory / LOCK_DIRECTORY
        return (self.directory, locks, self.directory / INDEX_DIRECTORY, self._conversations.deleting)

    def stale_temp_files(self, older_than: float = fsio.STALE_TEMP_SECONDS) -> builtins.list[Path]:
        """The temp files interrupted writes left here (see :func:`fsio.stale_temp_files`)."""
        return [path for d in self._temp_directories() for path in fsio.stale_temp_files(d, older_than)]

    def clean_temp_files(self, older_than: float = fsio.STALE_TEMP_SECONDS) -> builtins.list[Path]:
        """Remove :meth:`stale_temp_files`; return what was removed."""
        return [path for d in self._temp_directories() for path in fsio.clean_temp_files(d, older_than)]

    def close(self) -> None:
        """Close the listing journal's descriptor, the one file the store keeps open for
        writing between saves (which keeps its volume from being remounted read-only);
        the next save opens it again. The lock files and the directory are kept open
        read-only."""
        self._listing.journal.stop_appending()

    def __repr__(self) -> str:
        return f"<FileTaskStore {str(self.directory)!r}>"


class _IndexSource:
    """The file store as its listing index sees it (:class:`stores.file.mapped.IndexSource`):
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
