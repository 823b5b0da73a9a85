"""Power loss, not just ``kill -9``: the file store (the store that promises its saves
survive power loss, by fsyncing the file and then the directory) is run under a shim
that journals its file operations (tests/powerloss.py); the task directory is then
rebuilt as the disk would hold it had the power failed, keeping only what was synced,
a store is started on it, and every task a client was told about must be there, parse,
and be at least as far as the client was told.

- In-process, every cut: threads save tasks through a ``FileTaskStore`` and note each
  save's acknowledgement in the journal once ``save`` returned; the directory is rebuilt
  for *every* prefix of the journal (every moment the power could fail).
- End to end (``slow``): the real server under concurrent clients is ``kill -9``-ed at
  a random (seeded) moment; the power fails at the same moment.

Each on both system-call backends (the ``file_syscalls`` fixture: ``os``, and the C
companion, whose calls the shim journals as it makes them). Negative controls prove the
checker can fail: the same runs with the directory's fsyncs dropped, with file fsyncs
dropped, and with ``fsync=False``, must report loss.
The ORM stores are not covered here (SQLite's and PostgreSQL's fsyncs are made in C,
out of this shim's reach; their durability is the database's).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from a2a.protocol.model import new_task, set_status
from a2a.testing.client import rpc_body
from stores.file import FileTaskStore
from stores.file.syscalls import Syscalls
from tests.ports import free_port
from tests.powerloss import Shim, Verdict, at_least, check, materialize, read_journal, replay
from tests.server import ROOT, running_process, site_env

SEED = int(os.environ.get("A2A_POWERLOSS_SEED", "20261201"))
THREADS = 4
TASKS_PER_THREAD = 6


def message() -> dict:
    return {"kind": "message", "role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": "x"}]}


def save_under_load(store: FileTaskStore, shim: Shim) -> None:
    """THREADS threads, each taking TASKS_PER_THREAD tasks through submitted, working and
    a terminal state, noting each acknowledged save in the journal."""

    def work(n: int) -> None:
        for i in range(TASKS_PER_THREAD):
            task = new_task(message(), context_id=f"ctx-{n}")
            for state in ("submitted", "working", "completed" if i % 3 else "canceled"):
                set_status(task, state)
                store.save(task)
                shim.ack(task["id"], state)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


def every_cut(
    tmp_path: Path, syscalls: Syscalls, *, fsync: bool = True, skip_file_sync: bool = False, skip_dir_sync: bool = False
) -> tuple[int, int, Verdict]:
    """Run the saves under the shim, then judge the directory at every cut of the journal:
    (cuts, acknowledged tasks, the verdicts of all cuts merged)."""
    root, journal = tmp_path / "tasks", tmp_path / "journal"
    root.mkdir()
    shim = Shim(root, journal, skip_file_sync=skip_file_sync, skip_dir_sync=skip_dir_sync).install()
    try:
        store = FileTaskStore(root, fsync=fsync, syscalls=shim.syscalls(syscalls))
        save_under_load(store, shim)
    finally:
        shim.uninstall()
    events = read_journal(journal)
    # The shim saw every entry the store made: its view is the real directory.
    real = {e.name for e in os.scandir(root) if e.is_file()}
    assert replay(events).current == real
    merged = Verdict()
    acknowledged_total = 0
    for cut in range(len(events) + 1):
        after = replay(events[:cut])
        acknowledged: dict[str, str] = {}
        for task_id, state in after.acks:
            acknowledged[task_id] = state
        acknowledged_total = len(acknowledged)
        store = FileTaskStore(
            materialize(after.disk, tmp_path / f"cut-{cut}"), stale_temp_seconds=None, syscalls=syscalls
        )
        verdict = check(store, acknowledged)
        merged.lost += [f"{i}@{cut}" for i in verdict.lost]
        merged.behind += verdict.behind
        merged.damaged += [(f"{name}@{cut}", problem) for name, problem in verdict.damaged]
    return len(events) + 1, acknowledged_total, merged


def summary(verdict: Verdict) -> str:
    return f"{len(verdict.lost)} lost, {len(verdict.behind)} behind, {len(verdict.damaged)} damaged (over all cuts)"


def test_no_acknowledged_save_is_lost_at_any_cut(tmp_path, file_syscalls):
    cuts, acknowledged, verdict = every_cut(tmp_path, file_syscalls)
    assert acknowledged == THREADS * TASKS_PER_THREAD
    assert verdict.clean, summary(verdict) + f": {verdict.lost[:5]} {verdict.behind[:5]} {verdict.damaged[:5]}"
    print(f"\n{file_syscalls.description}: file (fsync) x power cut at {cuts} points -> {summary(verdict)}")


def test_the_checker_catches_a_store_that_skips_the_directory_fsync(tmp_path, file_syscalls):
    cuts, acknowledged, verdict = every_cut(tmp_path, file_syscalls, skip_dir_sync=True)
    assert acknowledged == THREADS * TASKS_PER_THREAD
    assert verdict.lost, "a store that never syncs its directory lost nothing?"
    print(
        f"\n{file_syscalls.description}: file (no directory fsync) x power cut at {cuts} points -> {summary(verdict)}"
    )


def test_the_checker_catches_a_store_that_skips_the_file_fsync(tmp_path, file_syscalls):
    cuts, acknowledged, verdict = every_cut(tmp_path, file_syscalls, skip_file_sync=True)
    assert acknowledged == THREADS * TASKS_PER_THREAD
    assert verdict.damaged and verdict.lost, summary(verdict)
    print(
        f"\n{file_syscalls.description}: file (file fsync dropped) x power cut at {cuts} points -> {summary(verdict)}"
    )


def test_fsync_false_is_durable_to_a_process_crash_only(tmp_path, file_syscalls):
    """``fsync=False`` (documented as not surviving power loss) is caught losing tasks."""
    cuts, acknowledged, verdict = every_cut(tmp_path, file_syscalls, fsync=False)
    assert acknowledged == THREADS * TASKS_PER_THREAD
    assert verdict.lost, summary(verdict)
    print(f"\n{file_syscalls.description}: file (fsync=False) x power cut at {cuts} points -> {summary(verdict)}")


# === end to end: kill -9 under load, and the power fails with it ===================================

CLIENTS = 6
TEXTS = ["sleep:0", "sleep:0.05", "sleep:0.2", "sleep:0.5"]


class Clients:
    """CLIENTS threads sending SendMessages (half blocking: answered with the terminal
    state) and some CancelTasks; ``acknowledged`` is the furthest state each task was
    answered with, by an answer to the client's own write."""

    def __init__(self, base: str, rng: random.Random) -> None:
        self.endpoint = f"{base}/a2a/"
        self.acknowledged: dict[str, str] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.plan = [(rng.random() < 0.5, rng.choice(TEXTS)) for _ in range(500)]
        self.threads = [threading.Thread(target=self.client, args=(n,)) for n in range(CLIENTS)]

    def note(self, task: dict) -> None:
        state = task["status"]["state"]
        with self.lock:
            before = self.acknowledged.get(task["id"])
            if before is None or at_least(state, before):
                self.acknowledged[task["id"]] = state

    def client(self, n: int) -> None:
        with httpx.Client(timeout=5) as http:
            i = n
            while not self.stop.is_set():
                i += CLIENTS
                blocking, text = self.plan[i % len(self.plan)]
                msg = {"role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": text}]}
                body = rpc_body("SendMessage", {"message": msg, "configuration": {"blocking": blocking}}, i)
                try:
                    task = http.post(self.endpoint, json=body).json()["result"]
                except Exception:
                    if self.stop.wait(0.01):
                        return
                    continue
                self.note(task)
                if not blocking and i % 4 == 0:
                    cancel = rpc_body("CancelTask", {"id": task["id"]}, i)
                    with contextlib.suppress(Exception):
                        answer = http.post(self.endpoint, json=cancel).json()
                        if "result" in answer:
                            self.note(answer["result"])
                self.stop.wait(0.05)

    def __enter__(self) -> Clients:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


@pytest.mark.slow
@pytest.mark.parametrize("skip", ["", "dirsync"])
def test_kill_9_under_load_then_power_cut(skip, file_syscalls, tmp_path):
    rng = random.Random(SEED)
    root, journal = tmp_path / "tasks", tmp_path / "journal"
    root.mkdir()
    env = site_env(
        TASK_STORE=json.dumps({"BACKEND": f"file:{root}"}),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        A2A_HANDLER="tests.handlers.recording",
        A2A_TEST_RUNS_FILE=str(tmp_path / "runs"),
        A2A_LOG_LEVEL="WARNING",
        A2A_SHUTDOWN_GRACE="0",
        A2A_POWERLOSS_DIR=str(root),
        A2A_POWERLOSS_JOURNAL=str(journal),
        A2A_POWERLOSS_SKIP=skip,
        A2A_POWERLOSS_SYSCALLS=file_syscalls.name,
    )
    port = free_port()
    command = [sys.executable, "-m", "tests.powerloss", "toolnexus_site.asgi:application",
               "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]  # fmt: skip
    with running_process(command, port, env=env, cwd=ROOT, log=tmp_path / "server.log") as base:
        with Clients(base, rng) as clients:
            deadline = time.monotonic() + 20
            while len(clients.acknowledged) < 3 * CLIENTS and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.2, 1.5))
            os.kill(base.pid, signal.SIGKILL)  # and the power fails at this moment
            time.sleep(0.2)  # answers already on the wire still arrive
        acknowledged = dict(clients.acknowledged)
    assert len(acknowledged) >= 3 * CLIENTS, "the load did not get going"

    events = read_journal(journal)
    after = replay(events)
    real = {e.name for e in os.scandir(root) if e.is_file()}
    # The shim saw the store's entries. Only an operation the kill cut between doing it and
    # journaling it can make them differ: two names at most for each one in flight (the
    # journal lock lets one at a time through, so in practice 0 or 2).
    assert len(after.current ^ real) <= 2, after.current ^ real
    store = FileTaskStore(materialize(after.disk, tmp_path / "after"), stale_temp_seconds=None, syscalls=file_syscalls)
    verdict = check(store, acknowledged)
    states: dict[str, int] = {}
    for state in acknowledged.values():
        states[state] = states.get(state, 0) + 1
    outcome = (
        f"{len(acknowledged)} acknowledged {states}: {summary(verdict).replace(' (over all cuts)', '')} "
        f"({len(events)} file operations journaled; the shim's view differs from the directory by "
        f"{len(after.current ^ real)} name(s))"
    )
    if skip:
        assert verdict.lost, f"the checker missed a store that skips the directory fsync: {outcome}"
    else:
        assert verdict.clean, f"{outcome}: {verdict.lost[:5]} {verdict.behind[:5]} {verdict.damaged[:5]}"
    skipped = " (directory fsync skipped)" if skip else ""
    print(f"\n{file_syscalls.description}: file{skipped} x kill -9 + power cut -> {outcome}")
