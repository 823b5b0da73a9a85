"""The file store's C extension (``stores.file._syscalls``): built where a C compiler is,
making a save's and a read's system calls as the Python code does (the same calls, in the
same order, with the same flags: what the power-loss tests prove of the Python code holds
of it), and failing as the Python code does: the same error, the old file kept, no temp
file left."""

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

from stores.base import StoreError
from stores.file import FileTaskStore, fsio
from stores.file.journal import Journal, _append

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(params=["c", "python"])
def way(request, monkeypatch) -> str:
    """Each test on both ways of making the calls: the C extension, and ``os``."""
    if request.param == "c" and fsio.SYSCALLS is None:
        pytest.skip("stores.file._syscalls is not built here (test_built_where_a_c_compiler_is says why)")
    if request.param == "python":
        monkeypatch.setattr(fsio, "SYSCALLS", None)
    return request.param


def task(version: int, text: str = "") -> dict:
    return {"id": "t1", "contextId": "c", "status": {"state": "working"}, "_version": version,
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": text}]}]}  # fmt: skip


def test_built_where_a_c_compiler_is():
    """``make`` builds it in place (a wheel, by itself): the suite runs the store on it."""
    if shutil.which("cc") or shutil.which("gcc"):
        assert fsio.SYSCALLS is not None, "not built: see .venv/ext-build.log (the Makefile's $(EXT))"
        assert fsio.SYSCALLS.__name__ == "stores.file._syscalls"
    else:  # pragma: no cover - a machine without a compiler: the Python calls
        assert fsio.SYSCALLS is None


SAVES = """
import os, sys, tempfile
from stores.file import FileTaskStore, fsio
if sys.argv[1] == "python":
    fsio.SYSCALLS = None
store = FileTaskStore(sys.argv[2])
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
def test_a_save_and_a_read_make_the_same_calls_in_the_same_order_on_both_ways(tmp_path):
    if fsio.SYSCALLS is None:
        pytest.skip("stores.file._syscalls is not built here")
    python, c = traced_saves(tmp_path, "python"), traced_saves(tmp_path, "c")
    names = [call.split("(", 1)[0] for call in python]
    # what the Python way does (docs/stores.md, "System calls and queries"): the file
    # written and synced before its rename, the directory synced after it
    assert names.index("fsync") < names.index("rename") < len(names) - 1 - names[::-1].index("fsync")
    assert c == python


def test_a_write_the_disk_refuses_keeps_the_old_file_and_leaves_no_temp_file(way, tmp_path):
    store = FileTaskStore(tmp_path)
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


def test_a_rename_that_fails_leaves_no_temp_file(way, tmp_path):
    store = FileTaskStore(tmp_path)
    (tmp_path / "t1.json").mkdir()  # a directory where the task file goes: the rename fails
    (tmp_path / "t1.json" / "in-it").touch()
    with pytest.raises(StoreError, match="could not save the task: Is a directory"):
        store.save(task(1))
    assert not list(tmp_path.glob(".tmp-*"))


def test_a_temp_file_name_taken_is_passed_over(way, tmp_path, monkeypatch):
    store = FileTaskStore(tmp_path)
    store.open()
    monkeypatch.setattr(fsio, "_NAMES", itertools.count(1000))
    taken = tmp_path / f"{fsio.temp_prefix()}1000.json"  # left by a process of the same pid and start
    taken.write_bytes(b"not ours")
    store.save(task(1), expected_version=0)
    assert store.get("t1") == task(1)
    assert taken.read_bytes() == b"not ours"


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 65_537, 300_000])
def test_a_file_is_read_whole(way, tmp_path, size):
    path = tmp_path / "f"
    data = os.urandom(size)
    path.write_bytes(data)
    assert fsio.read_file(path) == data
    assert fsio.read_file(str(path), to_end=True) == data


def test_a_missing_file_is_file_not_found_with_its_name(way, tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        fsio.read_file(tmp_path / "missing.json")
    assert os.fspath(raised.value.filename) == str(tmp_path / "missing.json")
    assert FileTaskStore(tmp_path).get("missing") is None


def test_a_directory_replaced_is_the_one_synced_after(way, tmp_path):
    directory = tmp_path / "tasks"
    directory.mkdir()
    group = fsio.DirectorySync(directory, keep_open=True)
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


def test_a_journal_line_then_what_the_path_names(way, tmp_path):
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


def test_the_journal_follows_a_rotation_on_both_ways(way, tmp_path):
    writer = Journal(tmp_path)
    writer.append("first")
    os.rename(tmp_path / "journal", tmp_path / "journal.old")  # another process rotated it
    writer.append("second")
    assert (tmp_path / "journal").read_bytes().endswith(b' "second"\n')
