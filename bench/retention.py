"""Retention over 10^5 expired tasks: how long a sweep takes per store, and what it does
to ``GetTask`` meanwhile (issue #24).

One worker subprocess per store (the site's settings, ``A2A_RETENTION = {"completed":
"30d"}``, ``A2A_RETENTION_BATCH`` as configured, 200 by default) generates ``N`` expired
tasks straight into the store (as :mod:`bench.scale` does: 100 tasks per context, all
``completed`` in January 2026) and 1,000 recent ones, then:

1. times ``GetTask`` of random recent tasks for ``--seconds`` (the baseline), in
   process through the whole JSON-RPC path minus HTTP (``a2a.http.jsonrpc.handle``) on
   the main thread's event loop, back to back with a 1 ms pause (a steady client);
2. runs the sweep as a server process does (:func:`a2a.runtime.retention.asweep_store`
   on a loop of its own thread, as the runner's loop runs it beside the server's),
   timing the same ``GetTask`` calls until it ends;
3. checks that every expired task is gone and every recent one is there.

Prints one line per store and writes ``bench/results/retention.json``::

    .venv/bin/python -m bench.retention                       # memory file orm-sqlite orm-postgres, 10^5
    .venv/bin/python -m bench.retention --stores memory --tasks 2000 --seconds 1   # a smoke run

PostgreSQL: ``--postgres-url`` (default ``$A2A_BENCH_POSTGRES_URL``), a database of
your own; its ``stores`` tables are emptied first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.scale import _generate, _percentiles, _rpc  # noqa: E402
from tests.server import manage, site_env  # noqa: E402

LIVE = 1000


def _live_task(i: int, now: str) -> dict[str, Any]:
    return {
        "id": f"live-{i:05d}",
        "contextId": f"live-ctx-{i:05d}",
        "kind": "task",
        "status": {"state": "completed", "timestamp": now},
        "history": [],
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": f"LIVE {i}"}]}],
        "metadata": {},
        "_version": 3,
    }


async def _get_loop(call: Any, bodies: list[bytes], until: Any) -> list[float]:
    samples: list[float] = []
    rng = random.Random(1)
    while not until():
        body = rng.choice(bodies)
        started = time.perf_counter()
        await call(body)
        samples.append(time.perf_counter() - started)
        await asyncio.sleep(0.001)
    return samples


def _worker(kind: str, n: int, seconds: float) -> None:
    """In the subprocess: generate, time GetTask without and during a sweep, print JSON."""
    import django

    django.setup()
    import orjson

    from a2a.http import jsonrpc
    from a2a.runtime import retention
    from stores.backends import get_task_store
    from stores.timestamps import now_iso

    store = get_task_store()
    started = time.perf_counter()
    _generate(kind, store, 0, n)
    now = now_iso()
    for i in range(LIVE):
        store.save(_live_task(i, now))
    if kind == "file":
        store._listing.rebuild()  # files written behind its back: as a new process sees them
    generated_s = time.perf_counter() - started

    async def call(body: bytes) -> None:
        answer = orjson.loads(await jsonrpc.handle(body, None))
        if "error" in answer:
            raise RuntimeError(answer["error"])

    bodies = [_rpc("GetTask", {"id": f"live-{i:05d}"}) for i in range(LIVE)]
    loop = asyncio.new_event_loop()
    deadline = time.perf_counter() + seconds
    baseline = loop.run_until_complete(_get_loop(call, bodies, lambda: time.perf_counter() > deadline))

    outcome: dict[str, Any] = {}

    def sweep() -> None:
        began = time.perf_counter()
        swept = asyncio.run(retention.asweep_store(store))
        outcome.update(sweep_s=time.perf_counter() - began, deleted=swept.total, spared=swept.spared)

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    during = loop.run_until_complete(_get_loop(call, bodies, lambda: not sweeper.is_alive()))
    sweeper.join()
    left = sum(1 for _ in store.scan(("completed",)))
    result = {
        "store": kind,
        "expired": n,
        "generate_s": generated_s,
        **outcome,
        "left": left,
        "batch": retention.a2a_settings.RETENTION_BATCH,
        "get_baseline": _percentiles(baseline),
        "get_during_sweep": _percentiles(during),
    }
    assert outcome["deleted"] == n and left == LIVE, result
    print(json.dumps(result), flush=True)


def _env(store: str, tmp: Path, postgres_url: str) -> dict[str, str]:
    db = f"sqlite:///{tmp / 'db.sqlite3'}"
    store_env = {
        "memory": {"TASK_STORE": "memory", "DATABASE_URL": db},
        "file": {"TASK_STORE": f"file:{tmp / 'tasks'}", "DATABASE_URL": db},
        "orm-sqlite": {"TASK_STORE": "orm", "DATABASE_URL": db},
        "orm-postgres": {"TASK_STORE": "orm", "DATABASE_URL": postgres_url},
    }[store]
    return site_env(A2A_LOG_LEVEL="WARNING", A2A_RETENTION=json.dumps({"completed": "30d"}), **store_env)


def _empty_postgres(env: dict[str, str]) -> None:
    code = (
        "import django; django.setup(); from django.db import connection; c = connection.cursor(); "
        "c.execute('TRUNCATE stores_taskrecord, stores_pushconfigrecord'); "
        "c.execute('UPDATE stores_taskrecord_count SET n = 0')"
    )
    subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", nargs="+", default=["memory", "file", "orm-sqlite", "orm-postgres"])
    parser.add_argument("--tasks", type=int, default=100_000, help="expired tasks per store (default 10^5)")
    parser.add_argument("--seconds", type=float, default=5.0, help="the baseline's window")
    parser.add_argument("--postgres-url", default=os.environ.get("A2A_BENCH_POSTGRES_URL", ""))
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "retention.json"))
    args = parser.parse_args()
    rows = []
    for store in args.stores:
        if store == "orm-postgres" and not args.postgres_url:
            print("retention: skip orm-postgres (no --postgres-url)", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory(prefix="a2a-retention-") as tmp:
            env = _env(store, Path(tmp), args.postgres_url)
            if store.startswith("orm"):
                manage("migrate", "--noinput", env=env)
            if store == "orm-postgres":
                _empty_postgres(env)
            command = [sys.executable, "-m", "bench.retention", "--worker", store, str(args.tasks), str(args.seconds)]
            out = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
            if out.returncode:
                print(f"retention: the {store} worker failed:\n{out.stderr[-3000:]}", file=sys.stderr)
                continue
            row = json.loads(out.stdout.splitlines()[-1])
            rows.append(row)
            base, during = row["get_baseline"], row["get_during_sweep"]
            print(
                f"retention {store:12} {row['expired']:>7} expired: swept in {row['sweep_s']:.1f}s "
                f"({row['expired'] / row['sweep_s']:.0f} tasks/s, batches of {row['batch']}); GetTask p50/p99 "
                f"{base['p50_us']:.0f}/{base['p99_us']:.0f} us without, "
                f"{during['p50_us']:.0f}/{during['p99_us']:.0f} us during (n={during['n']})",
                flush=True,
            )
    Path(args.output).write_text(json.dumps({"rows": rows, "cpus": os.cpu_count()}, indent=2) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        _worker(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        main()
