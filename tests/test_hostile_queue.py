"""The queue executor under hostile conditions (issue 14, "Also prove"), end to end on
the distributed deployment of deploy/cluster.py: the ORM store on PostgreSQL,
``A2A_EXECUTOR = "tasks"`` (django-tasks-db, its queue in the same database), one
uvicorn web process and ``manage.py db_worker`` processes (each runs one task at a time), events over Redis.

1. Workers ``kill -9``-ed under load, several times, each restarted (the cluster's
   supervisor restarts a worker that exits, as systemd would): every acknowledged
   task ends terminal within a bound, none is left ``working`` or ``submitted``,
   none runs twice (the handler journals each run's start and end to a file), every
   task that was not on a killed worker completes, and a run cut by a kill is failed
   with the lease's honest message (``A2A_RETRY_ON_LOST_LEASE`` is off, the default).
2. The Redis server carrying the events restarted (a private one, on a port of its
   own) while streams follow tasks that run on the workers: every stream ends, on
   the task's terminal event or in a way a client recovers from (it subscribes again,
   or reads the task), within a bound; every task ends terminal.

Found by (2), and tested on every store without servers (fast): a second job for a
task that a worker is running, handed to that same worker (the queue holds two jobs
for one task once the task waited on the queue longer than its lease and the reaper
enqueued it again), took the first job's place in the runner: the running task's
lease was no longer renewed, and the worker's own reaper failed it ("The process
running this task stopped") while its handler ran on.

The end-to-end tests need A2A_TEST_POSTGRES_URL (each test makes and drops a database of its own) and,
for the first test, a Redis (A2A_TEST_REDIS_URL); the second needs ``redis-server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from a2a.protocol.model import SendParams
from a2a.runtime.runner import get_runner
from a2a.service import operations
from a2a.testing.client import rpc_body
from deploy.cluster import Cluster
from tests.db_marks import store_params
from tests.helpers import live_result as rpc
from tests.helpers import live_submit as send
from tests.ports import free_port
from tests.server import postgres_database

POSTGRES_URL = os.environ.get("A2A_TEST_POSTGRES_URL", "")
REDIS_URL = os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
HEADERS = {"A2A-Version": "1.0"}
LEASE = 3.0
#: Seconds a test waits for its tasks to end. A stuck task never ends, so the bound only
#: says how long a failure takes to show: generous, as a loaded CI machine is slow.
SETTLE = 60 + LEASE * 4

needs_postgres = pytest.mark.skipif(not POSTGRES_URL, reason="A2A_TEST_POSTGRES_URL is not set")


def settle_all(base: str, task_ids: list[str], http: httpx.Client, bound: float) -> tuple[dict[str, dict], float]:
    """Poll GetTask until every task is terminal (or ``bound`` seconds pass): the final
    tasks, and the seconds it took."""
    began = time.monotonic()
    pending, final = set(task_ids), {}
    while pending and time.monotonic() - began < bound:
        for task_id in sorted(pending):
            task = rpc(base, "GetTask", {"id": task_id}, http)
            if task["status"]["state"] in TERMINAL:
                final[task_id] = task
                pending.discard(task_id)
        time.sleep(0.2)
    states = {t: rpc(base, "GetTask", {"id": t}, http)["status"]["state"] for t in sorted(pending)[:5]}
    assert not pending, f"{len(pending)} acknowledged tasks not terminal after {bound}s: {states}"
    return final, time.monotonic() - began


def journal(path: Path) -> dict[str, list[tuple[str, int]]]:
    """task id -> [(start|end, pid), ...] in file order (tests.handlers.journaled)."""
    runs: dict[str, list[tuple[str, int]]] = defaultdict(list)
    if path.exists():
        for line in path.read_text().splitlines():
            what, pid, task_id, _when, _canceled = line.split()
            runs[task_id].append((what, int(pid)))
    return runs


def lost_leases(directory: Path) -> dict[str, int]:
    """task id -> the pid that held the lease of a task the lease check settled (from the
    cluster's logs: "task <id> (working) lost its lease (held by <host>:<pid>:<token>, ...")."""
    found = {}
    for log in directory.glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if "lost its lease (held by " in line:
                task_id = line.split(" task ", 1)[1].split()[0]
                found[task_id] = int(line.split("(held by ", 1)[1].split(":")[1])
    return found


def report(row: str) -> None:
    """A measured outcome, "store x fault -> outcome" (shown with ``pytest -s``)."""
    print(f"\n[outcome] {row}", flush=True)


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_database(POSTGRES_URL, "a2a_hostile_queue") as url:
        yield url


# --- A second job for a running task, in the same process -----------------------------------------


@pytest.mark.parametrize("store_kind", store_params(transaction=True))
def test_a_second_job_for_a_running_task_leaves_it_running(use_store, settings, tmp_path, monkeypatch):
    """The task is submitted to this process's runner twice (as a worker gets a second
    queue job for it) while its handler runs for several lease periods: it completes,
    its handler ran once, its lease kept being renewed."""
    runs = tmp_path / "runs"
    monkeypatch.setenv("A2A_TEST_RUNS_FILE", str(runs))
    settings.A2A_HANDLER = "tests.handlers.journaled"
    settings.A2A_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    settings.A2A_LEASE_CHECK_INTERVAL = 0.2
    message = {"kind": "message", "messageId": f"m-{uuid.uuid4()}", "role": "user",
               "parts": [{"kind": "text", "text": "sleep:2"}]}  # fmt: skip
    task = asyncio.run(operations.send_message(SendParams(message=message, blocking=False)))
    deadline = time.monotonic() + 10
    while use_store.get(task["id"])["status"]["state"] == "submitted" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert use_store.get(task["id"])["status"]["state"] == "working"
    second = get_runner().submit(task["id"])  # the duplicate job, while the handler runs
    deadline = time.monotonic() + 10
    while (state := use_store.get(task["id"])["status"]["state"]) == "working" and time.monotonic() < deadline:
        time.sleep(0.02)
    second.result(5)
    done = use_store.get(task["id"])
    assert state == "completed", done["status"]
    assert "_lease" not in done
    assert [line.split()[0] for line in runs.read_text().splitlines()] == ["start", "end"]


# --- 1. Workers killed under load ---------------------------------------------------------------


def kill_busy_workers(cl: Cluster, runs: Path, kills: int) -> set[int]:
    """kill -9 ``kills`` live workers, each while it runs handlers (an open "start" in the
    journal), one every 1.5 s: their pids."""
    killed: set[int] = set()
    deadline = time.monotonic() + 45
    while len(killed) < kills and time.monotonic() < deadline:
        live = {p.pid for p in cl.worker_processes if p.popen is not None and p.popen.poll() is None}
        running = {entries[-1][1] for entries in journal(runs).values() if entries[-1][0] == "start"}
        victims = sorted((running & live) - killed)
        if not victims:
            time.sleep(0.05)
            continue
        os.kill(victims[0], signal.SIGKILL)
        killed.add(victims[0])
        time.sleep(1.5)  # the supervisor restarts it a second later; more tasks start meanwhile
    return killed


def count_runs(task_id: str, entries: list[tuple[str, int]], killed: set[int]) -> int:
    """How many runs the journal shows. Each run: a start, then its end unless a kill cut
    it. A run starts only once the one before it ended, or its worker was killed (then
    the lease expired first)."""
    previous: list[tuple[str, int]] = []
    starts = 0
    for what, pid in entries:
        if what == "start":
            starts += 1
            if previous and previous[-1][0] == "start":
                assert previous[-1][1] in killed, f"two runs of {task_id} at once: {entries}"
        else:
            assert previous and previous[-1] == ("start", pid), entries
        previous.append((what, pid))
    return starts


def check_lost_run(task_id: str, status: dict, entries: list, reaped: dict, killed: set[int], retry: bool) -> None:
    """A task not completed: only a run a kill cut (or whose outcome the kill kept from
    being saved) fails, with the lease's message; a task no worker started is re-run."""
    assert status["state"] == "TASK_STATE_FAILED", status
    assert not retry, f"task {task_id} failed though lost runs are retried: {status} {entries}"
    # (a kill between the save of "working" and the handler's first line leaves no journal)
    assert reaped.get(task_id) in killed, f"task {task_id} failed, not on a killed worker: {status} {entries}"
    assert not entries or entries[0][1] == reaped[task_id], entries
    text = status["message"]["parts"][0]["text"]
    assert text.startswith("The process running this task stopped"), text


@pytest.mark.slow
@needs_postgres
@pytest.mark.parametrize("retry", [False, True], ids=["retry-off", "retry-on"])
def test_workers_killed_under_load_lose_nothing_and_run_nothing_twice(database, tmp_path, retry):
    """``retry-off`` (the default): a run a kill cut is failed, nothing runs twice.
    ``retry-on`` (``A2A_RETRY_ON_LOST_LEASE``, for idempotent handlers): a run a kill cut
    runs again, on a live worker, after the killed one is gone; never two at once."""
    runs = tmp_path / "runs"
    settings = {
        "A2A_HANDLER": "tests.handlers.journaled",
        "A2A_TEST_RUNS_FILE": str(runs),
        "A2A_WORKERS": "3",
        "A2A_LEASE_SECONDS": str(LEASE),
        "A2A_LEASE_CHECK_INTERVAL": "0.5",
        "A2A_RETRY_ON_LOST_LEASE": str(retry).lower(),
        "A2A_EVENTS_CHANNEL": f"a2a_hq_{uuid.uuid4().hex[:10]}",
    }
    count, kills = 60, 3
    place = {"database_url": database, "redis_url": REDIS_URL, "port": 0, "settings": settings}
    # Three db_workers: each runs one task at a time (its job runs the task to its end).
    with Cluster(tmp_path / "cluster", web=1, workers=3, **place) as cl, httpx.Client() as http:
        (web,) = cl.urls
        acknowledged = [send(web, f"sleep:{0.6 + (i % 4) * 0.2:.1f}", http) for i in range(count)]
        killed = kill_busy_workers(cl, runs, kills)
        last_kill = time.monotonic()
        assert len(killed) == kills, f"only {len(killed)} kills: the load ended too soon"
        final, _ = settle_all(web, acknowledged, http, bound=SETTLE)
        took = time.monotonic() - last_kill
        restarts = sum(p.starts - 1 for p in cl.worker_processes)
        reaped = lost_leases(cl.directory)

    journals = journal(runs)
    completed = failed = rerun = 0
    for task_id in acknowledged:
        entries = journals.get(task_id, [])
        status = final[task_id]["status"]
        starts = count_runs(task_id, entries, killed)
        if starts > 1:
            rerun += 1
            assert retry, f"task {task_id} ran {starts} times: {entries}"
            assert starts <= 3 and all(pid in killed for what, pid in entries[:-2] if what == "start"), entries
        if status["state"] == "TASK_STATE_COMPLETED":
            completed += 1
            assert len(entries) >= 2 and entries[-2:] == [("start", entries[-1][1]), ("end", entries[-1][1])], entries
            continue
        failed += 1
        check_lost_run(task_id, status, entries, reaped, killed, retry)
    assert restarts >= kills, f"{restarts} worker restarts for {kills} kills"
    assert completed + failed == count
    assert failed >= 1 or rerun >= 1, "no kill cut a run"
    setting = "A2A_RETRY_ON_LOST_LEASE on" if retry else "retries off (default)"
    report(
        f"orm-postgres + tasks executor ({setting}) x {kills} kill -9 of a db_worker under load ({count} tasks, "
        f"3 workers, each restarted) -> {completed} completed, {failed} failed with the lease message (runs a kill "
        f"cut), {rerun} run again after a kill, never two runs at once; 0 lost, 0 stuck; all terminal {took:.1f}s "
        f"after the last kill"
    )


# --- 2. A Redis restart mid-stream ---------------------------------------------------------------


class PrivateRedis:
    """A redis-server of its own on a free port (no persistence), stopped with SIGKILL
    (every connection drops at once, nothing said) and started again on the same port."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with open(self.directory / "redis.log", "ab") as log:
            self.process = subprocess.Popen(command, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
            assert time.monotonic() < deadline, "the private Redis did not start"
            time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@contextlib.contextmanager
def private_redis(directory: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    redis = PrivateRedis(directory)
    redis.start()
    try:
        yield redis
    finally:
        redis.kill()


class Stream(threading.Thread):
    """One streaming client: SendStreamingMessage (``text``) or SubscribeToTask
    (``task_id``); records each event's state, how the stream ended, and when."""

    def __init__(self, base: str, *, text: str | None = None, task_id: str | None = None) -> None:
        super().__init__(daemon=True)
        self.base, self.text, self.task_id = base, text, task_id
        self.states: list[str] = []
        self.ended = "running"
        self.ended_at = 0.0

    def run(self) -> None:
        if self.text is not None:
            message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": self.text}]}
            method, params = "SendStreamingMessage", {"message": message}
        else:
            method, params = "SubscribeToTask", {"id": self.task_id}
        body = rpc_body(method, params)
        # A read timeout longer than the server's keepalive: a silent stream is a dead one.
        timeout = httpx.Timeout(10, read=KEEPALIVE * 2 + 5)
        try:
            with httpx.stream("POST", f"{self.base}/a2a/", json=body, headers=HEADERS, timeout=timeout) as response:
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    frame = json.loads(line[5:])
                    if "error" in frame:
                        self.ended = f"error {frame['error'].get('code')}"
                        return
                    result = frame["result"]
                    if "task" in result:
                        self.task_id = result["task"]["id"]
                        self.states.append(result["task"]["status"]["state"])
                    elif "statusUpdate" in result:
                        self.states.append(result["statusUpdate"]["status"]["state"])
            self.ended = "terminal" if self.states and self.states[-1] in TERMINAL else "closed early"
        except httpx.HTTPError as exc:
            self.ended = f"transport error {type(exc).__name__}"
        finally:
            self.ended_at = time.time()


#: The servers' A2A_STREAM_KEEPALIVE: an idle stream also reads the task from the store
#: this often. The streams must end well before it: on the events, which the listener
#: catches up on from the store as soon as it hears the channel again (it retries every
#: 5 s at most, a2a.core.eventbackends.base.RETRY_MAX).
KEEPALIVE = 20.0


def streams_and_subscribers(web_a: str, web_b: str, script: str) -> tuple[list[Stream], list[Stream]]:
    """Six streaming sends on the two web processes, and a subscriber to each on the other
    one (every event it hears crossed Redis), all started."""
    streams = [Stream((web_a, web_b)[i % 2], text=script) for i in range(6)]
    for stream in streams:
        stream.start()
    deadline = time.monotonic() + 15
    while not all(s.task_id for s in streams) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(s.task_id for s in streams), "a stream never showed its task"
    subscribers = [Stream((web_b, web_a)[i % 2], task_id=s.task_id) for i, s in enumerate(streams)]
    for subscriber in subscribers:
        subscriber.start()
    return streams, subscribers


def stream_endings(everyone: list[Stream], final: dict, restarted: float) -> tuple[dict[str, int], list[float]]:
    """How the streams ended (each on its task's terminal event), and how long after its
    task completed (or Redis was back) each did."""
    outcomes: dict[str, int] = defaultdict(int)
    lags = []
    for stream in everyone:
        outcomes[stream.ended] += 1
        assert stream.ended == "terminal", (stream.ended, stream.states)
        task = final[stream.task_id]
        assert stream.states[-1] == task["status"]["state"] == "TASK_STATE_COMPLETED", (stream.states, task["status"])
        # on the events, not on the keepalive's look at the store
        completed = datetime.fromisoformat(task["status"]["timestamp"]).timestamp()
        lags.append(stream.ended_at - max(completed, restarted))
    return outcomes, lags


def start_during_the_outage(web_a: str, web_b: str, script: str) -> tuple[list[Stream], threading.Thread, dict]:
    """While Redis is down: new streams, and a blocking SendMessage (each waits a while
    for the listener, then goes on: the store has what they missed). The streams, the
    sender's thread and where its answer goes."""
    late = [Stream(web_a, text=script), Stream(web_b, text="progress:x;sleep:0.5;progress:y")]
    for stream in late:
        stream.start()
    blocking: dict[str, dict] = {}

    def send_blocking() -> None:
        message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "sleep:1"}]}
        blocking["task"] = rpc(web_b, "SendMessage", {"message": message})["task"]

    sender = threading.Thread(target=send_blocking, daemon=True)
    sender.start()
    return late, sender, blocking


@pytest.mark.slow
@needs_postgres
@pytest.mark.parametrize("outage", [2.0, 8.0], ids=["2s-down", "8s-down"])
def test_a_redis_restart_mid_stream_ends_every_stream_and_every_task(database, tmp_path, outage):
    """``outage`` seconds without Redis: 8 s is longer than a new stream waits for the
    listener (a2a.core.events.LISTEN_TIMEOUT) and than the reconnection backoff's ceiling."""
    settings = {
        "A2A_HANDLER": "tests.handlers.scripted",
        "A2A_WORKERS": "4",
        "A2A_LEASE_SECONDS": str(LEASE),
        "A2A_LEASE_CHECK_INTERVAL": "0.5",
        "A2A_STREAM_KEEPALIVE": str(KEEPALIVE),
        "A2A_BLOCKING_TIMEOUT": "30",
        "A2A_EVENTS_CHANNEL": f"a2a_hq_{uuid.uuid4().hex[:10]}",
    }
    # Progress before, during and after the outage (Redis is down from ~1.5 s to ~3.5 s).
    script = ";".join(f"progress:{i};sleep:0.5" for i in range(12))
    with (
        private_redis(tmp_path / "redis") as redis,
        # A db_worker runs one task at a time (its job runs the task to its end): five for
        # the nine tasks here, six of them streamed for six seconds.
        Cluster(
            tmp_path / "cluster",
            database_url=database,
            redis_url=redis.url,
            web=2,
            workers=5,
            port=0,
            settings=settings,
        ) as cl,
        httpx.Client() as http,
    ):
        web_a, web_b = cl.urls
        streams, subscribers = streams_and_subscribers(web_a, web_b, script)
        time.sleep(1.5)

        redis.kill()
        late, sender, blocking = start_during_the_outage(web_a, web_b, script)
        time.sleep(outage)
        redis.start()
        restarted = time.time()

        everyone = [*streams, *subscribers, *late]
        for stream in everyone:
            stream.join(max(0.1, 40 - (time.time() - restarted)))
        sender.join(max(0.1, 40 - (time.time() - restarted)))
        hung = [s for s in everyone if s.is_alive()]
        assert not hung, f"{len(hung)} streams still open 40 s after the restart: {[s.states for s in hung]}"
        assert not sender.is_alive(), "the blocking SendMessage never answered"

        task_ids = sorted({s.task_id for s in everyone if s.task_id})
        final, _ = settle_all(web_b, task_ids, http, bound=30)
    outcomes, lags = stream_endings(everyone, final, restarted)
    assert max(lags) < KEEPALIVE / 2, f"a stream ended {max(lags):.1f}s after its task completed and Redis was back"
    assert blocking["task"]["status"]["state"] == "TASK_STATE_COMPLETED", blocking["task"]["status"]
    report(
        f"orm-postgres + tasks executor + redis events x Redis kill -9 and restart ({outage:.0f} s down) "
        f"mid-stream ({len(everyone)} streams on 2 web processes, {len(streams) * 2} across processes, "
        f"{len(late)} opened during the outage; tasks on 5 workers) -> streams: {dict(outcomes)}, the last "
        f"{max(lags):.2f}s after its task completed (or Redis was back); blocking SendMessage sent during "
        f"the outage: completed; "
        f"{len(final)} tasks all completed, 0 stuck"
    )
