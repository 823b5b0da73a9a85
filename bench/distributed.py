"""Throughput of the distributed deployment against the single-process default, same
machine, same run (docs/deployment.md quotes it).

    .venv/bin/python -m bench.distributed [--seconds 10] [--database-url URL]

Two set-ups on the same PostgreSQL (a fresh database each) and the same load: C
clients (bench/loadgen.py's JSON-RPC client, v1.0) send N non-blocking SendMessages
as fast as they are answered, spread over the web processes; the clock stops when the
database says all N are completed (a COUNT every 50 ms: no GetTask polling, whose cost
would swamp the fulfilment being measured):

- ``single``: one uvicorn process, ``A2A_EXECUTOR = "thread"`` (the default), the ORM
  store;
- ``distributed``: deploy/cluster.py: 2 uvicorn processes + 2 ``db_worker`` processes,
  ``A2A_EXECUTOR = "tasks"`` (django-tasks-db queue), Redis events; the clients split
  between the two web processes.

Three handlers: ``echo`` (no work: the cost of the machinery itself), ``sleep`` (a
0.2 s wait) and ``model`` (a 1 s wait, like a call to a model: concurrency is what
counts; 40 % of ``--tasks``). The ratio is
distributed / single tasks per second. Results: bench/results/distributed.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.loadgen import DIALECTS, _rpc, cpu_seconds, run
from deploy.cluster import Cluster, create_database, drop_database
from tests.server import manage, running_server, site_env

RESULTS = Path(__file__).resolve().parent / "results"
PROFILES = {
    "echo": {"handler": "a2a.handlers.echo", "text": "hello, benchmark", "clients": 16, "share": 1.0},
    "sleep": {"handler": "tests.handlers.scripted", "text": "sleep:0.2", "clients": 32, "share": 1.0},
    # A model call's worth of waiting: fewer tasks, the same shape.
    "model": {"handler": "tests.handlers.scripted", "text": "sleep:1.0", "clients": 64, "share": 0.4},
}


async def _drain(
    urls: list[str], database_url: str, clients: int, tasks: int, text: str, pids: list[int]
) -> dict[str, Any]:
    """Send ``tasks`` tasks from ``clients`` clients (client i on ``urls[i % len]``);
    wait until the database has them all completed. The figures, with the CPU the
    processes ``pids`` (web and workers; not PostgreSQL's) spent per task."""
    import aiohttp
    import psycopg

    dialect = DIALECTS["v1.0"]
    headers = {"Content-Type": "application/json", **dialect.headers}
    left = list(range(tasks))
    errors: list[str] = []

    async def client(session: aiohttp.ClientSession, url: str) -> None:
        while left:
            left.pop()
            body = {"jsonrpc": "2.0", "id": 1, "method": dialect.send_method,
                    "params": {"message": dialect.message(text), "configuration": dialect.configuration}}  # fmt: skip
            try:
                await _rpc(session, f"{url}/a2a/", headers, body)
            except Exception as exc:
                errors.append(str(exc)[:200])

    count = "SELECT count(*) FROM stores_taskrecord WHERE state = 'completed'"
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        row = await (await conn.execute(count)).fetchone()
        before = row[0] if row else 0
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as session:
        await asyncio.gather(*(client(session, urls[i % len(urls)]) for i in range(clients)))
    accepted = time.monotonic()
    done = 0
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        deadline = accepted + 120
        while done < tasks - len(errors) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            row = await (await conn.execute(count)).fetchone()
            done = (row[0] if row else 0) - before
    elapsed = time.monotonic() - started
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    return {
        "cpu_ms_per_task": 1000 * cpu / done if done else None,
        "tasks": tasks,
        "completed": done,
        "errors": len(errors),
        "error_samples": errors[:3],
        "accept_per_s": tasks / (accepted - started),
        "tasks_per_s": done / elapsed,
        "elapsed_s": elapsed,
    }


def single(database_url: str, profile: dict[str, Any], tasks: int, workdir: Path) -> dict[str, Any]:
    create_database(database_url, fresh=True)
    env = site_env(TASK_STORE="orm", DATABASE_URL=database_url, A2A_HANDLER=profile["handler"], A2A_LOG_LEVEL="WARNING")
    manage("migrate", "--noinput", env=env)
    try:
        with running_server(env, log=workdir / "single.log") as base:
            pids = [base.pid]
            run(_drain([base], database_url, profile["clients"], 50, profile["text"], pids))  # warm-up
            return run(_drain([base], database_url, profile["clients"], tasks, profile["text"], pids))
    finally:
        drop_database(database_url)


def distributed(database_url: str, redis_url: str, profile: dict[str, Any], tasks: int, workdir: Path) -> dict:
    settings = {
        "A2A_HANDLER": profile["handler"],
        "A2A_LOG_LEVEL": "WARNING",
        "A2A_EVENTS_CHANNEL": f"a2a_bench_{uuid.uuid4().hex[:8]}",
    }
    cluster = Cluster(workdir / "cluster", database_url=database_url, redis_url=redis_url, port=0, settings=settings)
    cluster.fresh = True
    try:
        with cluster:
            pids = [p.pid for p in cluster.processes if p.pid is not None]
            run(_drain(cluster.urls, database_url, profile["clients"], 50, profile["text"], pids))  # warm-up
            return run(_drain(cluster.urls, database_url, profile["clients"], tasks, profile["text"], pids))
    finally:
        drop_database(database_url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=1000, help="tasks per measurement (default 1000)")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/a2a_bench_distributed")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--profiles", default="echo,sleep,model")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="a2a-bench-dist-") as tmp:
        workdir = Path(tmp)
        for name in args.profiles.split(","):
            profile = PROFILES[name]
            tasks = int(args.tasks * profile["share"])
            one = single(args.database_url, profile, tasks, workdir)
            many = distributed(args.database_url, args.redis_url, profile, tasks, workdir)
            results[name] = {
                "single": one,
                "distributed": many,
                "ratio": many["tasks_per_s"] / one["tasks_per_s"] if one["tasks_per_s"] else None,
                "clients": profile["clients"],
            }
            print(
                f"{name:6} single {one['tasks_per_s']:7.1f}/s  distributed {many['tasks_per_s']:7.1f}/s  "
                f"ratio {results[name]['ratio']:.2f}  CPU/task {one['cpu_ms_per_task']:.1f} / "
                f"{many['cpu_ms_per_task']:.1f} ms (errors {one['errors']}/{many['errors']})",
                flush=True,
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "distributed.json").write_text(json.dumps(results, indent=2))
    lines = [
        "| handler | clients | single process (thread) | 2 web + 2 workers (tasks) | ratio | CPU ms/task (1 / dist.) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['clients']} | {r['single']['tasks_per_s']:.1f} tasks/s "
            f"(accepts {r['single']['accept_per_s']:.0f}/s) | {r['distributed']['tasks_per_s']:.1f} tasks/s "
            f"(accepts {r['distributed']['accept_per_s']:.0f}/s) | {r['ratio']:.2f} | "
            f"{r['single']['cpu_ms_per_task']:.1f}, {r['distributed']['cpu_ms_per_task']:.1f} |"
        )
    (RESULTS / "distributed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
