"""The distributed deployment end to end (deploy/cluster.py): 2 uvicorn web processes
and 2 ``manage.py db_worker`` processes on PostgreSQL (store and queue) and Redis
(events), all on loopback.

Tasks are submitted to both web processes and fulfilled on both workers; a third
process streams a task (SendStreamingMessage on one web process, SubscribeToTask on
the other) while a worker runs it; one worker is ``kill -9``-ed while it runs tasks;
a task running on a worker is canceled through a web process. Then every
acknowledged task must end terminal, none lost, and the handler's journal (one line
per start and end of a run, tests.handlers.journaled) must show that no task ran
twice at once, and that every task that was not on the killed worker ran once.

Needs A2A_TEST_POSTGRES_URL (the test makes and drops a database of its own beside
it) and Redis on 127.0.0.1:6379 (.ci/run starts both). CI sends 40 tasks; a longer run on
demand: ``A2A_DISTRIBUTED_TASKS=1000 pytest tests/test_distributed.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

import httpx
import pytest

from deploy.cluster import Cluster, drop_database
from tests.helpers import live_result as rpc
from tests.helpers import live_submit as send

pytestmark = pytest.mark.slow

TASKS = int(os.environ.get("A2A_DISTRIBUTED_TASKS", "40"))
LEASE = 3.0
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
HEADERS = {"A2A-Version": "1.0"}


def journal(path: Path) -> dict[str, list[tuple[str, int, float, bool]]]:
    """task id -> [(start|end, pid, time, canceled), ...] in file order."""
    runs: dict[str, list[tuple[str, int, float, bool]]] = defaultdict(list)
    if path.exists():
        for line in path.read_text().splitlines():
            what, pid, task_id, when, canceled = line.split()
            runs[task_id].append((what, int(pid), float(when), canceled == "1"))
    return runs


# The third process: streams one task from web A, and subscribes on web B to another
# (both run on a worker), printing each event's state (or "artifact") as a JSON line.
STREAMER = r"""
import json, sys, uuid, httpx
stream_url, subscribe_url, task_id = sys.argv[1:4]
headers = {"A2A-Version": "1.0"}

def events(url, method, params):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    with httpx.stream("POST", f"{url}/a2a/", json=body, headers=headers, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                result = json.loads(line[5:])["result"]
                if "task" in result:
                    yield result["task"]["status"]["state"]
                elif "statusUpdate" in result:
                    yield result["statusUpdate"]["status"]["state"]
                elif "artifactUpdate" in result:
                    yield "artifact:" + result["artifactUpdate"]["artifact"]["parts"][0]["text"]

import threading
subscription = []
def subscribe():
    subscription.extend(events(subscribe_url, "SubscribeToTask", {"id": task_id}))
subscriber = threading.Thread(target=subscribe)
subscriber.start()
message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "sleep:0.5"}]}
print(json.dumps(list(events(stream_url, "SendStreamingMessage", {"message": message}))), flush=True)
subscriber.join()
print(json.dumps(subscription), flush=True)
"""


@pytest.fixture
def database_url():
    url = os.environ.get("A2A_TEST_POSTGRES_URL", "")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI must run the distributed test: set A2A_TEST_POSTGRES_URL")
        pytest.skip("A2A_TEST_POSTGRES_URL is not set")
    database = url.rsplit("/", 1)[0] + f"/a2a_dist_{uuid.uuid4().hex[:10]}"
    yield database
    drop_database(database)


@pytest.fixture
def cluster(database_url, tmp_path):
    runs = tmp_path / "runs"
    settings = {
        "A2A_HANDLER": "tests.handlers.journaled",
        "A2A_TEST_RUNS_FILE": str(runs),
        "A2A_WORKERS": "4",
        "A2A_LEASE_SECONDS": str(LEASE),
        "A2A_LEASE_CHECK_INTERVAL": "0.5",
        "A2A_RETRY_ON_LOST_LEASE": "true",  # the handler is idempotent: a lost run is run again
        "A2A_EVENTS_CHANNEL": f"a2a_dist_{uuid.uuid4().hex[:10]}",
    }
    redis_url = os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    with Cluster(
        tmp_path / "cluster", database_url=database_url, redis_url=redis_url, port=0, settings=settings
    ) as running:
        running.runs = runs  # type: ignore[attr-defined]
        yield running


def kill_a_busy_worker(runs: Path, *, spare: str, lasts: dict[str, float]) -> tuple[int, float]:
    """kill -9 a worker while it runs tasks (not the one running the task ``spare``):
    its pid and when. ``lasts``: how long each task runs; the worker is killed only while
    one of its runs has at least a few tenths of a second to go, so it is still running at
    the kill (a short run seen in the journal may end before the signal lands)."""
    deadline = time.monotonic() + 30
    while not journal(runs).get(spare) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert journal(runs).get(spare), "the task to cancel never started"
    spared = journal(runs)[spare][0][1]
    victim = None
    while victim is None and time.monotonic() < deadline:
        now = time.time()
        running = [
            entries[-1][1]
            for task_id, entries in journal(runs).items()
            if entries[-1][0] == "start" and entries[-1][2] + lasts.get(task_id, 0) - now > 0.4
        ]
        victim = next((pid for pid in running if pid != spared), None)
        time.sleep(0.02)
    assert victim is not None, "no worker but the spared one ran a long task"
    os.kill(victim, signal.SIGKILL)
    return victim, time.time()


def wait_terminal(webs: tuple[str, str], everything: list[str], http: httpx.Client) -> dict[str, dict]:
    """Every task of ``everything`` once it is terminal, asked of either web process (a
    killed run is re-run after its lease)."""
    deadline = time.monotonic() + 60 + TASKS * 0.05
    pending = set(everything)
    final: dict[str, dict] = {}
    while pending and time.monotonic() < deadline:
        for task_id in sorted(pending):
            task = rpc(webs[hash(task_id) % 2], "GetTask", {"id": task_id}, http)
            if task["status"]["state"] in TERMINAL:
                final[task_id] = task
                pending.discard(task_id)
        time.sleep(0.2)
    assert not pending, f"{len(pending)} tasks never ended: {sorted(pending)[:5]}"
    return final


def ran_again(task_id: str, entries: list, victim: int, killed_at: float) -> int:
    """1 when the task ran twice (only after the killed worker lost it), 0 when once."""
    runs: list[list[tuple]] = []  # each run: [start] or [start, end]
    for entry in entries:
        if entry[0] == "start":
            if runs and len(runs[-1]) == 1:  # a run still open: only the killed worker's
                assert runs[-1][0][1] == victim and entry[2] >= killed_at, f"two runs at once: {entries}"
            runs.append([entry])
        else:
            assert runs and len(runs[-1]) == 1 and runs[-1][0][1] == entry[1], entries
            runs[-1].append(entry)
    assert len(runs[-1]) == 2, f"the run that completed {task_id} has no end: {entries}"
    if len(runs) == 1:
        return 0
    # Run again only after the killed worker lost it: its run was cut, or it
    # finished but died before saving the outcome. Never more than twice.
    assert len(runs) == 2 and runs[0][0][1] == victim and runs[1][0][2] >= killed_at, entries
    return 1


def test_tasks_on_two_web_processes_and_two_workers_survive_a_killed_worker(cluster):
    web_a, web_b = cluster.urls
    runs: Path = cluster.runs
    acknowledged: list[str] = []
    with httpx.Client() as http:
        # Long tasks first, so that the worker killed below is running some.
        for i in range(8):
            acknowledged.append(send((web_a, web_b)[i % 2], "sleep:2", http))
        to_cancel = send(web_b, "sleep:60", http)
        subscribed = send(web_a, "sleep:3", http)
        streamer = subprocess.Popen(
            [sys.executable, "-c", STREAMER, web_b, web_a, subscribed], stdout=subprocess.PIPE, text=True
        )
        for i in range(TASKS):
            acknowledged.append(send((web_a, web_b)[i % 2], f"sleep:{0.05 + (i % 5) * 0.05:.2f}", http))

        lasts = {task_id: 2.0 for task_id in acknowledged[:8]} | {subscribed: 3.0}
        victim, killed_at = kill_a_busy_worker(runs, spare=to_cancel, lasts=lasts)

        # Cancel a task running on the other worker, through a web process.
        state = rpc(web_a, "CancelTask", {"id": to_cancel}, http)["status"]["state"]
        assert state == "TASK_STATE_CANCELED"

        # Every acknowledged task ends terminal (a killed run is re-run after its lease).
        final = wait_terminal((web_a, web_b), [*acknowledged, to_cancel, subscribed], http)
        streamed, _ = streamer.communicate(timeout=30)

    # The stream and the subscription (third process) saw the worker's events in order.
    stream, subscription = (json.loads(line) for line in streamed.splitlines())
    assert stream[0] == "TASK_STATE_SUBMITTED" and stream[-1] == "TASK_STATE_COMPLETED", stream
    assert "TASK_STATE_WORKING" in stream and "artifact:done: sleep:0.5" in stream, stream
    assert stream.index("TASK_STATE_WORKING") < stream.index("artifact:done: sleep:0.5"), stream
    assert subscription[-1] == "TASK_STATE_COMPLETED", subscription
    assert "artifact:done: sleep:3" in subscription, subscription

    journals = journal(runs)
    webs = {p.pid for p in cluster.processes if not p.restart}
    ran_on = {pid for entries in journals.values() for _, pid, _, _ in entries}
    assert not ran_on & webs, "a web process ran a handler"
    assert len(ran_on) >= 2, f"the tasks ran on {ran_on} only"
    # The cancel reached the handler on its worker: that run ended early, canceled.
    assert [e[0] for e in journals[to_cancel]] == ["start", "end"] and journals[to_cancel][1][3]
    assert final[to_cancel]["status"]["state"] == "TASK_STATE_CANCELED"
    rerun = 0
    for task_id in [*acknowledged, subscribed]:
        assert final[task_id]["status"]["state"] == "TASK_STATE_COMPLETED", final[task_id]["status"]
        rerun += ran_again(task_id, journals[task_id], victim, killed_at)
    assert rerun >= 1, "no task was running on the killed worker"
