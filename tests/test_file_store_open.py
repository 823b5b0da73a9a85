"""The file store touches nothing on disk until it is used, and its check says up front
when its directory cannot be used."""

from __future__ import annotations

import os

import pytest

from stores.file import FileTaskStore


def problems(store: FileTaskStore) -> list:
    """What the store's check says but which backend it uses (stores.I001: test_file_syscalls)."""
    return [message for message in store.check() if message.id != "stores.I001"]


def test_making_the_store_does_no_io(tmp_path, file_syscalls):
    directory = tmp_path / "a" / "tasks"
    store = FileTaskStore(directory, syscalls=file_syscalls)
    assert not (tmp_path / "a").exists()
    assert problems(store) == []  # safe on the instance, and creates nothing either
    assert not (tmp_path / "a").exists()
    assert store.get("t1") is None  # first use: the directory is made
    assert directory.is_dir()


def test_the_first_use_removes_dead_writers_temp_files_once(tmp_path, file_syscalls):
    stale = tmp_path / ".tmp-dead.json"
    for where in (tmp_path, tmp_path / ".locks", tmp_path / ".index"):
        where.mkdir(exist_ok=True)
        (where / stale.name).write_bytes(b"{")
        os.utime(where / stale.name, (0, 0))
    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    assert len(store.stale_temp_files()) == 3  # the tasks', the journal's and the snapshot's directories
    store.list()
    assert store.stale_temp_files() == []


def test_a_directory_that_cannot_be_made_is_reported_by_the_check(tmp_path, file_syscalls):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    store = FileTaskStore(blocker / "tasks", syscalls=file_syscalls)
    [error] = problems(store)
    assert error.id == "stores.E003"
    assert "is not a directory" in error.msg


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_read_only_directory_is_reported_by_the_check(tmp_path, file_syscalls):
    tmp_path.chmod(0o500)
    try:
        [error] = problems(FileTaskStore(tmp_path / "tasks", syscalls=file_syscalls))
    finally:
        tmp_path.chmod(0o700)
    assert "cannot be written" in error.msg


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_a_directory_nobody_may_create_is_reported_as_root_too(file_syscalls):
    """Root passes every permission bit (os.access says yes): the check tries instead."""
    [error] = problems(FileTaskStore("/proc/a2a-tasks", syscalls=file_syscalls))
    assert error.id == "stores.E003" and "cannot be created in /proc" in error.msg
    assert "Point TASK_STORE at a directory" in error.hint


def test_the_check_tries_a_write_and_leaves_nothing_behind(tmp_path, file_syscalls):
    assert problems(FileTaskStore(tmp_path, syscalls=file_syscalls)) == []  # the directory exists: a file tried in it
    assert (
        problems(FileTaskStore(tmp_path / "new" / "tasks", syscalls=file_syscalls)) == []
    )  # missing: a directory tried beside
    assert list(tmp_path.iterdir()) == []
