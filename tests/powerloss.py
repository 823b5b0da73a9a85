"""Power loss, simulated: a shim that journals the file operations made in one directory,
and a replay that rebuilds that directory as the disk would hold it had the power failed
at any point of the journal.

The model is "only what was synced survives":

- a file's contents survive as of the start of its last completed ``fsync``/``fdatasync``
  (a file never synced survives empty, the usual outcome of a rename without fsync);
- the directory's entries (names -> files: creations, renames, links, unlinks) survive
  as of the start of its last completed directory ``fsync``; a directory never synced
  keeps the entries it had when the shim was installed (none: the tests start empty).

The shim wraps ``os.open`` (with ``O_CREAT``), ``os.rename``/``os.replace``, ``os.link``,
``os.unlink``/``os.remove``, ``os.fsync`` and ``os.fdatasync``, and (:meth:`Shim.syscalls`)
the C companion's groups of calls, which do not go through ``os`` (the same calls, in
the same order: ``tests/test_file_syscalls.py`` compares them under ``strace``); only operations on
entries directly in the watched directory are journaled (task files; the store's
subdirectories are not modelled). Each namespace operation is done and journaled under
one lock, so the journal's order is the order they happened in; an fsync journals its
begin (with the file's bytes at that moment) and its end, and counts only when its end
is in the journal. ``replay(lines).current`` is the directory as the live process saw it,
which the tests compare with the real directory to prove the shim missed nothing.

Run as ``python -m tests.powerloss <uvicorn args>``: installs the shim (directory from
``A2A_POWERLOSS_DIR``, journal to ``A2A_POWERLOSS_JOURNAL``), makes the project's store a
file store there on the backend ``A2A_POWERLOSS_SYSCALLS`` names ("python", "c") seen
through the shim, and runs uvicorn; with ``A2A_POWERLOSS_SKIP=dirsync`` the directory's
fsyncs are dropped (a negative control: a store that skips them must be caught).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import stat
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stores.file.syscalls import Syscalls, backend_named


class Shim:
    """Journals the file operations made directly in ``root`` (see the module doc)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        journal: str | os.PathLike[str],
        *,
        skip_file_sync: bool = False,
        skip_dir_sync: bool = False,
    ) -> None:
        self.root = os.path.realpath(root)
        self.skip_file_sync = skip_file_sync  # a negative control: file fsyncs silently dropped
        self.skip_dir_sync = skip_dir_sync  # another: the directory's fsyncs silently dropped
        self.real = {name: getattr(os, name) for name in _WRAPPED}
        self.journal_fd = self.real["open"](os.fspath(journal), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.lock = threading.RLock()
        self.begins = itertools.count()

    # --- journal ------------------------------------------------------------------------

    def record(self, **event: Any) -> None:
        os.write(self.journal_fd, (json.dumps(event) + "\n").encode())

    def ack(self, task_id: str, state: str) -> None:
        """Note that a client was told ``task_id`` is saved in ``state`` (in-process tests)."""
        with self.lock:
            self.record(op="ack", id=task_id, state=state)

    def _name_in_root(self, path: Any) -> str | None:
        """The entry name when ``path`` is directly in the root, else None."""
        if isinstance(path, int):
            return None
        full = os.path.abspath(os.fsdecode(os.fspath(path)))
        parent, name = os.path.split(full)
        if parent == self.root or os.path.realpath(parent) == self.root:
            return name
        return None

    # --- the wrapped functions ------------------------------------------------------------

    def open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        name = self._name_in_root(path) if dir_fd is None and flags & os.O_CREAT else None
        if name is None:
            return self.real["open"](path, flags, mode, dir_fd=dir_fd)
        with self.lock:
            existed = os.path.lexists(path)
            fd = self.real["open"](path, flags, mode)
            if not existed:
                self.record(op="create", name=name, ino=os.fstat(fd).st_ino)
            return fd

    def _move(self, kind: str, src: Any, dst: Any, **kwargs: Any) -> None:
        sname, dname = self._name_in_root(src), self._name_in_root(dst)
        if (sname is None and dname is None) or kwargs:
            self.real[kind](src, dst, **kwargs)
            return
        with self.lock:
            self.real[kind](src, dst)
            ino = os.lstat(dst).st_ino
            op = "link" if kind == "link" else "rename"
            self.record(op=op, sname=sname, dname=dname, ino=ino)

    def rename(self, src: Any, dst: Any, **kwargs: Any) -> None:
        self._move("rename", src, dst, **kwargs)

    def replace(self, src: Any, dst: Any, **kwargs: Any) -> None:
        self._move("replace", src, dst, **kwargs)

    def link(self, src: Any, dst: Any, **kwargs: Any) -> None:
        self._move("link", src, dst, **kwargs)

    def _unlink(self, kind: str, path: Any, **kwargs: Any) -> None:
        name = self._name_in_root(path)
        if name is None or kwargs:
            self.real[kind](path, **kwargs)
            return
        with self.lock:
            self.real[kind](path)
            self.record(op="unlink", name=name)

    def unlink(self, path: Any, **kwargs: Any) -> None:
        self._unlink("unlink", path, **kwargs)

    def remove(self, path: Any, **kwargs: Any) -> None:
        self._unlink("remove", path, **kwargs)

    def _sync(self, kind: str, fd: int) -> None:
        try:
            st = os.fstat(fd)
            where = os.readlink(f"/proc/self/fd/{fd}").removesuffix(" (deleted)")
        except OSError:
            self.real[kind](fd)
            return
        if stat.S_ISDIR(st.st_mode) and os.path.realpath(where) == self.root:
            if self.skip_dir_sync:
                return
            with self.lock:
                k = next(self.begins)
                self.record(op="dbegin", k=k)
            self.real[kind](fd)
            with self.lock:
                self.record(op="dend", k=k)
        elif stat.S_ISREG(st.st_mode) and os.path.dirname(where) == self.root:
            if self.skip_file_sync:
                return
            data = _read_all(fd, where)
            with self.lock:
                k = next(self.begins)
                self.record(op="fbegin", k=k, ino=st.st_ino, data=base64.b64encode(data).decode())
            self.real[kind](fd)
            with self.lock:
                self.record(op="fend", k=k)
        else:
            self.real[kind](fd)

    def fsync(self, fd: Any) -> None:
        self._sync("fsync", fd if isinstance(fd, int) else fd.fileno())

    def fdatasync(self, fd: Any) -> None:
        self._sync("fdatasync", fd if isinstance(fd, int) else fd.fileno())

    # --- installing -----------------------------------------------------------------------

    def syscalls(self, backend: Syscalls) -> Syscalls:
        """``backend`` as the shim sees it: the Python one's calls go through ``os``,
        wrapped already; the C companion's are journaled by :class:`JournaledSyscalls`."""
        return backend if backend.name == "python" else JournaledSyscalls(self, backend)

    def install(self) -> Shim:
        for name in _WRAPPED:
            setattr(os, name, getattr(self, name))
        return self

    def uninstall(self) -> None:
        for name, function in self.real.items():
            setattr(os, name, function)
        os.close(self.journal_fd)


_WRAPPED = ("open", "rename", "replace", "link", "unlink", "remove", "fsync", "fdatasync")


class JournaledSyscalls:
    """A backend whose calls do not go through ``os`` (the C companion), journaled by the
    shim: each group is made under the shim's lock (so the journal's order is the order
    things happened in) and journaled as the calls it makes, in their order."""

    def __init__(self, shim: Shim, inner: Syscalls) -> None:
        self.shim, self.inner = shim, inner
        self.name, self.description = inner.name, inner.description
        self.read, self.append = inner.read, inner.append  # nothing the model keeps

    def write_replace(self, temp: str, target: str, data: bytes, fsync: bool, /) -> int | None:
        shim = self.shim
        tname, dname = shim._name_in_root(temp), shim._name_in_root(target)
        if tname is None and dname is None:
            return self.inner.write_replace(temp, target, data, fsync)
        synced = fsync and not shim.skip_file_sync
        with shim.lock:  # open (O_CREAT), write, fsync, fstat, close, rename
            inode = self.inner.write_replace(temp, target, data, synced)
            if inode is None:  # the name was taken: nothing done
                return None
            shim.record(op="create", name=tname, ino=inode)
            if synced:
                k = next(shim.begins)
                shim.record(op="fbegin", k=k, ino=inode, data=base64.b64encode(data).decode())
                shim.record(op="fend", k=k)
            shim.record(op="rename", sname=tname, dname=dname, ino=inode)
        return inode

    def fsync_if_same(self, path: str | os.PathLike[str], fd: int, device: int, inode: int, /) -> bool:
        shim = self.shim
        if os.path.realpath(path) != shim.root:
            return self.inner.fsync_if_same(path, fd, device, inode)
        if shim.skip_dir_sync:
            st = os.stat(path)
            return (st.st_dev, st.st_ino) == (device, inode)
        with shim.lock:
            k = next(shim.begins)
            shim.record(op="dbegin", k=k)
        same = self.inner.fsync_if_same(path, fd, device, inode)
        if same:
            with shim.lock:
                shim.record(op="dend", k=k)
        return same


def _read_all(fd: int, where: str) -> bytes:
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, size, 0) if size else b""
    except OSError:  # opened write-only: read it through /proc
        with open(f"/proc/self/fd/{fd}", "rb") as fh:
            return fh.read()


# --- replay --------------------------------------------------------------------------------


@dataclass
class Replay:
    """The directory after a journal prefix: ``disk`` as power loss leaves it (name ->
    bytes), ``current`` as the live process saw it (names), ``acks`` noted by tests."""

    disk: dict[str, bytes]
    current: set[str]
    acks: list[tuple[str, str]] = field(default_factory=list)


def read_journal(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The journal's events; a last line cut by a kill is dropped."""
    events = []
    for line in Path(path).read_bytes().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            break
    return events


def replay(events: Iterable[dict[str, Any]]) -> Replay:
    current: dict[str, int] = {}  # name -> file (a uid: inode numbers are reused)
    live: dict[int, int] = {}  # inode -> the file it is now
    uids = itertools.count()
    durable_names: dict[str, int] = {}
    durable_names_at = -1  # the begin of the directory fsync they come from
    snapshots: dict[int, dict[str, int]] = {}
    contents: dict[int, bytes] = {}  # file -> its synced bytes
    contents_at: dict[int, int] = {}
    pending: dict[int, tuple[int, bytes]] = {}
    acks: list[tuple[str, str]] = []

    def file_of(ino: int) -> int:
        if ino not in live:
            live[ino] = next(uids)
        return live[ino]

    for event in events:
        op = event["op"]
        if op == "create":
            live[event["ino"]] = uid = next(uids)
            current[event["name"]] = uid
        elif op in ("rename", "link"):
            uid = current.pop(event["sname"]) if op == "rename" and event["sname"] else file_of(event["ino"])
            live[event["ino"]] = uid
            if event["dname"]:
                current[event["dname"]] = uid
        elif op == "unlink":
            current.pop(event["name"], None)
        elif op == "dbegin":
            snapshots[event["k"]] = dict(current)
        elif op == "dend":
            k = event["k"]
            if k > durable_names_at:
                durable_names, durable_names_at = snapshots[k], k
            snapshots.pop(k, None)
        elif op == "fbegin":
            pending[event["k"]] = (file_of(event["ino"]), base64.b64decode(event["data"]))
        elif op == "fend":
            k = event["k"]
            uid, data = pending.pop(k)
            if k > contents_at.get(uid, -1):
                contents[uid], contents_at[uid] = data, k
        elif op == "ack":
            acks.append((event["id"], event["state"]))
    disk = {name: contents.get(uid, b"") for name, uid in durable_names.items()}
    return Replay(disk, set(current), acks)


def materialize(disk: dict[str, bytes], directory: Path) -> Path:
    """Write ``disk`` out as a directory (for a store to start on)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in disk.items():
        (directory / name).write_bytes(data)
    return directory


# --- checking --------------------------------------------------------------------------------

RANK = {"submitted": 0, "working": 1, "input-required": 1, "auth-required": 1}
TERMINAL = {"completed", "failed", "canceled", "rejected"}


@dataclass
class Verdict:
    lost: list[str] = field(default_factory=list)  # acknowledged, not there
    behind: list[tuple[str, str, str]] = field(default_factory=list)  # (id, acknowledged, found)
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (file, problem)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.behind or self.damaged)


def at_least(found: str, acknowledged: str) -> bool:
    """Whether a task found in state ``found`` is at least as far as ``acknowledged``."""
    if acknowledged in TERMINAL:
        return found == acknowledged  # terminal is final
    return found in TERMINAL or RANK.get(found, -1) >= RANK[acknowledged]


def check(store: Any, acknowledged: dict[str, str]) -> Verdict:
    """Judge a task store started on a power-cut directory against what clients were told."""
    verdict = Verdict()
    verdict.damaged = [(path.name, problem) for path, problem in store.damaged_files()]
    for task_id, state in acknowledged.items():
        task = store.get(task_id)
        if task is None:
            verdict.lost.append(task_id)
        elif not at_least(task["status"]["state"], state):
            verdict.behind.append((task_id, state, task["status"]["state"]))
    return verdict


def main() -> None:  # pragma: no cover - runs in the server process
    root = os.environ["A2A_POWERLOSS_DIR"]
    skip_dir_sync = os.environ.get("A2A_POWERLOSS_SKIP") == "dirsync"
    shim = Shim(root, os.environ["A2A_POWERLOSS_JOURNAL"], skip_dir_sync=skip_dir_sync).install()
    import django  # (the server's settings, from DJANGO_SETTINGS_MODULE)
    import uvicorn  # (third-party, only in the server process)

    django.setup()
    from django.conf import settings

    from stores.file import FileTaskStore

    backend = backend_named(os.environ.get("A2A_POWERLOSS_SYSCALLS", "auto"))
    settings.TASK_STORE = FileTaskStore(root, syscalls=shim.syscalls(backend))

    sys.argv = ["uvicorn", *sys.argv[1:]]
    try:
        uvicorn.main()
    finally:
        shim.uninstall()


if __name__ == "__main__":
    main()
