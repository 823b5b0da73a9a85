"""Issue 14, item 7 (last part): after ``kill -9`` of a writer, its ``.tmp-*.json``
files are removed by the next start of the file store at once, not only once they
are a minute old; a temp file a live process is writing right now is never removed.

Temp files are named ``.tmp-<host>.<pid>.<started>.<random>.json``: a start-up
removes those of this host whose process is gone (or whose pid now names a process
started later); any other temp file only once it is ``stale_temp_seconds`` old.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stores.file import FileTaskStore

ROOT = Path(__file__).resolve().parent.parent

#: A writer that dies by SIGKILL in the middle of a save: after its temp file is
#: written and before it replaces the task file (as a kill -9 under load does).
KILLED_WRITER = """
import os, signal, sys
from stores.file import FileTaskStore
def die(*args):
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = die
store = FileTaskStore(sys.argv[1], fsync=False, syscalls="python")  # its calls from Python, to stop between two
store.save({"id": "t1", "contextId": "c", "status": {"state": "working"}})
"""

#: A writer that is in the middle of a save (its temp file written) until told to go on.
LIVE_WRITER = """
import os, sys
from stores.file import FileTaskStore
def wait(source, target):
    print("writing", flush=True)
    sys.stdin.readline()
    os.rename(source, target)
os.replace = wait
store = FileTaskStore(sys.argv[1], fsync=False, syscalls="python")  # its calls from Python, to stop between two
store.save({"id": "t2", "contextId": "c", "status": {"state": "working"}})
print("saved", flush=True)
"""


def python(script: str, directory: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", script, str(directory)], cwd=ROOT, env=env, text=True, **kwargs)


def temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob(".tmp-*"))


def host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def started(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat[stat.rindex(b")") + 2 :].split()[19])


def test_a_start_right_after_a_kill_removes_the_dead_writers_temp_file(tmp_path, caplog, file_syscalls):
    directory = tmp_path / "tasks"
    directory.mkdir()
    killed = python(KILLED_WRITER, directory)
    assert killed.wait(30) == -9
    left = temps(directory)
    assert len(left) == 1  # what kill -9 leaves behind
    FileTaskStore(directory, syscalls=file_syscalls).open()  # a restart at once (not a minute later)
    assert temps(directory) == []
    assert "removed 1 temp file(s)" in caplog.text


def test_a_live_writers_temp_file_is_left_alone(tmp_path, file_syscalls):
    directory = tmp_path / "tasks"
    directory.mkdir()
    writer = python(LIVE_WRITER, directory, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert writer.stdout.readline().strip() == "writing"
        [live] = temps(directory)
        store = FileTaskStore(directory, syscalls=file_syscalls)  # another process starts meanwhile
        store.open()
        assert temps(directory) == [live]
        assert store.stale_temp_files() == []
        writer.stdin.write("go on\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "saved"  # its save went through
    finally:
        writer.stdin.close()
        writer.wait(30)
    assert writer.returncode == 0
    assert temps(directory) == []
    assert store.get("t2")["status"]["state"] == "working"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process start times are read from /proc")
def test_a_reused_pid_or_another_hosts_file(tmp_path, file_syscalls):
    directory = tmp_path / "tasks"
    directory.mkdir()
    me, when = os.getpid(), started(os.getpid())
    reused = directory / f".tmp-{host_tag()}.{me}.{when - 1}.abcdefgh.json"  # this pid, an earlier process
    mine = directory / f".tmp-{host_tag()}.{me}.{when}.abcdefgh.json"  # this very process, writing
    remote = directory / f".tmp-0badcafe.{2**22 + 7}.1.abcdefgh.json"  # another host: only its age tells
    old_remote = directory / f".tmp-0badcafe.{2**22 + 8}.1.abcdefgh.json"
    for path in (reused, mine, remote, old_remote):
        path.write_bytes(b"{")
    an_hour_ago = time.time() - 3600
    os.utime(old_remote, (an_hour_ago, an_hour_ago))
    FileTaskStore(directory, syscalls=file_syscalls).open()
    assert temps(directory) == sorted([mine.name, remote.name])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_names_its_temp_files_after_itself(tmp_path):
    """The prefix is worked out once per process: a child forked after the parent's
    first save must not write temp files under the parent's pid (a start-up would then
    take the child's live temp file for a dead writer's once the parent is gone)."""
    from stores.file.fsio import temp_prefix

    parent = temp_prefix()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its prefix and its own pid and start time
        try:
            os.write(write, f"{temp_prefix()}|.tmp-{host_tag()}.{os.getpid()}.{started(os.getpid())}.".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        child, expected = fh.read().decode().split("|")
    os.waitpid(pid, 0)
    assert parent == f".tmp-{host_tag()}.{os.getpid()}.{started(os.getpid())}."
    assert child == expected != parent
