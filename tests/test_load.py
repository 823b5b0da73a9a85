"""Several server processes on one store (2 uvicorn workers on one task directory,
one SQLite file, one PostgreSQL database): a task submitted to one worker is readable,
listable and cancelable from every other, two cancels racing through two workers
settle it once; then a short run of the load test (bench/load.py), which must lose
no task and have no error. The memory store (one worker: it cannot be shared) runs
the load test only."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from a2a.testing import WireClient
from bench import load

pytestmark = pytest.mark.slow

SHARED = ["file", "orm-sqlite"] + (["orm-postgres"] if "postgres" in settings.DATABASES else [])
WORKERS = 2
LOAD_CLIENTS, LOAD_SECONDS = 8, 2.0
TERMINAL = {"completed", "failed", "canceled", "rejected"}
#: How long the machine may take to land tasks on every worker and start their handlers:
#: a bound for a loaded machine (it takes well under a second on an idle one).
SETTLE_SECONDS = 60
#: At most this many tasks to land some on every worker (one ListTasks page holds them).
MAX_TASKS = 50


@pytest.fixture(scope="module", params=SHARED)
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "orm-postgres":
        load.POSTGRES_URL = settings.POSTGRES_URL
    # Short leases: a worker hears of a cancel made through another worker within a second.
    # Room for every task of a test to run at once on one worker (A2A_WORKERS, 32 by
    # default): a task left waiting its turn is "submitted", never "working".
    # No periodic lease check: none of these tests is about expired leases (test_leases.py
    # and test_crash.py are), and on a loaded machine a renewal late by 3 s would let a
    # check fail a healthy task.
    site = {"A2A_LEASE_SECONDS": "3", "A2A_WORKERS": str(MAX_TASKS), "A2A_LEASE_CHECK_INTERVAL": "0"}
    with load.serving(request.param, tmp, workers=WORKERS, **site) as base:
        base.tmp = tmp
        yield base


def wire(http: httpx.Client, base: str) -> WireClient:
    """The test kit's client for the site at ``base``, each request on a new connection:
    uvicorn's workers share the listening socket, so requests land on either (the pids
    that ran the handlers show it)."""
    return WireClient(base_url=base, version=None, http=http, timeout=10, headers={"Connection": "close"})


def ran_by(tmp: Path) -> Counter:
    """Worker pid -> tasks whose handler it ran."""
    runs = tmp / "runs"
    return Counter(line.split()[0] for line in runs.read_text().splitlines()) if runs.exists() else Counter()


def wait_until(done, deadline: float, what: str) -> None:
    """Poll ``done()`` until it is true; AssertionError saying ``what`` at the deadline."""
    while not done():
        assert time.monotonic() < deadline, f"{what} within {SETTLE_SECONDS}s"
        time.sleep(0.05)


@contextlib.contextmanager
def gate(tmp: Path) -> Iterator[str]:
    """A ``wait:PATH`` text: its tasks work until the test ends (the gate then opens), not
    for some seconds a slow machine may spend before the checks."""
    path = tmp / f"gate-{uuid.uuid4()}"
    try:
        yield f"wait:{path}"
    finally:
        path.touch()


def test_every_worker_sees_lists_and_cancels_what_another_accepted(server):
    context = str(uuid.uuid4())
    with httpx.Client() as http, gate(server.tmp) as working:
        ids: set[str] = set()
        deadline = time.monotonic() + SETTLE_SECONDS
        while len(ids) < 4 or len(ran_by(server.tmp)) < WORKERS:  # until both workers run some
            assert len(ids) < MAX_TASKS, f"{len(ids)} tasks did not land on every worker: {ran_by(server.tmp)}"
            assert time.monotonic() < deadline, f"the tasks did not land on every worker: {ran_by(server.tmp)}"
            ids.add(wire(http, server).send(working, context_id=context, blocking=False)["id"])
            time.sleep(0.05)
        wait_until(lambda: sum(ran_by(server.tmp).values()) >= len(ids), deadline, "every task's handler started")
        for _ in range(4):
            for task_id in ids:
                assert wire(http, server).rpc("GetTask", {"id": task_id})["result"]["status"]["state"] == "working"
            listed = wire(http, server).rpc("ListTasks", {"contextId": context, "pageSize": MAX_TASKS})["result"][
                "tasks"
            ]
            assert {t["id"] for t in listed} == ids
        for task_id in ids:  # each cancel lands on either worker, whichever runs the handler
            assert wire(http, server).rpc("CancelTask", {"id": task_id})["result"]["status"]["state"] == "canceled"
        for _ in range(4):
            states = {wire(http, server).rpc("GetTask", {"id": t})["result"]["status"]["state"] for t in ids}
            assert states == {"canceled"}
        # The handlers stop too: the worker running each one hears of the cancel at its
        # next lease renewal (every second here), though the cancel went through another.
        # Nothing runs again meanwhile: a window of more than one renewal to see it in.
        runs_before = sum(ran_by(server.tmp).values())
        time.sleep(1.5)
        assert {wire(http, server).rpc("GetTask", {"id": t})["result"]["status"]["state"] for t in ids} == {"canceled"}
    assert sum(ran_by(server.tmp).values()) == runs_before  # nothing ran again


def cancel(base: str, task_id: str, barrier: threading.Barrier, answers: list[dict]) -> None:
    with httpx.Client() as http:
        barrier.wait()
        answers.append(wire(http, base).rpc("CancelTask", {"id": task_id}))


def test_two_cancels_through_two_workers_one_wins(server):
    for _ in range(4):
        with gate(server.tmp) as working:  # the task works until both cancels are in
            with httpx.Client() as http:
                task = wire(http, server).send(working, blocking=False)
            answers: list[dict] = []
            barrier = threading.Barrier(2)
            threads = [threading.Thread(target=cancel, args=(server, task["id"], barrier, answers)) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        outcomes = sorted("canceled" if "result" in a else str(a["error"]["code"]) for a in answers)
        assert outcomes == ["-32002", "canceled"], answers  # one cancel; the other: not cancelable


def test_short_load_loses_nothing(server):
    result = load.measure(server, clients=LOAD_CLIENTS, seconds=LOAD_SECONDS)
    assert result["completed"] > 0
    assert result["errors"] == 0 and result["lost"] == 0, result


def test_short_load_on_the_memory_store_one_worker():
    result = load.run_store("memory", workers=WORKERS, clients=LOAD_CLIENTS, seconds=LOAD_SECONDS)
    assert result["workers"] == 1  # a memory store cannot be shared: one worker
    assert result["completed"] > 0
    assert result["errors"] == 0 and result["lost"] == 0, result
