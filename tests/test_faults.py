"""Faults of the file store's disk: full, read-only, no permission (faked, and on a
real tiny tmpfs when this machine lets us mount one), and damaged or hand-edited task
files (read as missing, logged once, set aside by ``manage.py a2a_repair``)."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from a2a.testing.client import send_params
from stores.base import StaleTaskError
from stores.file import FileTaskStore
from stores.timestamps import now_iso
from tests.helpers import ASGI
from tests.syscalls_hooks import Hooked, failing

pytestmark = pytest.mark.django_db(databases="__all__")

# Every request below says status=200: a fault of the disk never answers an HTTP 500.


def a_task(task_id: str = "t1", state: str = "working", **extra) -> dict:
    return {"kind": "task", "id": task_id, "contextId": "c", "status": {"state": state, "timestamp": now_iso()},
            "_version": 2, **extra}  # fmt: skip


@pytest.fixture
def files(settings, tmp_path, file_syscalls) -> FileTaskStore:
    store = FileTaskStore(tmp_path / "tasks", syscalls=file_syscalls)
    store.open()
    settings.TASK_STORE = store
    return store


@pytest.fixture
def python_files(settings, tmp_path) -> FileTaskStore:
    """The file store on the Python backend, for a test that fails an ``os`` call in the
    middle of a save (the C companion fails as it does, on real faults: test_file_syscalls)."""
    store = FileTaskStore(tmp_path / "tasks", syscalls="python")
    store.open()
    settings.TASK_STORE = store
    return store


def task_files(store: FileTaskStore) -> list[str]:
    return sorted(p.name for p in store.directory.iterdir() if not p.is_dir())


# === the disk says no ===========================================================================

FAULTS = [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EIO]


@pytest.mark.parametrize("code", FAULTS, ids=[errno.errorcode[c] for c in FAULTS])
def test_a_failing_save_is_a_clear_internal_error_and_the_old_file_stays(python_files, monkeypatch, code):
    files = python_files
    files.save(a_task())
    before = files.path("t1").read_bytes()

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr("stores.file.fsio.os.replace", fail)
    error = ASGI.rpc("CancelTask", {"id": "t1"}, status=200)["error"]
    assert error["code"] == -32603
    assert error["message"] == f"could not save the task: {os.strerror(code)}"
    assert files.path("t1").read_bytes() == before  # the previous version, intact
    assert task_files(files) == ["t1.json"]  # and no temp file left
    assert ASGI.rpc("GetTask", {"id": "t1"}, status=200)["result"]["status"]["state"] == "working"  # still serving
    monkeypatch.undo()
    assert ASGI.rpc("CancelTask", {"id": "t1"}, status=200)["result"]["status"]["state"] == "canceled"


def test_a_send_the_disk_refuses_creates_nothing(python_files, monkeypatch):
    files = python_files

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("stores.file.fsio.os.fsync", no_space)
    error = ASGI.rpc("SendMessage", send_params("hello", None, blocking=True), status=200)["error"]
    assert error == {"code": -32603, "message": "could not save the task: No space left on device"}
    assert task_files(files) == []
    monkeypatch.undo()
    assert (
        ASGI.rpc("SendMessage", send_params("hello", None, blocking=True), status=200)["result"]["status"]["state"]
        == "completed"
    )


def test_a_read_only_directory(files, monkeypatch):
    files.save(a_task())
    monkeypatch.setattr(
        files, "syscalls", Hooked(files.syscalls, write_replace=failing(OSError(errno.EROFS, "Read-only file system")))
    )
    assert (
        ASGI.rpc("CancelTask", {"id": "t1"}, status=200)["error"]["message"]
        == "could not save the task: Read-only file system"
    )
    assert ASGI.rpc("ListTasks", {}, status=200)["result"]["tasks"][0]["id"] == "t1"  # reads go on


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 64 KiB tmpfs (skipped where mounting is not allowed)."""
    mountpoint = tmp_path / "tiny"
    mountpoint.mkdir()
    mount = shutil.which("mount")
    if mount is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run([mount, "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mountpoint)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def test_a_real_full_disk_then_a_real_read_only_one(settings, tiny_tmpfs, file_syscalls):
    store = FileTaskStore(tiny_tmpfs / "tasks", syscalls=file_syscalls)
    settings.TASK_STORE = store
    big = "x" * 40_000  # two copies (the file and its replacement's temp file) do not fit in 64 KiB
    store.save(a_task(artifacts=[{"artifactId": "a", "parts": [{"kind": "text", "text": big}]}]))
    before = store.path("t1").read_bytes()
    error = ASGI.rpc("CancelTask", {"id": "t1"}, status=200)["error"]
    assert error == {"code": -32603, "message": "could not save the task: No space left on device"}
    assert store.path("t1").read_bytes() == before
    assert not list(store.directory.glob(".tmp-*"))
    assert ASGI.rpc("GetTask", {"id": "t1"}, status=200)["result"]["status"]["state"] == "working"

    store.close()  # its journal, kept open for appending, would keep the volume from a read-only remount
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
    error = ASGI.rpc("CancelTask", {"id": "t1"}, status=200)["error"]
    assert error == {"code": -32603, "message": "could not save the task: Read-only file system"}
    assert store.path("t1").read_bytes() == before
    assert ASGI.rpc("GetTask", {"id": "t1"}, status=200)["result"]["status"]["state"] == "working"
    subprocess.run(["mount", "-o", "remount,rw,size=256k", str(tiny_tmpfs)], check=True)  # writable, room again
    assert ASGI.rpc("CancelTask", {"id": "t1"}, status=200)["result"]["status"]["state"] == "canceled"


# === damaged and hand-edited files ================================================================


def warnings_about(caplog, path: Path) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and str(path) in r.getMessage()]


def test_a_corrupt_file_reads_as_missing_and_is_logged_once(files, caplog):
    files.save(a_task("ok"))
    path = files.directory / "t1.json"
    path.write_bytes(b'{"id": "t1", "status": {"sta')
    for _ in range(3):
        assert files.get("t1") is None
        assert [t["id"] for t in files.list().tasks] == ["ok"]
    assert len(warnings_about(caplog, path)) == 1
    assert "is corrupt" in warnings_about(caplog, path)[0]
    path.write_bytes(b"{nope")  # damaged again, differently: worth another line
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    files.get("t1")
    assert len(warnings_about(caplog, path)) == 2


def test_a_hand_edited_id_reads_as_missing_everywhere(files, caplog):
    files.directory.joinpath("a.json").write_text(json.dumps(a_task("b")))
    assert files.get("a") is None and files.get("b") is None
    assert files.list().tasks == []
    assert "holds task 'b', which belongs in b.json" in caplog.text


def test_a_save_never_silently_replaces_a_damaged_file(files):
    path = files.path("t1")
    path.write_bytes(b"garbage 1")
    assert files.get("t1") is None  # noticed (and logged)
    files.save(a_task())  # last writer wins, but the damaged file is kept aside first
    assert files.get("t1")["status"]["state"] == "working"
    path.write_bytes(b"garbage 2")
    files.save(a_task("t1", _version=1), expected_version=0)  # a create over a damaged file too
    kept = sorted(p.read_bytes() for p in (files.directory / ".corrupt").iterdir())
    assert kept == [b"garbage 1", b"garbage 2"]
    with pytest.raises(StaleTaskError):
        files.save(a_task("t1", _version=3), expected_version=2)  # a damaged file is no version to update


def test_repair_command_moves_damaged_files_aside_and_never_overwrites(files, settings):
    files.save(a_task("ok"))
    damaged = files.directory / "t1.json"
    old_temp = files.directory / ".tmp-old.json"
    fresh_temp = files.directory / ".tmp-fresh.json"
    for n in (1, 2):
        damaged.write_bytes(f"garbage {n}".encode())
        old_temp.write_bytes(b"{")
        os.utime(old_temp, (time.time() - 3600, time.time() - 3600))
        fresh_temp.write_bytes(b"{")
        out, err = io.StringIO(), io.StringIO()
        call_command("a2a_repair", "--dry-run", stdout=out, stderr=err)
        assert damaged.exists() and "t1.json: is corrupt" in out.getvalue() and ".tmp-old.json" in out.getvalue()
        call_command("a2a_repair", stdout=out, stderr=err)
        assert not damaged.exists() and not old_temp.exists() and fresh_temp.exists()
        assert "Moved 1 damaged file(s)" in err.getvalue()
    kept = sorted(p.read_bytes() for p in (files.directory / ".corrupt").iterdir())
    assert kept == [b"garbage 1", b"garbage 2"]  # both kept: nothing overwritten
    assert [t["id"] for t in files.list().tasks] == ["ok"]  # the listing never shows .corrupt/


def test_temp_files_of_interrupted_writes_are_removed_at_start(tmp_path, caplog, file_syscalls):
    directory = tmp_path / "tasks"
    directory.mkdir()
    old, fresh = directory / ".tmp-dead.json", directory / ".tmp-live.json"
    old.write_bytes(b"{")
    os.utime(old, (time.time() - 120, time.time() - 120))
    fresh.write_bytes(b"{")
    FileTaskStore(directory, syscalls=file_syscalls).open()
    assert not old.exists() and fresh.exists()  # a live writer's temp file is left alone
    assert "removed 1 temp file(s)" in caplog.text
    FileTaskStore(directory, stale_temp_seconds=0, syscalls=file_syscalls).open()
    assert not fresh.exists()


def test_repair_on_the_orm_store_lists_damaged_rows(settings):
    from django.db import connection

    from stores.orm import OrmTaskStore

    store = OrmTaskStore()
    settings.TASK_STORE = store
    store.save(a_task("good"))
    store.save(a_task("bad"))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE stores_taskrecord SET task = %s WHERE id = %s", ['"not a task"', "bad"])
    out, err = io.StringIO(), io.StringIO()
    call_command("a2a_repair", stdout=out, stderr=err)
    assert out.getvalue() == "row 'bad': does not hold task 'bad'\n"
