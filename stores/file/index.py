"""The file store's listing index, shared by every process that writes the directory.

:class:`SharedIndex` puts the pieces together: the index in use
(:class:`~stores.file.live.LiveIndex`), the journal that tells it what other
processes wrote (:class:`~stores.file.journal.Journal`), the snapshot it is
persisted as (:class:`SnapshotKeeper`, :mod:`stores.file.snapshot`) and the check of
a loaded snapshot against the directory (:class:`~stores.file.check.DirectoryCheck`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from stores.base import StoreError, Task, TaskPage, TaskQuery
from stores.file import snapshot
from stores.file.check import DirectoryCheck
from stores.file.journal import Journal
from stores.file.live import LiveIndex
from stores.file.mapped import IndexSource, MappedIndex
from stores.file.snapshot import SnapshotDamaged
from stores.file.syscalls import Syscalls
from stores.index import TaskIndex

logger = logging.getLogger(__name__)

#: The snapshot's file name in its directory.
SNAPSHOT_NAME = "tasks"


class SnapshotKeeper:
    """Writes the live index as a snapshot (``<directory>/tasks``): after a full build,
    on :meth:`persist`, and in the background once ``every`` changes went by; the live
    index then pages through the file written (mapped) plus the changes since. Several
    processes may write it: each snapshot is a whole index at a journal position, and
    the last rename wins. Without a ``directory`` nothing is persisted."""

    def __init__(self, directory: Path | None, live: LiveIndex, journal: Journal, *, fsync: bool, every: int) -> None:
        self.directory = directory
        self.path = directory / SNAPSHOT_NAME if directory is not None else None
        self.live = live
        self.journal = journal
        self.fsync = fsync
        self.every = every
        self._lock = threading.Lock()  # one snapshot written at a time

    def read(self) -> snapshot.StoredSnapshot | None:
        """The snapshot on disk, if there is one that checks out (see :func:`snapshot.load`)."""
        return snapshot.load(self.path) if self.path is not None else None

    def maybe_persist(self) -> None:
        """Persist in the background once ``every`` changes went by."""
        if self.path is None or self.live.changes < self.every or self._lock.locked():
            return
        threading.Thread(target=self.persist_quietly, name="a2a-index-snapshot", daemon=True).start()

    def persist_if_due(self) -> None:
        """Persist now (in this thread) when ``every`` changes went by."""
        if self.live.changes >= self.every:
            self.persist_quietly()

    def persist_quietly(self) -> None:
        """:meth:`persist`, logging a failure: a snapshot is an optimisation, never fatal."""
        try:
            self.persist(wait=False)
        except Exception:  # pragma: no cover
            logger.warning("could not write the task index snapshot in %s", self.directory, exc_info=True)

    def persist(self, *, wait: bool = True) -> bool:
        """Write the snapshot now (with a directory and a built index); whether one was
        written. The index then pages through the snapshot written."""
        if self.path is None or not self._lock.acquire(blocking=wait):
            return False
        live = self.live
        try:
            with live.lock:
                index = live.index
                if index is None or not self.journal.is_open:
                    return False
                frozen = index.frozen()  # O(changes since the snapshot): the rest is read outside the lock
                meta = {
                    "journal": self.journal.position(),
                    "directory": live.directory,
                    "boot": snapshot.boot_id(),
                    "odd": dict(live.odd),
                }
                live.changes = 0
                since = live.since = set()
            try:
                written = snapshot.store(self.path, frozen.rows(), meta, fsync=self.fsync)
            except SnapshotDamaged as exc:
                live.distrusted(exc)
                return False
            except (TypeError, orjson.JSONEncodeError) as exc:  # an owner or context no JSON can hold
                logger.warning("task index snapshot not written: %s", exc)
                return False
            del frozen
            try:
                with live.lock:
                    if live.index is index:
                        live.index = index.rebased(written, since)
            except SnapshotDamaged as exc:
                live.distrusted(exc)
            return True
        finally:
            live.since = None
            self._lock.release()


class _Build(NamedTuple):
    """What building the index found."""

    mapped: MappedIndex
    odd: dict[str, str]
    #: [directory version, when read]: what the index agrees with (once checked).
    directory: Any
    #: The directory is still to be checked, in the background.
    background: bool
    #: Tasks read: how far the index is from its snapshot (-1: it has none).
    changed: int


class SharedIndex:
    """The listing index of a task directory several processes write (the file store).

    **Kept current** from this instance's own writes (:meth:`saved`, :meth:`deleted`)
    and from the journal every instance on the directory appends to
    (``<journal_dir>/journal``): before each page the journal's new lines are read and
    the tasks other writers touched are loaded again; a reader that missed a whole
    journal generation rebuilds.

    **Persisted** (with ``snapshot_dir``, see :class:`SnapshotKeeper`). A new instance
    (a restarted process) maps the snapshot instead of reading every task file, and
    trusts it only once checked:

    - the header's CRC-32 and length; each block's CRC-32 and the records' order as
      they are read (a torn, damaged or other-format snapshot is rebuilt from the
      files, and logged);
    - the journal generation it points into is still there (this one or the one
      before), at least as long: the tasks written since are replayed from it; else a
      full build;
    - the directory agrees (:class:`~stores.file.check.DirectoryCheck`): when its
      version is still the one the index last agreed with, nothing was made,
      replaced or removed in it since; else one directory listing. That listing runs
      in the background when the snapshot was written since the machine booted (every
      save a store acknowledged is then in the journal, replayed before the first
      page: the listing only finds what no store acknowledged, see docs/stores.md);
      after a reboot (or where the boot is unknown) it runs before the first page.

    A snapshot is never required: without one (or when it is not trusted) the index is
    built from every file.
    """

    def __init__(
        self,
        journal_dir: os.PathLike[str] | str,
        source: IndexSource,
        syscalls: Syscalls,
        *,
        snapshot_dir: os.PathLike[str] | str | None = None,
        fsync: bool = True,
        max_journal_bytes: int = 16 << 20,
        snapshot_every: int = 10_000,
        journal_moved: Callable[[], None] | None = None,
    ) -> None:
        self.source = source
        snapshots = Path(snapshot_dir) if snapshot_dir is not None else None
        self.journal = Journal(journal_dir, syscalls, max_bytes=max_journal_bytes, moved=journal_moved)
        self.live = LiveIndex(source, snapshots if snapshots is not None else journal_dir)
        self.snapshots = SnapshotKeeper(snapshots, self.live, self.journal, fsync=fsync, every=snapshot_every)
        self.checker = DirectoryCheck(self.live, source, self.snapshots.persist_if_due)
        self._build_lock = threading.Lock()
        self._check_first = False  # rebuild() was called: the next build checks the directory first
        #: How the last build went: "snapshot" (loaded, checked), "full" (every file read).
        self.last_build = ""

    @property
    def checked(self) -> threading.Event:
        """Set once the index agrees with the directory."""
        return self.checker.checked

    # --- writes (every save and delete of the store) --------------------------------

    def saved(self, task: Task, stamp: int = 0) -> None:
        """This process saved ``task`` (its file's version ``stamp``)."""
        self.journal.append(task["id"])
        self.live.follow(task["id"], task, stamp)
        self.snapshots.maybe_persist()

    def deleted(self, task_id: str) -> None:
        """This process deleted ``task_id``."""
        self.journal.append(task_id)
        self.live.follow(task_id, None, 0)

    # --- reads ----------------------------------------------------------------------

    def page(self, query: TaskQuery) -> TaskPage:
        """One page for ``query`` (building the index first when it is not built)."""
        live = self.live
        with self.checker.serving():
            for _ in range(3):
                try:
                    self._ensure_built()
                    with live.lock:
                        if self._catch_up() and live.index is not None:
                            page = live.index.page(query, live.load_or_forget)
                            break
                except SnapshotDamaged as exc:
                    live.distrusted(exc)
            else:
                raise RuntimeError("the task index keeps being rebuilt")  # pragma: no cover
        self.snapshots.maybe_persist()
        return page

    def _catch_up(self) -> bool:
        """Apply what other writers journaled since the last page (under the lock);
        False when a journal generation was missed (the index is dropped: the caller
        builds it again)."""
        if self.live.index is None:
            return False
        touched = self.journal.catch_up()
        if touched is None:
            self.live.index = None
            return False
        self.live.reload_all(touched)
        return True

    def persist(self, *, wait: bool = True) -> bool:
        """Write the snapshot now: see :meth:`SnapshotKeeper.persist`."""
        return self.snapshots.persist(wait=wait)

    def rebuild(self) -> None:
        """Forget the index: the next page builds it again (from the snapshot, checked
        against the directory before that page, or from every file)."""
        with self.live.lock:
            self.live.index = None
            self._check_first = True

    def close(self) -> None:
        """Persist the index (with a snapshot directory), then close the journal (a
        later page opens it again)."""
        with contextlib.suppress(OSError, StoreError):
            self.persist()
        with self.live.lock:
            self.live.index = None
            self.journal.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.journal.close()

    def __len__(self) -> int:
        self._ensure_built()
        with self.live.lock:
            return len(self.live.index) if self.live.index is not None else 0

    # --- building -------------------------------------------------------------------

    def _ensure_built(self) -> None:
        if self.live.index is not None:
            return
        with self._build_lock:
            if self.live.index is not None:
                return
            stored = self._open_journal(None if self.live.distrust else self.snapshots.read())
            try:
                build = self._build(stored)
            except BaseException:
                with self.live.lock:
                    self.live.building = False
                    self.live.pending.clear()
                raise
            self._install(build, stored is not None)
        if build.changed < 0 or build.changed >= self.snapshots.every:
            with contextlib.suppress(OSError, StoreError):
                self.persist()  # the next process starts from here

    def _open_journal(self, stored: snapshot.StoredSnapshot | None) -> snapshot.StoredSnapshot | None:
        """Open the journal where ``stored`` left it (None when that generation is gone:
        the snapshot is then not used), else at its end."""
        with self.live.lock:
            self.journal.close()
            # Lines this instance wrote before now are replayed like any other's: the
            # snapshot may predate them.
            self.journal.new_writer()
            if stored is not None and not self.journal.resume(stored.journal):
                logger.info("task index snapshot in %s is older than the journal: rebuilding", self.live.where)
                stored = None
            if stored is None:
                self.journal.open(at_end=True)  # what others write from now on is replayed
            self.live.building = True
        return stored

    def _build(self, stored: snapshot.StoredSnapshot | None) -> _Build:
        """The index of ``stored`` (checked against the directory now, or to be in the
        background), or of every file."""
        directory = stored.directory if stored is not None else None
        if self.snapshots.directory is not None:  # made now: making it changes the directory
            self.snapshots.directory.mkdir(parents=True, exist_ok=True)
        checked = directory is not None and self.checker.unchanged(directory)
        if not checked:
            # what the directory looks like from here on is what the index will say
            directory = [self.source.version(), time.time_ns()]
        if stored is None:
            return _Build(*self._read_all(), directory, background=False, changed=-1)
        index, odd = MappedIndex(stored.base), stored.odd
        # Since the boot the snapshot was written in, every acknowledged save is in the
        # journal: the listing only finds what none acknowledged.
        background = not checked and not self._check_first and stored.boot is not None
        background = background and stored.boot == snapshot.boot_id()
        changed = 0
        if not checked and not background:
            changed = self.checker.check(index, odd, lambda: None)
        return _Build(index, odd, directory, background, changed)

    def _install(self, build: _Build, from_snapshot: bool) -> None:
        """Serve pages from the index built (and start its background check)."""
        live = self.live
        with live.lock:
            live.index, live.odd, live.building = build.mapped, build.odd, False
            self._check_first = False
            live.directory = None if build.background else build.directory
            touched: set[str] | None = set() if build.background else None
            live.touched = touched
            live.changes = max(build.changed, 0)
            self.last_build = "snapshot" if from_snapshot else "full"
            pending, live.pending = live.pending, set()
            live.reload_all(pending)
        if touched is not None:
            self.checker.start(build.directory, touched)
        else:
            self.checker.checked.set()

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
