"""The journal: how each process on a task directory hears which tasks the others wrote.

``<dir>/journal`` gets one line per write, ``<writer id> <task id as JSON>``, appended
with ``O_APPEND`` (one short write: lines never interleave) and never fsynced: it only
tells the other processes which task files to read again. It is moved aside to
``journal.old`` once it outgrows ``max_bytes``; each generation starts with a line
naming it (``#<random id>``), so a position in it (:meth:`Journal.position`) is never
confused with one in a later generation, even when the file's inode number is reused.
A reader that missed a whole generation learns so from :meth:`Journal.catch_up`.

A writer keeps the journal open between appends (one ``write`` and one ``stat`` a
line instead of ``open``, ``write``, ``lseek``, ``close``). After each line it checks
that the path still names the file it wrote to: when the journal was moved aside
meanwhile (by any process), the line is written again into the current generation (a
line read twice only makes a task be read again), so every line is in a generation
that was current after it was written, which every reader reads (see ``catch_up``).
A forked child opens its own (:func:`stores.file.fsio.held_across_forks`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from stores.file import fsio
from stores.file.syscalls import Syscalls

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: one rotator at a time is not enforced
    fcntl = None  # type: ignore[assignment]

#: A journal generation's first line: ``#<generation id>`` (writer lines never start so).
GENERATION_MARK = b"#"
#: A position in the journal: {"current": [generation id, offset], "old": ... or None}.
Position = dict[str, Any]


class Journal:
    """This process's end of the journal in ``directory``: it appends this writer's
    lines and reads the others' (see the module doc). Not thread-safe: the caller locks
    around the reading methods; :meth:`append` may run from any thread."""

    def __init__(
        self,
        directory: os.PathLike[str] | str,
        syscalls: Syscalls,
        *,
        max_bytes: int = 16 << 20,
        moved: Callable[[], None] | None = None,
    ) -> None:
        self.directory = Path(directory)
        #: Appends a line and checks what the path names now, in one call (see :meth:`append`).
        self.syscalls = syscalls
        #: Called when the file appended to is found moved aside or gone (rotated, or the
        #: directory replaced): the lock files beside it are opened again.
        self.moved = moved
        self.path = self.directory / "journal"
        self.old_path = self.directory / "journal.old"
        self.max_bytes = max_bytes
        self.writer = os.urandom(6).hex().encode()
        self._fd: int | None = None  # the generation being read
        self._old_fd: int | None = None  # the one before (late appends land there)
        self._partial: dict[int, bytes] = {}  # descriptor -> a line still being written
        self._generations: dict[int, str] = {}  # descriptor -> its generation's id
        self._append_lock = threading.Lock()
        self._appending: tuple[int, int, int] | None = None  # (descriptor, device, inode) appended to
        fsio.held_across_forks(self)

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def new_writer(self) -> None:
        """Take a new writer id: the lines written before now are then read back like
        any other writer's."""
        self.writer = os.urandom(6).hex().encode()

    # --- writing ----------------------------------------------------------------------

    def append(self, task_id: str) -> None:
        """Note a write of ``task_id`` (moving the journal aside when it is too long)."""
        line = self.writer + b" " + orjson.dumps(task_id) + b"\n"
        with self._append_lock:
            for _ in range(100):
                fd, device, inode = self._appending or self._open_for_append()
                # one write of a short line with O_APPEND: never interleaved
                now = self.syscalls.append(fd, line, self.path)
                if now is not None and now[:2] == (device, inode):
                    break
                self._close_appending()  # moved aside (or gone) meanwhile: again, into the current one
                if self.moved is not None:
                    self.moved()
            else:  # pragma: no cover
                raise OSError(f"could not append to {self.path}")
            if now[2] > self.max_bytes:
                self._rotate()
                self._close_appending()

    def _open_for_append(self) -> tuple[int, int, int]:
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                self._create_generation()
                continue
            st = os.fstat(fd)
            self._appending = (fd, st.st_dev, st.st_ino)
            return self._appending
        raise OSError(f"could not open {self.path}")  # pragma: no cover

    def stop_appending(self) -> None:
        """Close the descriptor appended to (the next append opens it again): a file
        open for writing keeps its volume from being remounted read-only."""
        with self._append_lock:
            self._close_appending()

    def _close_appending(self) -> None:
        appending, self._appending = self._appending, None
        if appending is not None:
            os.close(appending[0])

    def after_fork(self) -> None:
        """In a forked child: the parent's descriptor is not this process's to append to."""
        self._append_lock = threading.Lock()
        with contextlib.suppress(OSError):
            self._close_appending()

    def _create_generation(self) -> None:
        """Create the journal with its first line, atomically (no one ever sees a
        journal without it); another writer may have created it first."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fsio.atomic_create(self.path, GENERATION_MARK + os.urandom(8).hex().encode() + b"\n")

    def _rotate(self, *, force: bool = False) -> None:
        """Move the journal aside (one rotator at a time; readers follow, see catch_up)."""
        lock = os.open(self.directory / "journal.lock", os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # another process is rotating it
            with contextlib.suppress(FileNotFoundError):
                if force or os.stat(self.path).st_size > self.max_bytes:
                    os.replace(self.path, self.old_path)
        finally:
            os.close(lock)

    # --- reading ----------------------------------------------------------------------

    def open(self, *, at_end: bool) -> None:
        """Open the current generation, at its end (only what is written from now on
        will be read) or at its start."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for attempt in range(100):
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                self._create_generation()
                continue
            if self._generation(fd) or attempt == 99:
                break
            # No generation line: positions in it could not be named; moved aside (its
            # readers follow it) so that a generation that has one takes its place.
            self._generations.pop(fd, None)
            os.close(fd)
            self._rotate(force=True)
        if at_end:
            os.lseek(fd, 0, os.SEEK_END)
        self._fd = fd

    def _generation(self, fd: int) -> str:
        """The id of the generation open on ``fd`` ("" for a journal without one)."""
        generation = self._generations.get(fd)
        if generation is None:
            first = os.pread(fd, 64, 0).partition(b"\n")[0]
            generation = first[1:].decode("ascii", "replace") if first.startswith(GENERATION_MARK) else ""
            self._generations[fd] = generation
        return generation

    def _offset(self, fd: int | None) -> list | None:
        if fd is None:
            return None
        offset = os.lseek(fd, 0, os.SEEK_CUR) - len(self._partial.get(fd, b""))
        return [self._generation(fd), offset]

    def position(self) -> Position:
        """Where reading stands: what :meth:`resume` takes back."""
        return {"current": self._offset(self._fd), "old": self._offset(self._old_fd)}

    def _open_at(self, path: Path, offset: Any) -> int | None:
        """``path`` open at ``offset`` ([generation id, offset]) when it is that
        generation and at least that long; else None."""
        generation, at = offset
        if not isinstance(generation, str) or not generation or not isinstance(at, int) or at < 0:
            return None
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        if self._generation(fd) != generation or os.fstat(fd).st_size < at:
            self._generations.pop(fd, None)
            os.close(fd)
            return None
        os.lseek(fd, at, os.SEEK_SET)
        return fd

    def resume(self, position: Any) -> bool:
        """Open the journal at ``position`` (so what was written since is read); False
        when that generation is gone (nothing is left open then)."""
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
                self.open(at_end=False)
                return True
        except (OSError, TypeError, ValueError, KeyError, AttributeError):
            self.close()
        return False

    def close(self) -> None:
        """Stop reading (a later :meth:`open` or :meth:`resume` starts again) and close
        the descriptor appended to (the next append opens it again)."""
        self.stop_appending()
        for fd in (self._fd, self._old_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._old_fd = None
        self._partial.clear()
        self._generations.clear()

    def catch_up(self) -> set[str] | None:
        """The ids of the tasks other writers journaled since the last call; None when a
        generation went by unread (the reader must start over), or when not open."""
        if self._fd is None:
            return None
        touched: set[str] = set()
        if self._old_fd is not None:
            self._consume(self._old_fd, touched)
        try:
            current = os.stat(self.path).st_ino
        except FileNotFoundError:
            current = None
        if current is not None and current != os.fstat(self._fd).st_ino:  # rotated
            self._consume(self._fd, touched)
            try:
                previous = os.stat(self.old_path).st_ino
            except FileNotFoundError:
                previous = None
            if previous != os.fstat(self._fd).st_ino:  # a generation went by unread
                return None
            if self._old_fd is not None:
                os.close(self._old_fd)
                self._partial.pop(self._old_fd, None)
                self._generations.pop(self._old_fd, None)
            self._old_fd = self._fd
            self.open(at_end=False)
        self._consume(self._fd, touched)
        return touched

    def _consume(self, fd: int, touched: set[str]) -> None:
        data = self._partial.pop(fd, b"")
        while chunk := os.read(fd, 1 << 20):
            data += chunk
        lines = data.split(b"\n")
        if lines[-1]:
            self._partial[fd] = lines[-1]  # a line still being written
        for line in lines[:-1]:
            writer, _, task_id = line.partition(b" ")
            if writer != self.writer and task_id and not writer.startswith(GENERATION_MARK):
                with contextlib.suppress(orjson.JSONDecodeError):
                    found = orjson.loads(task_id)
                    if isinstance(found, str):
                        touched.add(found)
