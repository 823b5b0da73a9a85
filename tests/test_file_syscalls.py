"""The file store's two system-call backends (stores/file/syscalls.py): the C companion
(``a2a_fsio._syscalls``, django-a2a-agent-fsio), installed by ``make`` where a C compiler
is, makes a save's and a read's system calls as the Python backend does (the same calls,
in the same order, with the same flags), and fails as it does: the same error, the old
file kept, no temp file left. Each test runs on both (the ``file_syscalls`` fixture)."""

from __future__ import annotations

import errno
import itertools
import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import Info

from stores.base import StoreError
from stores.file import FileTaskStore, fsio
from stores.file.journal import Journal
from stores.file.syscalls import COMPANION, PYTHON, backend_named

ROOT = Path(__file__).resolve().parent.parent


def task(version: int, text: str = "") -> dict:
    return {"id": "t1", "contextId": "c", "status": {"state": "working"}, "_version": version,
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": text}]}]}  # fmt: skip


def test_installed_where_a_c_compiler_is():
    """``make`` builds and installs the companion into the venv: the suite runs the store on it."""
    if shutil.which("cc") or shutil.which("gcc"):
        assert COMPANION is not None, "not installed: see .venv/fsio-build.log (the Makefile's $(FSIO_BUILT))"
        assert COMPANION.write_replace.__module__ == "a2a_fsio._syscalls"
        assert backend_named("auto") is COMPANION  # the default where it is installed
    else:  # pragma: no cover - a machine without a compiler: the Python calls
        assert COMPANION is None
        assert backend_named("auto") is PYTHON


def test_the_store_takes_one_backend_and_says_which(file_syscalls, tmp_path):
    store = FileTaskStore(tmp_path, syscalls=file_syscalls.name)
    assert store.syscalls is file_syscalls
    assert store.create_push_configs().syscalls is file_syscalls  # its parts use it too
    assert store._listing.journal.syscalls is file_syscalls
    described = "Python"
    if file_syscalls.name == "c":
        import a2a_fsio

        described = f"C companion (a2a_fsio {a2a_fsio.__version__})"
    assert store.check() == [Info(f"file store system calls: {described}", id="stores.I001")]


def test_an_unknown_backend_or_a_missing_companion_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="syscalls must be one of 'auto', 'python', 'c', not 'fortran'"):
        FileTaskStore(tmp_path, syscalls="fortran")
    monkeypatch.setattr("stores.file.syscalls.COMPANION", None)  # as where it is not installed
    with pytest.raises(ValueError, match='syscalls "c" needs the companion django-a2a-agent-fsio, not installed'):
        FileTaskStore(tmp_path, syscalls="c")
    assert FileTaskStore(tmp_path).syscalls is PYTHON


SAVES = """
import os, sys, tempfile
from stores.file import FileTaskStore
store = FileTaskStore(sys.argv[2], syscalls=sys.argv[1])
store.save({"id": "t1", "contextId": "c", "status": {"state": "submitted"}, "_version": 1}, expected_version=0)
os.write(2, b"BEGIN\\n")
store.save({"id": "t1", "contextId": "c", "status": {"state": "working"}, "_version": 2}, expected_version=1)
store.get("t1")
os.write(2, b"END\\n")
"""

TRACED = "openat,open,read,write,fsync,fdatasync,fstat,newfstatat,close,rename,renameat,renameat2,flock,unlink"


def traced_saves(tmp_path: Path, way: str) -> list[str]:
    """The system calls of a compare-and-swap save and a read made ``way``, as ``strace``
    shows them, with what differs between two runs (paths, temp names, the journal's
    writer id) replaced."""
    directory, trace = tmp_path / way, tmp_path / f"{way}.strace"
    command = ["strace", "-f", "-e", f"trace={TRACED}", "-o", str(trace), sys.executable, "-c", SAVES, way]
    subprocess.run([*command, str(directory)], cwd=ROOT, check=True, capture_output=True, timeout=60)
    lines = trace.read_text().splitlines()
    begin = next(i for i, line in enumerate(lines) if 'write(2, "BEGIN' in line)
    end = next(i for i, line in enumerate(lines) if 'write(2, "END' in line)
    calls = []
    for line in lines[begin + 1 : end]:
        line = re.sub(r"^\d+\s+", "", line).replace(str(directory), "DIR")
        line = re.sub(r"\.tmp-[^\"]+\.json", "TEMP", line)
        calls.append(re.sub(r'"[0-9a-f]{12} ', '"WRITER ', line))
    return calls


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_a_save_and_a_read_make_the_same_calls_in_the_same_order_on_both_backends(tmp_path):
    if COMPANION is None:
        pytest.skip("the C companion (django-a2a-agent-fsio) is not installed here")
    python, c = traced_saves(tmp_path, "python"), traced_saves(tmp_path, "c")
    names = [call.split("(", 1)[0] for call in python]
    # what the Python backend does (docs/stores.md, "System calls and queries"): the file
    # written and synced before its rename, the directory synced after it
    assert names.index("fsync") < names.index("rename") < len(names) - 1 - names[::-1].index("fsync")
    assert c == python


def test_a_write_the_disk_refuses_keeps_the_old_file_and_leaves_no_temp_file(file_syscalls, tmp_path):
    store = FileTaskStore(tmp_path, syscalls=file_syscalls)
    store.save(task(1), expected_version=0)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, hard))  # a write past it fails: EFBIG
    try:
        with pytest.raises(StoreError, match="could not save the task: File too large"):
            store.save(task(2, "x" * 100_000), expected_version=1)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert store.get("t1") == task(1)
    assert not list(tmp_path.glob(".tmp-*"))
    store.save(task(2, "x" * 100_000), expected_version=1)  # the next one goes through
    assert store.get("t1")["_version"] == 2


def test_a_rename_that_fails_leaves_no_temp_file(file_syscalls, tmp_path):
    store = FileTaskStore(tmp_path, syscalls=file_syscalls)
    (tmp_path / "t1.json").mkdir()  # a directory where the task file goes: the rename fails
    (tmp_path / "t1.json" / "in-it").touch()
    with pytest.raises(StoreError, match="could not save the task: Is a directory"):
        store.save(task(1))
    assert not list(tmp_path.glob(".tmp-*"))


def test_a_temp_file_name_taken_is_passed_over(file_syscalls, tmp_path, monkeypatch):
    store = FileTaskStore(tmp_path, syscalls=file_syscalls)
    store.open()
    monkeypatch.setattr(fsio, "_NAMES", itertools.count(1000))
    taken = tmp_path / f"{fsio.temp_prefix()}1000.json"  # left by a process of the same pid and start
    taken.write_bytes(b"not ours")
    store.save(task(1), expected_version=0)
    assert store.get("t1") == task(1)
    assert taken.read_bytes() == b"not ours"


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 65_537, 300_000])
def test_a_file_is_read_whole(file_syscalls, tmp_path, size):
    path = tmp_path / "f"
    data = os.urandom(size)
    path.write_bytes(data)
    assert fsio.read_file(path, file_syscalls) == data
    assert fsio.read_file(str(path), file_syscalls, to_end=True) == data


def test_a_missing_file_is_file_not_found_with_its_name(file_syscalls, tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        fsio.read_file(tmp_path / "missing.json", file_syscalls)
    assert os.fspath(raised.value.filename) == str(tmp_path / "missing.json")
    assert FileTaskStore(tmp_path, syscalls=file_syscalls).get("missing") is None


def test_a_directory_replaced_is_the_one_synced_after(file_syscalls, tmp_path):
    directory = tmp_path / "tasks"
    directory.mkdir()
    group = fsio.DirectorySync(directory, kept_by=file_syscalls)
    group.sync()
    first = os.stat(directory)
    assert group._identity == (first.st_dev, first.st_ino)
    group.sync()  # the same directory: its descriptor kept
    os.rename(directory, tmp_path / "moved")  # moved away, and a new one in its place
    directory.mkdir()
    group.sync()
    new = os.stat(directory)
    assert group._identity == (new.st_dev, new.st_ino) != (first.st_dev, first.st_ino)
    assert os.fstat(group._fd).st_ino == new.st_ino
    group.close()


def test_a_journal_line_then_what_the_path_names(file_syscalls, tmp_path):
    _append = file_syscalls.append
    path = tmp_path / "journal"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        opened = os.fstat(fd)
        assert _append(fd, b'w1 "a"\n', path) == (opened.st_dev, opened.st_ino, 7)
        os.rename(path, tmp_path / "journal.1")  # moved aside: the line lands in the old one
        assert _append(fd, b'w1 "b"\n', path) is None
        path.write_bytes(b"")
        now = os.stat(path)
        assert _append(fd, b'w1 "c"\n', path) == (now.st_dev, now.st_ino, 0)
        assert (tmp_path / "journal.1").read_bytes() == b'w1 "a"\nw1 "b"\nw1 "c"\n'
    finally:
        os.close(fd)
    with pytest.raises(OSError) as raised:  # a closed descriptor: os.write's error
        _append(fd, b"x\n", path)
    assert raised.value.errno == errno.EBADF


def test_the_journal_follows_a_rotation_on_both_backends(file_syscalls, tmp_path):
    writer = Journal(tmp_path, file_syscalls)
    writer.append("first")
    os.rename(tmp_path / "journal", tmp_path / "journal.old")  # another process rotated it
    writer.append("second")
    assert (tmp_path / "journal").read_bytes().endswith(b' "second"\n')
