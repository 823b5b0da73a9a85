"""What the project's MIDDLEWARE costs the A2A endpoints: the example site under uvicorn
with ``A2A_DIRECT_ASGI`` off (the default: MIDDLEWARE applies, on the event loop), the same
on the one-hop chain, and with it on (the fast path), all started in the same run,
measured in alternating rounds so all see the same machine.

    python -m bench.middleware [--clients 8] [--seconds 5] [--rounds 3]
    python -m bench.middleware --instructions 300   # needs valgrind

Each round: C clients, each a loop of one request (``GetTask`` of one task over JSON-RPC
v1.0, then the Agent Card) for ``--seconds``; reported per setting and request: the best
round's requests/s, its p50 and p99 latency, and the server's CPU time per request
(``/proc/<pid>/stat``). The site's MIDDLEWARE is startproject's seven (on the loop); the
second server adds a middleware that does not declare ``loop_safe`` (the one-hop chain:
``bench/hop_middleware.py``), the third a project's typical extras, declared (CORS, a
request id: ``bench/extra_middleware.py``).

``--instructions N``: no server and no clock; each setting's ASGI application called in
process (``bench.breakdown``'s in-memory ``receive``/``send``) under valgrind's callgrind,
counting the instructions of N requests of each kind after a warm-up (every thread's:
the hop's worker included). For a machine whose wall clock others share.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.callgrind import measure  # noqa: E402
from tests.server import running_server, site_env  # noqa: E402

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "Origin": "https://app.example.com"}
#: (label, A2A_DIRECT_ASGI, settings module): the site's seven middleware (on the loop), the
#: same on the one-hop chain, plus a project's typical extras (declared loop-safe), and the direct path.
SERVERS = (
    ("MIDDLEWARE (default)", "false", "toolnexus_site.settings"),
    ("MIDDLEWARE, one hop", "false", "bench.hop_middleware"),
    ("MIDDLEWARE + CORS, id", "false", "bench.extra_middleware"),
    ("A2A_DIRECT_ASGI=True", "true", "toolnexus_site.settings"),
)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def window(base: str, kind: str, task_id: str, clients: int, seconds: float) -> list[float]:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}})
    latencies: list[float] = []
    deadline = time.monotonic() + seconds

    async def client(session: aiohttp.ClientSession) -> None:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            if kind == "GetTask":
                async with session.post(f"{base}/a2a/", data=body, headers=HEADERS) as response:
                    await response.read()
            else:
                async with session.get(f"{base}/.well-known/agent-card.json", headers=HEADERS) as response:
                    await response.read()
            assert response.status == 200, response.status
            latencies.append(time.perf_counter() - started)

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))
    return latencies


def counted(n: int) -> dict[str, float]:
    """In this process (under callgrind, instrumentation off): warm up, then N requests of
    each kind with instrumentation on, one dump each; the instructions per request."""
    import django

    django.setup()
    from a2a.asgi import get_asgi_application
    from bench.lifecycle import asgi_call

    app = get_asgi_application()
    loop = asyncio.new_event_loop()
    send = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}}
    sent = orjson.loads(loop.run_until_complete(asgi_call(app, orjson.dumps(_rpc("SendMessage", send)), "1.0")))
    get = orjson.dumps(_rpc("GetTask", {"id": sent["result"]["task"]["id"]}))
    kinds = {
        "GetTask": lambda: asgi_call(app, get, "1.0"),
        "card": lambda: asgi_call(app, b"", None, "GET", "/.well-known/agent-card.json"),
    }
    for call in kinds.values():
        for _ in range(50):
            loop.run_until_complete(call())

    def repeated(call: Callable[[], Awaitable[object]]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(n):
                loop.run_until_complete(call())

        return run

    counts = measure({kind: repeated(call) for kind, call in kinds.items()})
    return {kind: count / n for kind, count in counts.items()}


def _rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def instructions(n: int) -> int:
    """Every setting of SERVERS under callgrind (one process each): instructions per request."""
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-middleware-") as tmp:
        for label, direct, module in SERVERS:
            env = site_env(TASK_STORE="memory", A2A_HANDLER="a2a.handlers.echo", A2A_DIRECT_ASGI=direct)
            out = Path(tmp) / f"{len(rows)}.callgrind"
            env.update(DJANGO_SETTINGS_MODULE=module, CALLGRIND_OUT=str(out), A2A_LOG_LEVEL="WARNING")
            command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
            command += [sys.executable, "-m", "bench.middleware", "--worker", str(n)]
            done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr[-3000:])
            rows[label] = orjson.loads(done.stdout.splitlines()[-1])
    print(f"Instructions per request (callgrind, every thread, {n} requests each after a warm-up):")
    print(f"{'request':8} {'setting':22} {'instructions':>14} {'x direct':>9}")
    direct_label = SERVERS[-1][0]
    for kind in ("GetTask", "card"):
        for label, row in rows.items():
            ratio = row[kind] / rows[direct_label][kind]
            print(f"{kind:8} {label:22} {row[kind]:14,.0f} {ratio:9.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instructions", type=int, metavar="N", help="count instructions of N requests each")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(orjson.dumps(counted(args.worker)).decode())
        return 0
    if args.instructions:
        return instructions(args.instructions)
    best: dict[tuple[str, str], dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-middleware-")))
        servers = {}
        for label, direct, module in SERVERS:
            env = site_env(TASK_STORE="memory", A2A_HANDLER="a2a.handlers.echo", A2A_DIRECT_ASGI=direct)
            env["DJANGO_SETTINGS_MODULE"] = module
            servers[label] = stack.enter_context(running_server(env, log=tmp / f"{len(servers)}.log"))
        tasks = {}
        for label, base in servers.items():
            sent = httpx.post(
                f"{base}/a2a/",
                headers=HEADERS,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}},
                },
            ).json()
            tasks[label] = sent["result"]["task"]["id"]
        for _ in range(args.rounds):
            for kind in ("GetTask", "card"):
                for label, base in servers.items():
                    cpu = cpu_seconds(base.pid)
                    latencies = asyncio.run(window(base, kind, tasks[label], args.clients, args.seconds))
                    used = cpu_seconds(base.pid) - cpu
                    row = {
                        "rps": len(latencies) / args.seconds,
                        "p50_ms": statistics.median(latencies) * 1e3,
                        "p99_ms": statistics.quantiles(latencies, n=100)[98] * 1e3,
                        "cpu_ms": used / len(latencies) * 1e3,
                    }
                    if row["rps"] > best.get((kind, label), {}).get("rps", 0):
                        best[kind, label] = row
    print(f"C={args.clients}, {args.rounds} rounds of {args.seconds:g}s each, best round:")
    print(f"{'request':8} {'setting':22} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/req':>11}")
    for (kind, label), row in best.items():
        print(f"{kind:8} {label:22} {row['rps']:8.0f} {row['p50_ms']:8.2f} {row['p99_ms']:8.2f} {row['cpu_ms']:11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
