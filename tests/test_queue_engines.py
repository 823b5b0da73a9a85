"""The queue executor (``A2A_EXECUTOR = "tasks"``) on RQ and Celery, end to end on the
deployment of deploy/cluster.py: one uvicorn web process and two queue workers, each a
real OS process started as its engine's docs say (``manage.py rqworker --job-class
django_tasks_rq.Job default``: RQ's default worker, a forked work-horse per job;
``celery -A django_tasks_fennel.app worker``: its prefork pool, each child replaced
after 10 jobs), with Redis as the broker; the ORM store on PostgreSQL, events over Redis.

A job runs its task to its end before it returns. When it handed the task to a runner
thread and returned at once, RQ's work-horse exited with the thread: of 50 tasks, most
stayed ``working`` or ``submitted``; a replaced Celery child took its tasks with it too.

Each test sends tasks in bulk and blocking ``SendMessage`` calls: every one completes,
each run once. Then workers are ``kill -9``-ed under load (a work-horse or pool child
alone, or the whole worker with it; the cluster restarts a worker that exits): every
acknowledged task ends (0 lost, 0 stuck), a run a kill cut runs again on a live worker
(``A2A_RETRY_ON_LOST_LEASE``: the handler is idempotent), never two runs at once.

Needs A2A_TEST_POSTGRES_URL (a database of its own is made and dropped) and the Redis
of A2A_TEST_REDIS_URL: its events there, and the brokers in Redis databases 3 (RQ) and
9 (Celery) of the same server (A2A_TEST_RQ_DB, A2A_TEST_CELERY_DB), emptied first:
keep them for these tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import redis

from a2a.testing.client import WireClient
from deploy.cluster import Cluster
from tests.helpers import live_result as rpc
from tests.helpers import live_submit as send
from tests.server import postgres_database
from tests.test_hostile_queue import SETTLE, count_runs, journal, report, settle_all

POSTGRES_URL = os.environ.get("A2A_TEST_POSTGRES_URL", "")
REDIS_URL = os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
BROKER_DB = {"rq": int(os.environ.get("A2A_TEST_RQ_DB", "3")), "celery": int(os.environ.get("A2A_TEST_CELERY_DB", "9"))}
LEASE = 3.0
#: Celery's prefork pool replaces a child after this many jobs (a common setting against leaks).
RECYCLE = {"rq": (), "celery": ("--max-tasks-per-child", "10")}
BULK, BLOCKING, UNDER_KILLS, KILLS = 50, 6, 30, 3

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not POSTGRES_URL, reason="A2A_TEST_POSTGRES_URL is not set"),
]


def broker_url(engine: str) -> str:
    """The engine's Redis database, on the server of A2A_TEST_REDIS_URL, emptied."""
    url = urlunsplit(urlsplit(REDIS_URL)._replace(path=f"/{BROKER_DB[engine]}"))
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_database(POSTGRES_URL, "a2a_engines") as url:
        yield url


def blocking_sends(web: str, count: int) -> list[dict]:
    """``count`` blocking SendMessage calls at once: the tasks they answered with."""
    client = WireClient(base_url=web, timeout=40)
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda i: client.send(f"sleep:0.{i}", blocking=True)["task"], range(count)))


def parent_of(pid: int) -> int | None:
    """The parent of process ``pid`` (from /proc), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # after "pid (name)": state, ppid


def children_of(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` now (from /proc)."""
    return {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and parent_of(int(p.name)) == pid}


def worker_of(cl: Cluster, pid: int):
    """The live worker process that is ``pid`` or its parent (an RQ work-horse, forked
    into a session of its own; a Celery pool child)."""
    family = {pid, parent_of(pid)}
    return next((p for p in cl.worker_processes if p.pid in family and p.popen.poll() is None), None)


def kill_under_load(cl: Cluster, runs: Path, kills: int) -> set[int]:
    """kill -9, while it runs a handler, the process running it (a work-horse or pool
    child), alone on odd kills and with its whole worker on even ones, one every 1.5 s:
    the pids killed (those whose runs a kill cut)."""
    killed: set[int] = set()
    deadline = time.monotonic() + 40
    while len(killed) < kills and time.monotonic() < deadline:
        running = {entries[-1][1] for entries in journal(runs).values() if entries[-1][0] == "start"}
        victims = [(pid, w) for pid in sorted(running - killed) if (w := worker_of(cl, pid)) is not None]
        if not victims:
            time.sleep(0.05)
            continue
        pid, worker = victims[0]
        if len(killed) % 2:  # the whole worker: its main process and what runs its jobs
            # (every child: one may have begun a run since `running` was read)
            doomed = {pid, worker.pid} | {r for r in running if worker_of(cl, r) is worker} | children_of(worker.pid)
            for each in doomed:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(each, signal.SIGKILL)
            killed |= doomed
        else:
            killed.add(pid)
            os.kill(pid, signal.SIGKILL)
        time.sleep(1.5)
    return killed


def cancel_while_running(web: str, runs: Path, http: httpx.Client) -> str:
    """A task canceled through the web process while a worker runs it: its handler hears
    it at once (the job then returns, its worker free again)."""
    task_id = send(web, "sleep:30", http)
    deadline = time.monotonic() + 20
    while not journal(runs).get(task_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert journal(runs).get(task_id), "the task to cancel never started"
    assert rpc(web, "CancelTask", {"id": task_id}, http)["status"]["state"] == "TASK_STATE_CANCELED"
    while len(journal(runs)[task_id]) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    (_, pid), (what, same) = journal(runs)[task_id]
    assert (what, same) == ("end", pid), "the canceled handler did not stop"
    return task_id


def check_runs(task_ids: list[str], final: dict[str, dict], runs: Path, killed: set[int]) -> tuple[int, int]:
    """Every task completed, or failed by its lease after a kill cut its runs; never two
    runs at once (count_runs): (completed, failed)."""
    journals = journal(runs)
    completed = failed = 0
    for task_id in task_ids:
        entries = journals.get(task_id, [])
        count_runs(task_id, entries, killed)
        status = final[task_id]["status"]
        if status["state"] == "TASK_STATE_COMPLETED":
            completed += 1
            assert entries[-2:] == [("start", entries[-1][1]), ("end", entries[-1][1])], entries
            continue
        failed += 1  # only after its runs were cut (at most three: A2A_RETRY_ON_LOST_LEASE's bound)
        assert status["state"] == "TASK_STATE_FAILED", status
        assert all(pid in killed for what, pid in entries if what == "start"), entries
        assert status["message"]["parts"][0]["text"].startswith("The process running this task stopped"), status
    return completed, failed


def in_bulk_and_blocking(engine: str, web: str, runs: Path, http: httpx.Client) -> None:
    """Nothing killed: every task sent in bulk or blocking completes, each run once; one
    runs past its lease (the heartbeat renews it in the work-horse), one is canceled."""
    began = time.monotonic()
    canceled = cancel_while_running(web, runs, http)
    bulk = [send(web, f"sleep:{LEASE + 1}", http)] + [send(web, "sleep:0.05", http) for _ in range(BULK - 1)]
    final, _ = settle_all(web, bulk, http, bound=SETTLE)
    assert rpc(web, "GetTask", {"id": canceled}, http)["status"]["state"] == "TASK_STATE_CANCELED"
    answered = blocking_sends(web, BLOCKING)
    assert [t["status"]["state"] for t in answered] == ["TASK_STATE_COMPLETED"] * BLOCKING, answered
    took = time.monotonic() - began
    final |= {t["id"]: t for t in answered}
    completed, failed = check_runs(list(final), final, runs, set())
    assert (completed, failed) == (BULK + BLOCKING, 0)
    assert all(len(journal(runs)[t]) == 2 for t in bulk), "a task ran twice"
    report(
        f"{engine} queue, 2 workers: {BULK} tasks sent in bulk + {BLOCKING} blocking SendMessage -> "
        f"{completed} completed in {took:.1f}s (one ran past its lease, renewed; one more canceled while it ran, "
        "its handler stopped at once), 0 lost, 0 stuck"
    )


def killed_under_load(engine: str, cl: Cluster, runs: Path, http: httpx.Client) -> None:
    """Workers killed under load: every task ends, completed or failed by its lease."""
    (web,) = cl.urls
    loaded = [send(web, f"sleep:{0.6 + (i % 4) * 0.2:.1f}", http) for i in range(UNDER_KILLS)]
    killed = kill_under_load(cl, runs, KILLS)
    assert len(killed) >= KILLS, f"only {len(killed)} kills: the load ended too soon"
    final, took = settle_all(web, loaded, http, bound=SETTLE)
    completed, failed = check_runs(loaded, final, runs, killed)
    restarts = sum(p.starts - 1 for p in cl.worker_processes)
    rerun = sum(1 for t in loaded if sum(what == "start" for what, _ in journal(runs)[t]) > 1)
    assert completed + failed == UNDER_KILLS
    assert rerun >= 1, "no kill cut a run"
    report(
        f"{engine} queue x {len(killed)} processes kill -9-ed under load (a work-horse or pool child, or the whole "
        f"worker; {restarts} worker restarts): {UNDER_KILLS} tasks sent -> {completed} completed ({rerun} run again "
        f"after a kill cut their run), {failed} failed by their lease; 0 lost, 0 stuck; all ended {took:.1f}s after "
        f"the last kill"
    )


@pytest.mark.parametrize("engine", ["rq", "celery"])
def test_every_task_sent_through_the_queue_ends_even_with_workers_killed(engine, database, tmp_path):
    runs = tmp_path / "runs"
    settings = {
        "A2A_HANDLER": "tests.handlers.journaled",
        "A2A_TEST_RUNS_FILE": str(runs),
        "A2A_LEASE_SECONDS": str(LEASE),
        "A2A_LEASE_CHECK_INTERVAL": "0.5",
        "A2A_RETRY_ON_LOST_LEASE": "true",
        "A2A_EVENTS_CHANNEL": f"a2a_engines_{uuid.uuid4().hex[:10]}",
    }
    with (
        Cluster(
            tmp_path / "cluster",
            database_url=database,
            redis_url=REDIS_URL,
            broker_url=broker_url(engine),
            engine=engine,
            worker_args=RECYCLE[engine],
            web=1,
            workers=2,
            port=0,
            settings=settings,
        ) as cl,
        httpx.Client() as http,
    ):
        in_bulk_and_blocking(engine, cl.urls[0], runs, http)
        killed_under_load(engine, cl, runs, http)
