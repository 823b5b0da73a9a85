"""A bounded load test: several server processes on one store, C clients, T seconds.

For each store, the real site under uvicorn with ``--workers N`` (the memory store
cannot be shared between processes, so it gets one) on a fresh store; C clients
(:mod:`bench.loadgen`) each send a non-blocking ``SendMessage`` and poll ``GetTask``
until the task is terminal, again and again for T seconds. Requests land on any
worker: a task submitted to one is polled from the others. Reported per store:
tasks completed, errors (failed requests, tasks that ended in another state), tasks
lost (acknowledged, then missing or never terminal), p50/p99 latency (send ->
terminal seen), throughput::

    python -m bench.load                                  # every store, 4 workers, 8 clients, 10 s
    python -m bench.load --stores file orm-sqlite --workers 2 --clients 16 --seconds 30

Results: ``bench/results/load.json`` and ``load.md``. Exits non-zero when any task was
lost or any error happened. ``tests/test_load.py`` runs a short version in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import loadgen  # noqa: E402
from bench.targets import our_store_env  # noqa: E402
from tests.server import ServerURL, manage, running_server, site_env  # noqa: E402

STORES = ("memory", "file", "orm-sqlite", "orm-postgres")
POSTGRES_URL = os.environ.get("A2A_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
#: The handler of the measured server, and the text each task is sent: 20 ms of work.
HANDLER = "tests.handlers.recording"
TEXT = "sleep:0.02"


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A database of its own on PostgreSQL (``POSTGRES_URL``'s server), dropped afterwards."""
    import psycopg

    name = f"a2a_load_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def workers_for(store: str, workers: int) -> int:
    return 1 if store == "memory" else workers


@contextlib.contextmanager
def serving(store: str, tmp: Path, *, workers: int, **settings: str) -> Iterator[ServerURL]:
    """The site on a fresh ``store`` under ``tmp`` with ``workers`` processes (1 for memory)."""
    with contextlib.ExitStack() as stack:
        if store == "orm-postgres":
            store_env = {"TASK_STORE": "orm", "DATABASE_URL": stack.enter_context(postgres_database())}
        else:
            store_env = our_store_env(store, tmp)
        env = site_env(
            A2A_HANDLER=HANDLER,
            A2A_TEST_RUNS_FILE=str(tmp / "runs"),
            A2A_LOG_LEVEL="WARNING",
            **store_env,
            **settings,
        )
        if store.startswith("orm"):
            manage("migrate", "--noinput", env=env)
        count = workers_for(store, workers)
        log = tmp / "server.log"
        base = stack.enter_context(running_server(env, workers=count, log=log))
        wait_for_workers(log, count)
        yield base


def wait_for_workers(log: Path, count: int, timeout: float = 60.0) -> None:
    """Until every worker has started (the first one answering is not enough: the load's
    keep-alive connections would all go to it)."""
    deadline = time.monotonic() + timeout
    while log.read_text(errors="replace").count("Application startup complete") < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} workers did not all start within {timeout:.0f}s (log: {log})")
        time.sleep(0.05)


def measure(base: str, *, clients: int, seconds: float, text: str = TEXT) -> dict[str, Any]:
    """The load against a running server, and which worker processes ran its tasks."""
    result = loadgen.run(loadgen.run_load(base, clients=clients, seconds=seconds, text=text))
    return {k: v for k, v in result.items() if k != "generator_cpu_s"}


def run_store(store: str, *, workers: int, clients: int, seconds: float, text: str = TEXT) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, serving(store, Path(tmp), workers=workers) as base:
        result = measure(base, clients=clients, seconds=seconds, text=text)
        runs = Path(tmp, "runs")
        pids = {line.split()[0] for line in runs.read_text().splitlines()} if runs.exists() else set()
    return {
        "store": store,
        "workers": workers_for(store, workers),
        "busy_workers": len(pids),
        "clients": clients,
        "seconds": seconds,
        **result,
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    def f(value: Any, spec: str = ".1f") -> str:
        return "-" if value is None else format(value, spec)

    lines = [
        "| store | workers (ran tasks) | clients | s | completed | tasks/s | p50 ms | p99 ms | errors | lost |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['store']} | {r['workers']} ({r['busy_workers']}) | {r['clients']} | {f(r['seconds'], 'g')} "
            f"| {r['completed']} "
            f"| {f(r['tasks_per_s'])} | {f(r['p50_ms'])} | {f(r['p99_ms'])} | {r['errors']} | {r['lost']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", nargs="+", default=list(STORES), choices=STORES)
    parser.add_argument("--workers", type=int, default=4, help="server processes (the memory store gets 1)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--text", default=TEXT, help=f"what each task is sent (default {TEXT!r}: 20 ms of work)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    rows = []
    for store in args.stores:
        row = run_store(store, workers=args.workers, clients=args.clients, seconds=args.seconds, text=args.text)
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "load.json").write_text(json.dumps(rows, indent=2) + "\n")
    table = markdown(rows)
    (args.out / "load.md").write_text(table + "\n")
    print(table)
    if any(r["errors"] or r["lost"] for r in rows):
        sys.exit("errors or lost tasks")


if __name__ == "__main__":
    main()
