"""End-to-end task loop against the real site under uvicorn, per store.

Each of C virtual clients sends a non-blocking ``SendMessage`` (toolnexus dialect)
and polls ``GetTask`` every 10 ms until the task is terminal, for a fixed window.
Reports completed tasks/s, p50/p99 latency (send -> terminal seen), GetTask/s,
errors, lost tasks (acknowledged, never seen terminal), server CPU ms per task, and
each store's throughput as a ratio to the memory store's in the same run.

    python bench/e2e_loop.py                       # all stores, C = 1, 8, 32, 5 s each
    python bench/e2e_loop.py --seconds 2 --clients 8 --stores memory file
Results go to bench/results/e2e_loop.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.server import manage, running_server, site_env  # noqa: E402

JSON_HEADERS = {"Content-Type": "application/json"}
TERMINAL = {"completed", "failed", "canceled", "rejected"}
POSTGRES_URL = os.environ.get("A2A_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def rpc(client: aiohttp.ClientSession, endpoint: str, body: dict) -> dict:
    async with client.post(endpoint, data=orjson.dumps(body), headers=JSON_HEADERS) as response:
        return orjson.loads(await response.read())


async def client_loop(client: aiohttp.ClientSession, endpoint: str, stop_at: float, stats: dict) -> None:
    while time.monotonic() < stop_at:
        started = time.monotonic()
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": "hi"}]},
                "configuration": {"blocking": False},
            },
        }
        try:
            sent = (await rpc(client, endpoint, body))["result"]
        except Exception:
            stats["errors"] += 1
            continue
        stats["acknowledged"] += 1
        state = sent["status"]["state"]
        while state not in TERMINAL:
            await asyncio.sleep(0.01)
            try:
                got = await rpc(
                    client, endpoint, {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": sent["id"]}}
                )
                state = got["result"]["status"]["state"]
                stats["gets"] += 1
            except Exception:
                stats["errors"] += 1
                if time.monotonic() > stop_at + 30:
                    break
        if state == "completed":
            stats["latencies"].append(time.monotonic() - started)
        elif state in TERMINAL:
            stats["errors"] += 1


async def run_load(base: str, clients: int, seconds: float) -> dict:
    stats = {"acknowledged": 0, "gets": 0, "errors": 0, "latencies": []}
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as client:
        stop_at = time.monotonic() + seconds
        started = time.monotonic()
        await asyncio.gather(*(client_loop(client, f"{base}/a2a/", stop_at, stats) for _ in range(clients)))
        elapsed = time.monotonic() - started
    lat = sorted(stats["latencies"])
    done = len(lat)
    return {
        "completed": done,
        "tasks_per_s": done / elapsed,
        "gets_per_s": stats["gets"] / elapsed,
        "p50_ms": 1000 * statistics.median(lat) if lat else None,
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
        "errors": stats["errors"],
        "lost": stats["acknowledged"] - done - stats["errors"],
    }


def store_env(store: str, tmp: Path) -> dict[str, str]:
    db = f"sqlite:///{tmp / 'db.sqlite3'}"
    return {
        "memory": {"TASK_STORE": "memory", "DATABASE_URL": db},
        "file": {"TASK_STORE": f"file:{tmp / 'tasks'}", "DATABASE_URL": db},
        "orm-sqlite": {"TASK_STORE": "orm", "DATABASE_URL": db},
        "orm-postgres": {"TASK_STORE": "orm", "DATABASE_URL": POSTGRES_URL},
    }[store]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--stores", nargs="+", default=["memory", "file", "orm-sqlite", "orm-postgres"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    rows = []
    for store in args.stores:
        with tempfile.TemporaryDirectory() as tmp:
            env = site_env(A2A_HANDLER="a2a.handlers.upper", A2A_LOG_LEVEL="WARNING", **store_env(store, Path(tmp)))
            manage("migrate", "--noinput", env=env)
            with running_server(env, log=Path(tmp) / "server.log") as base:
                for clients in args.clients:
                    cpu_before = cpu_seconds(base.pid)
                    result = asyncio.run(run_load(base, clients, args.seconds))
                    cpu = cpu_seconds(base.pid) - cpu_before
                    result.update(
                        store=store,
                        clients=clients,
                        cpu_ms_per_task=1000 * cpu / result["completed"] if result["completed"] else None,
                    )
                    rows.append(result)
                    print(json.dumps(result), flush=True)
    baseline = {r["clients"]: r["tasks_per_s"] for r in rows if r["store"] == "memory"}
    for r in rows:
        r["ratio_to_memory"] = r["tasks_per_s"] / baseline[r["clients"]] if baseline.get(r["clients"]) else None

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "e2e_loop.json").write_text(json.dumps(rows, indent=2))
    lines = [
        "| store | C | tasks/s | x memory | p50 ms | p99 ms | GetTask/s | CPU ms/task | errors | lost |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:

        def f(v, spec=".1f"):
            return "-" if v is None else format(v, spec)

        lines.append(
            f"| {r['store']} | {r['clients']} | {f(r['tasks_per_s'])} | {f(r['ratio_to_memory'], '.2f')} "
            f"| {f(r['p50_ms'])} | {f(r['p99_ms'])} | {f(r['gets_per_s'])} | {f(r['cpu_ms_per_task'], '.2f')} "
            f"| {r['errors']} | {r['lost']} |"
        )
    table = "\n".join(lines)
    (args.out / "e2e_loop.md").write_text(table + "\n")
    print(table)
    if any(r["errors"] or r["lost"] for r in rows):
        sys.exit("errors or lost tasks")


if __name__ == "__main__":
    main()
