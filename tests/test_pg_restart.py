"""PostgreSQL restarts under load: the server recovers by itself, and no acknowledged
task is lost.

A private PostgreSQL cluster (``initdb`` into a temporary directory, its own port;
never the machine's shared server) backs the ORM store of a real uvicorn server.
Clients send non-blocking SendMessages while PostgreSQL is restarted twice: once
cleanly (``pg_ctl restart -m fast``) and once as after a crash (``-m immediate``:
no shutdown checkpoint, WAL replay at start). Then:

- requests succeed again after each restart without anything done to the server;
- every task the server acknowledged (answered ``submitted``) is in the database and
  ends terminal: those in flight at the restart finish once it is back (the runner
  retries the save of a handler's outcome; one whose start failed to save is run
  after its lease); only a task whose start was saved but not answered may fail,
  honestly (the lease rules, with ``A2A_RETRY_ON_LOST_LEASE`` off as by default).

About 25 s, and 40 s for the queue workers' variant (the second test).
``A2A_PG_RESTARTS=6`` restarts more often (alternating fast and immediate).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from a2a.testing.client import rpc_body
from tests.ports import free_port
from tests.server import manage, running_server, site_env

pytestmark = pytest.mark.slow

RESTARTS = int(os.environ.get("A2A_PG_RESTARTS", "2"))
CLIENTS = 6
TERMINAL = {"completed", "failed", "canceled", "rejected"}


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    """A PostgreSQL cluster of this test's own, run as the ``postgres`` user."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="a2a-pg-"))
        self.port = free_port()
        self.data = self.dir / "data"
        shutil.chown(self.dir, "postgres", "postgres")
        self._as_postgres(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def _as_postgres(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, cwd=self.dir)

    def pg_ctl(self, action: str, *args: str) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir}"
        self._as_postgres(
            str(self.bin / "pg_ctl"),
            action,
            "-D",
            str(self.data),
            "-w",
            "-l",
            str(self.dir / "log"),
            "-o",
            options,
            *args,
        )

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/a2a"

    def start(self) -> None:
        self.pg_ctl("start")
        with psycopg.connect(f"postgres://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE a2a")

    def restart(self, mode: str) -> None:
        self.pg_ctl("restart", "-m", mode)

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    bin_dir = postgres_bin()
    if bin_dir is None or (os.geteuid() == 0 and shutil.which("runuser") is None):
        if os.environ.get("CI"):
            pytest.fail("CI must run the PostgreSQL restart test: install PostgreSQL")
        pytest.skip("no PostgreSQL binaries under /usr/lib/postgresql")
    server = PrivatePostgres(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.remove()


class Load:
    """CLIENTS threads sending non-blocking SendMessages until stopped; remembers every
    task acknowledged, and when the last request succeeded / failed."""

    def __init__(self, base: str) -> None:
        self.endpoint = f"{base}/a2a/"
        self.stop = threading.Event()
        self.acknowledged: set[str] = set()
        self.failures = 0
        self.bad_status: list[int] = []
        self.last_ok = 0.0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.client, args=(n,)) for n in range(CLIENTS)]

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def finish(self) -> None:
        """Stop sending and wait for the requests in flight, so every acknowledgement
        is counted before the test checks the tasks."""
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def client(self, n: int) -> None:
        with httpx.Client(timeout=10) as http:
            while not self.stop.is_set():
                message = {
                    "role": "user",
                    "messageId": str(uuid.uuid4()),
                    "parts": [{"kind": "text", "text": "sleep:0.1"}],
                }
                body = rpc_body("SendMessage", {"message": message, "configuration": {"blocking": False}}, n)
                response = http.post(self.endpoint, json=body)
                answer = response.json()
                with self.lock:
                    if response.status_code >= 500:
                        self.bad_status.append(response.status_code)
                    if "result" in answer:
                        assert answer["result"]["status"]["state"] == "submitted", answer
                        self.acknowledged.add(answer["result"]["id"])
                        self.last_ok = time.monotonic()
                    else:
                        assert answer["error"]["code"] == -32603, answer  # the store could not save
                        self.failures += 1
                time.sleep(0.02 if "result" in answer else 0.1)

    def wait_for_success(self, after: float, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.last_ok > after:
                return
            time.sleep(0.05)
        raise AssertionError(f"no request succeeded within {timeout}s of the restart")

    def settled(self, database_url: str, timeout: float) -> list[tuple[str, object]]:
        """Once every acknowledged task is stored and terminal (AssertionError when one is
        missing, or when ``timeout`` seconds pass with none of those still going ending:
        stuck, not slow; a queue working through its backlog on a loaded machine keeps
        the wait going, up to ten times ``timeout`` in all): those failed, canceled or
        rejected, with their status message. Settled tasks only: one saved but never
        acknowledged (its answer lost in the restart) may still be running, and is not
        what this judges."""
        started = time.monotonic()
        deadline = started + timeout
        pending = set(self.acknowledged)
        while pending and time.monotonic() < min(deadline, started + 10 * timeout):
            with psycopg.connect(database_url) as conn:
                rows = dict(conn.execute("SELECT id, state FROM stores_taskrecord").fetchall())
            missing = self.acknowledged - rows.keys()
            assert not missing, f"{len(missing)} acknowledged tasks are not in the database"
            still = {t for t in pending if rows[t] not in TERMINAL}
            if len(still) < len(pending):  # progress: the clock of "stuck" starts again
                deadline = time.monotonic() + timeout
            pending = still
            time.sleep(0.2)
        if pending:
            with psycopg.connect(database_url) as conn:
                stuck = conn.execute(
                    "SELECT id, state, task->'_lease' FROM stores_taskrecord WHERE id = ANY(%s) ORDER BY id LIMIT 3",
                    [sorted(pending)],
                ).fetchall()
            raise AssertionError(f"{len(pending)} tasks never ended, e.g. {stuck}")
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                "SELECT id, task->'status'->'message' FROM stores_taskrecord"
                " WHERE state IN ('failed', 'canceled', 'rejected')"
            ).fetchall()


def test_the_server_rides_out_postgres_restarts_and_loses_no_acknowledged_task(postgres, tmp_path):
    env = site_env(
        TASK_STORE="orm",
        DATABASE_URL=postgres.url,
        A2A_HANDLER="tests.handlers.journaled",
        A2A_TEST_RUNS_FILE=str(tmp_path / "runs"),
        A2A_LEASE_SECONDS="3",
        A2A_LEASE_CHECK_INTERVAL="0.5",
        A2A_RETRY_ON_LOST_LEASE="false",  # the default: a run cut by the restart is not run again
        A2A_LOG_LEVEL="WARNING",
    )
    manage("migrate", "--noinput", env=env)
    with running_server(env, log=tmp_path / "server.log") as base, Load(base) as load:
        time.sleep(1.5)
        for i in range(RESTARTS):
            before = len(load.acknowledged)
            postgres.restart("fast" if i % 2 == 0 else "immediate")
            restarted = time.monotonic()
            load.wait_for_success(after=restarted, timeout=15)  # no manual step
            time.sleep(1.0)
            assert len(load.acknowledged) > before
        recovered = (tmp_path / "server.log").stat().st_size
        time.sleep(1.0)
        load.finish()
        assert load.failures or RESTARTS == 0  # the restarts were felt
        assert not load.bad_status, f"HTTP {load.bad_status[:5]}: a failed save must be a JSON-RPC error"

        # Every acknowledged task is stored and ends terminal.
        failed = load.settled(postgres.url, timeout=30)
        # Only a task whose start was saved but not answered (the connection dropped
        # meanwhile) may have failed, honestly, by the lease rules: its process "stopped".
        for task_id, message in failed:
            assert "stopped" in json.dumps(message), (task_id, message)
    # No thread kept a connection the restart closed (each one's next use reconnects).
    with open(tmp_path / "server.log", "rb") as log:
        log.seek(recovered)
        assert b"the connection is closed" not in log.read()
    print(f"{len(load.acknowledged)} acknowledged, {load.failures} refused during restarts, {len(failed)} failed")


def test_queue_workers_ride_out_a_postgres_restart(postgres, tmp_path):
    """The same on the distributed set-up (deploy/cluster.py on the private cluster):
    a db_worker that meets the restart exits and is restarted by its supervisor; web
    processes keep accepting; every acknowledged task ends terminal, and one that
    failed says honestly why (its worker stopped)."""
    from deploy.cluster import Cluster

    settings = {
        "A2A_HANDLER": "tests.handlers.journaled",
        "A2A_TEST_RUNS_FILE": str(tmp_path / "runs"),
        "A2A_LEASE_SECONDS": "3",
        "A2A_LEASE_CHECK_INTERVAL": "0.5",
        "A2A_SHUTDOWN_GRACE": "5",
        "A2A_LOG_LEVEL": "WARNING",
        "A2A_EVENTS_CHANNEL": f"a2a_pgr_{uuid.uuid4().hex[:10]}",
    }
    cluster = Cluster(tmp_path / "cluster", database_url=postgres.url, web=1, workers=2, port=0, settings=settings)
    with cluster, Load(cluster.urls[0]) as load:
        time.sleep(1.5)
        postgres.restart("fast")
        load.wait_for_success(after=time.monotonic(), timeout=15)
        time.sleep(2.0)
        load.finish()
        assert not load.bad_status, f"HTTP {load.bad_status[:5]}: a failed save must be a JSON-RPC error"
        failed = load.settled(postgres.url, timeout=40)
        for task_id, message in failed:
            assert "stopped" in json.dumps(message) or "shut down" in json.dumps(message), (task_id, message)
        restarts = sum(p.starts - 1 for p in cluster.worker_processes)
    print(f"{len(load.acknowledged)} acknowledged, {len(failed)} failed, {restarts} worker restarts")
