"""Long-polling GetTask on live servers: a request held on one process wakes when
another process moves the task (Redis and PostgreSQL event backends), and 200 held
requests cost the server no thread each and next to no CPU, measured beside clients
that poll GetTask every 10 ms instead (written to ``$A2A_LONG_POLL_COST``, default
/tmp/a2a-long-poll-cost.txt, for the closing note: the machine is shared, so the numbers
are indicative)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from a2a.testing.client import WireClient, rpc_body
from tests.server import ServerURL, manage, postgres_database, running_server, site_env

REDIS_URL = os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
V11 = {"A2A-Version": "1.1"}
SETUPS = ["orm-sqlite+redis"] + (["orm-postgres+postgres", "orm-postgres+redis"] if settings.POSTGRES_URL else [])
COST = Path(os.environ.get("A2A_LONG_POLL_COST", "/tmp/a2a-long-poll-cost.txt"))
HELD = 200


def v11(base: str) -> WireClient:
    """The test kit's client for the site at ``base``, speaking A2A 1.1."""
    return WireClient(base_url=base, version="1.1", timeout=30)


def _message(text: str, **extra: str) -> dict:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def _waiting_task(base: str) -> tuple[str, int]:
    task = v11(base).result("SendMessage", {"message": _message("ask:more?")})["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task["id"], int(task["generation"])


@contextlib.contextmanager
def _servers(tmp: Path, setup: str, count: int, **more: str) -> Iterator[list[ServerURL]]:
    store, _, events = setup.partition("+")
    env_settings = {"A2A_HANDLER": "tests.handlers.scripted", **more}
    with contextlib.ExitStack() as stack:
        database = f"sqlite:///{tmp / 'db.sqlite3'}"
        if store == "orm-postgres":
            database = stack.enter_context(postgres_database(settings.POSTGRES_URL, "a2a_long_poll"))
        if events:
            env_settings["A2A_EVENTS"] = REDIS_URL if events == "redis" else "postgres"
            env_settings["A2A_EVENTS_CHANNEL"] = f"a2a-long-poll-{uuid.uuid4().hex}"
        env = site_env(TASK_STORE="memory" if store == "memory" else "orm", DATABASE_URL=database, **env_settings)
        manage("migrate", "--noinput", env=env)
        yield [stack.enter_context(running_server(env, log=tmp / f"server-{n}.log")) for n in range(count)]


@pytest.mark.slow
@pytest.mark.parametrize("setup", SETUPS)
def test_a_wait_on_one_process_wakes_when_another_moves_the_task(setup, tmp_path):
    with _servers(tmp_path, setup, 2, A2A_LONG_POLL_TIMEOUT="20") as (one, other):
        task_id, generation = _waiting_task(one)

        async def both() -> tuple[dict, float]:
            async with httpx.AsyncClient(timeout=30) as client:
                began = time.monotonic()
                body = rpc_body("GetTask")
                body["params"] = {"id": task_id, "currentGeneration": str(generation)}
                held = asyncio.ensure_future(client.post(f"{other}/a2a/", json=body, headers=V11))
                await asyncio.sleep(0.5)
                assert not held.done()
                follow_up = {"message": _message("ask:again?", taskId=task_id)}
                follow_up["configuration"] = {"returnImmediately": True}
                sent = {**body, "method": "SendMessage", "params": follow_up}
                await client.post(f"{one}/a2a/", json=sent, headers=V11)
                answer = (await held).json()["result"]
                return answer, time.monotonic() - began

        task, took = asyncio.run(both())
        assert int(task["generation"]) > generation and 0.5 < took < 10, (task, took)
        # Each process moves the task in turn: one more per event, whichever made it.
        _wait_state(other, task_id, "TASK_STATE_INPUT_REQUIRED", past=generation)
        second = v11(other).result("SendMessage", {"message": _message("progress:two", taskId=task_id)})["task"]
        assert second["status"]["state"] == "TASK_STATE_COMPLETED"
        # ask:again? is its message, submitted, working, input-required; progress:two its
        # message, submitted, working, two, the result, completed (each follow-up's
        # message is a step of its own: the 1.1 draft's timeline).
        assert [v11(base).result("GetTask", {"id": task_id})["generation"] for base in (one, other)] == [
            str(generation + 10)
        ] * 2


def _wait_state(base: str, task_id: str, state: str, past: int) -> None:
    deadline = time.monotonic() + 20
    while True:
        task = v11(base).result("GetTask", {"id": task_id, "currentGeneration": str(past)})
        if task["status"]["state"] == state:
            return
        assert time.monotonic() < deadline, task
        past = int(task["generation"])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


async def _hold(base: str, ids: list[tuple[str, int]], window: float, pid: int) -> tuple[int, float, list[int]]:
    """Hold a long-poll on each task for ``window`` seconds: the server's most threads
    meanwhile, its CPU seconds over the window, and the answers' statuses."""
    limits = httpx.Limits(max_connections=len(ids) + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def poll(task_id: str, generation: int) -> int:
            body = rpc_body("GetTask")
            body["params"] = {"id": task_id, "currentGeneration": str(generation)}
            return (await client.post(f"{base}/a2a/", json=body, headers=V11)).status_code

        calls = []
        for task_id, generation in ids:  # one after the other: a pool thread freed is used again
            calls.append(asyncio.ensure_future(poll(task_id, generation)))
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)  # all of them held by now
        assert not any(c.done() for c in calls)
        cpu, most = _cpu_seconds(pid), _threads(pid)
        began = time.monotonic()
        while time.monotonic() - began < window:
            most = max(most, _threads(pid))
            await asyncio.sleep(0.1)
        cpu = _cpu_seconds(pid) - cpu
        statuses = list(await asyncio.gather(*calls))
    return most, cpu, statuses


async def _poll_loop(base: str, ids: list[tuple[str, int]], window: float, pid: int) -> tuple[float, int]:
    """A client per task calling GetTask every 10 ms for ``window`` seconds: the server's
    CPU seconds over the window, and how many calls it answered."""
    done = 0
    async with httpx.AsyncClient(timeout=30) as client:
        stop = time.monotonic() + window

        async def loop(task_id: str) -> None:
            nonlocal done
            body = rpc_body("GetTask", {"id": task_id})
            while time.monotonic() < stop:
                await client.post(f"{base}/a2a/", json=body, headers=V11)
                done += 1
                await asyncio.sleep(0.01)

        cpu = _cpu_seconds(pid)
        await asyncio.gather(*(loop(t) for t, _ in ids))
        return _cpu_seconds(pid) - cpu, done


@pytest.mark.slow
def test_200_held_long_polls_cost_no_thread_each_and_little_cpu(tmp_path):
    window = 3.0
    with _servers(tmp_path, "memory", 1, A2A_LONG_POLL_TIMEOUT="8") as (base,):
        pid = base.pid
        with httpx.Client(timeout=30) as client:
            ids = []
            for _ in range(HELD):
                body = rpc_body("SendMessage", {"message": _message("ask:q")})
                task = client.post(f"{base}/a2a/", json=body, headers=V11).json()["result"]["task"]
                ids.append((task["id"], int(task["generation"])))
        time.sleep(0.5)
        idle = _threads(pid)
        most, held_cpu, statuses = asyncio.run(_hold(base, ids, window, pid))
        assert statuses == [200] * HELD
        assert most - idle < 10, (idle, most)  # not one per held request
        pollers = ids[:20]
        loop_cpu, calls = asyncio.run(_poll_loop(base, pollers, window, pid))
    per_task_held = held_cpu / window / HELD
    per_task_loop = loop_cpu / window / len(pollers)
    COST.write_text(
        f"{HELD} long-polls held {window:.0f} s: server threads {idle} idle, {most} at most; "
        f"server CPU {held_cpu:.3f} s = {per_task_held * 1000:.3f} ms per task per second\n"
        f"{len(pollers)} clients polling GetTask every 10 ms for {window:.0f} s ({calls} calls): "
        f"server CPU {loop_cpu:.3f} s = {per_task_loop * 1000:.1f} ms per task per second\n"
    )
    assert held_cpu < 0.5, held_cpu  # waiting on the bus: nothing to do until the task moves
