"""The file store's system-call backend: the groups of calls a save, a read, a journal
line and a kept directory's fsync make, each behind one method.

Each ``os`` call lets go of the GIL for its system call, and a thread that lets go of it
while the event loop is busy waits to take it back, once per call. Two backends make the
same calls, in the same order, with the same flags (``tests/test_file_syscalls.py``
compares them under ``strace``):

- :class:`PythonSyscalls`: through ``os``, one release of the GIL per call; always there.
- :class:`CompanionSyscalls`: the C extension ``a2a_fsio._syscalls`` of the opt-in
  companion distribution ``django-a2a-agent-fsio`` (companions/django-a2a-agent-fsio/,
  built per platform), making each group in one release of the GIL.

:func:`default_backend` picks the companion when it is installed; :func:`backend_named`
turns the file store's ``syscalls`` option (``"python"``, ``"c"``, ``"auto"``) into one.
A :class:`~stores.file.store.FileTaskStore` holds one backend and hands it to every part
of it that makes these calls.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Protocol

#: The option values :func:`backend_named` takes.
CHOICES = ("auto", "python", "c")
#: How to install the companion, for the messages that need it.
INSTALL = 'pip install "django-a2a-agent-fsio @ git+<this repository>#subdirectory=companions/django-a2a-agent-fsio"'


class Syscalls(Protocol):
    """What a backend does (the C extension's functions, with the same arguments)."""

    #: ``"python"`` or ``"c"``: what the store's ``syscalls`` option names it.
    name: str
    #: What ``manage.py check`` says of it.
    description: str

    def write_replace(self, temp: str, target: str, data: bytes, fsync: bool, /) -> int | None:
        """Create ``temp`` (``O_EXCL``, 0600), write ``data``, fsync it (with ``fsync``),
        ``fstat`` and close it, rename it over ``target``: its inode number. None when
        ``temp`` exists (nothing done). On any other failure ``temp`` is removed and the
        OSError raised."""
        ...

    def read(self, path: str | os.PathLike[str], size: int, to_end: bool, /) -> bytes:
        """``path``'s bytes, read ``size`` at a time until a read returns less than asked
        (the end of a regular file, on Linux) or, with ``to_end``, until an empty one."""
        ...

    def append(self, fd: int, line: bytes, path: str | os.PathLike[str], /) -> tuple[int, int, int] | None:
        """Write ``line`` to ``fd`` (``O_APPEND``), then what ``path`` names now:
        (device, inode, size), None when nothing."""
        ...

    def fsync_if_same(self, path: str | os.PathLike[str], fd: int, device: int, inode: int, /) -> bool:
        """Stat ``path``; when it is still (``device``, ``inode``), fsync ``fd``: True.
        False when ``path`` names another file now (nothing synced)."""
        ...


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (no buffered file object: fewer system calls)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class PythonSyscalls:
    """The calls through ``os``: what runs where the companion is not installed."""

    name = "python"
    description = "Python"

    def write_replace(self, temp: str, target: str, data: bytes, fsync: bool, /) -> int | None:
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(temp, flags, 0o600)
        except FileExistsError:
            return None
        try:
            try:
                write_all(fd, data)
                if fsync:
                    os.fsync(fd)
                inode = os.fstat(fd).st_ino
            finally:
                os.close(fd)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        return inode

    def read(self, path: str | os.PathLike[str], size: int, to_end: bool, /) -> bytes:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            chunks = []
            while chunk := os.read(fd, size):
                chunks.append(chunk)
                if len(chunk) < size and not to_end:
                    break
        finally:
            os.close(fd)
        if not chunks:
            return b""
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def append(self, fd: int, line: bytes, path: str | os.PathLike[str], /) -> tuple[int, int, int] | None:
        os.write(fd, line)
        try:
            now = os.stat(path)
        except FileNotFoundError:
            return None
        return now.st_dev, now.st_ino, now.st_size

    def fsync_if_same(self, path: str | os.PathLike[str], fd: int, device: int, inode: int, /) -> bool:
        st = os.stat(path)
        if (st.st_dev, st.st_ino) != (device, inode):
            return False
        os.fsync(fd)
        return True

    def __repr__(self) -> str:
        return "<PythonSyscalls>"


class CompanionSyscalls:
    """The calls made by the companion's C extension, each group in one release of the GIL."""

    name = "c"

    def __init__(self, module: Any, version: str) -> None:
        self.description = f"C companion (a2a_fsio {version})"
        self.write_replace = module.write_replace
        self.read = module.read
        self.append = module.append
        self.fsync_if_same = module.fsync_if_same

    def __repr__(self) -> str:
        return f"<CompanionSyscalls {self.description}>"


#: The one :class:`PythonSyscalls` (it holds nothing).
PYTHON = PythonSyscalls()


def _companion() -> CompanionSyscalls | None:
    try:
        import a2a_fsio
        from a2a_fsio import _syscalls
    except ImportError:  # not installed: the calls from Python
        return None
    return CompanionSyscalls(_syscalls, a2a_fsio.__version__)


#: The companion's backend, or None where it is not installed.
COMPANION = _companion()


def default_backend() -> Syscalls:
    """The companion's backend when it is installed, else :data:`PYTHON`."""
    return COMPANION if COMPANION is not None else PYTHON


def backend_named(choice: Syscalls | str | None) -> Syscalls:
    """The backend the file store's ``syscalls`` option names: ``"auto"`` (or None) the
    default, ``"python"``, ``"c"`` (ValueError, saying how to install it, when the
    companion is not installed), or a backend object itself."""
    if choice is None or choice == "auto":
        return default_backend()
    if choice == "python":
        return PYTHON
    if choice == "c":
        if COMPANION is None:
            raise ValueError(f'syscalls "c" needs the companion django-a2a-agent-fsio, not installed here: {INSTALL}')
        return COMPANION
    if isinstance(choice, str):
        raise ValueError(f"syscalls must be one of {', '.join(map(repr, CHOICES))}, not {choice!r}")
    return choice
