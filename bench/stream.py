"""Streaming: concurrent subscribers, handler event -> client latency, events/s.

Our server (memory and file stores) with ``bench.handlers.ticker``: each of N clients
opens ``message/stream`` (v0.3) for a task whose handler saves ``events`` progress
updates, each stamped with the wall-clock time the handler made it; the client
takes each ``status-update`` off the SSE stream and subtracts the stamp from its own
clock (one machine, one clock). ``A2A_WORKERS`` is N, so every handler runs at once.
Two loads (:data:`LOADS`): *paced*, 1,000 events/s offered, for the latency below
saturation; *flood*, events as fast as the handlers make them, for the capacity (its
latency is mostly queueing). Reported: p50/p99 of that latency, events received per
second, and any stream that ended without its final event or with an error.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.loadgen import cpu_seconds, run  # noqa: E402
from bench.targets import our_store_env  # noqa: E402
from tests.server import manage, running_server, site_env  # noqa: E402


async def _subscriber(client: aiohttp.ClientSession, url: str, events: int, interval: float, out: dict) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/stream",
        "params": {
            "message": {
                "role": "user",
                "messageId": str(uuid.uuid4()),
                "parts": [{"kind": "text", "text": f"{events} {interval}"}],
            }
        },
    }
    seen, final = 0, False
    try:
        async with client.post(url, data=orjson.dumps(body), headers={"Content-Type": "application/json"}) as response:
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                while b"\n\n" in buffer:
                    frame, buffer = buffer.split(b"\n\n", 1)
                    data = sse_data(frame)
                    if data is None:
                        continue
                    received = time.time()
                    event = orjson.loads(data)
                    if "error" in event:
                        out["errors"].append(str(event["error"])[:200])
                        return
                    result = event["result"]
                    if result.get("kind") != "status-update":
                        continue
                    final = final or result.get("final", False)
                    message = result["status"].get("message")
                    text = message["parts"][0].get("text", "") if message else ""
                    try:
                        stamp = float(text)
                    except ValueError:
                        continue
                    seen += 1
                    out["latencies"].append(received - stamp)
    except Exception as exc:
        out["errors"].append(f"{type(exc).__name__}: {exc}"[:200])
        return
    if seen != events or not final:
        out["incomplete"] += 1


async def _load(base: str, subscribers: int, events: int, interval: float) -> dict[str, Any]:
    out: dict[str, Any] = {"latencies": [], "errors": [], "incomplete": 0}
    connector = aiohttp.TCPConnector(limit=subscribers)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as client:
        started = time.monotonic()
        await asyncio.gather(*(_subscriber(client, f"{base}/a2a/", events, interval, out) for _ in range(subscribers)))
        elapsed = time.monotonic() - started
    lat = sorted(out["latencies"])
    return {
        "subscribers": subscribers,
        "events_each": events,
        "interval_s": interval,
        "events": len(lat),
        "events_per_s": len(lat) / elapsed,
        "p50_ms": 1000 * statistics.median(lat) if lat else None,
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
        "max_ms": 1000 * lat[-1] if lat else None,
        "errors": len(out["errors"]),
        "error_samples": out["errors"][:3],
        "incomplete": out["incomplete"],
        "elapsed_s": elapsed,
    }


#: (name, subscribers, events per subscriber, seconds between a handler's events):
#: "paced" offers 1,000 events/s (latency below saturation), "flood" as many as the
#: handlers can make (capacity: its latency is mostly queueing).
LOADS = [("paced", 100, 20, 0.1), ("flood", 100, 50, 0.0)]
QUICK_LOADS = [("paced", 10, 5, 0.02)]


def sse_data(frame: bytes) -> bytes | None:
    """The ``data:`` of one SSE frame (which may begin with its ``id:`` line), or None (a comment)."""
    for line in frame.split(b"\n"):
        if line.startswith(b"data: "):
            return line[6:]
    return None


def run_stream(stores: list[str] | None = None, *, quick: bool = False) -> dict[str, Any]:
    rows = []
    for store, (load, subscribers, events, interval) in [
        (store, load) for store in stores or ["memory", "file"] for load in (QUICK_LOADS if quick else LOADS)
    ]:
        with tempfile.TemporaryDirectory(prefix="a2a-stream-") as tmp:
            env = site_env(
                A2A_HANDLER="bench.handlers.ticker",
                A2A_LOG_LEVEL="WARNING",
                A2A_WORKERS=str(subscribers),
                **our_store_env(store, Path(tmp)),
            )
            manage("migrate", "--noinput", env=env)
            with running_server(env, log=Path(tmp) / "server.log") as base:
                run(_load(base, 2, 2, 0.01))  # warm-up
                cpu = cpu_seconds(base.pid)
                row = run(_load(base, subscribers, events, interval))
                row["server_cpu_util"] = (cpu_seconds(base.pid) - cpu) / row["elapsed_s"]
        row["store"], row["load"] = store, load
        rows.append(row)
        print(
            f"stream {store:8} {load:6} {subscribers} subscribers: {row['events_per_s']:.0f} events/s, "
            f"p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, errors {row['errors']}, "
            f"incomplete {row['incomplete']}",
            file=sys.stderr,
            flush=True,
        )
    problems = [
        f"stream {r['store']} {r['load']}: {r['errors']} error(s), {r['incomplete']} incomplete stream(s) "
        f"{r['error_samples']}"
        for r in rows
        if r["errors"] or r["incomplete"]
    ]
    return {"rows": rows, "problems": problems}


def markdown(stream: dict[str, Any]) -> str:
    lines = [
        "| store | load | subscribers | events each | events/s | p50 ms | p99 ms | max ms | server CPU "
        "| errors | incomplete |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in stream["rows"]:
        lines.append(
            f"| {r['store']} | {r['load']} | {r['subscribers']} "
            f"| {r['events_each']} every {r['interval_s'] * 1000:.0f} ms "
            f"| {r['events_per_s']:,.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.1f} "
            f"| {r['server_cpu_util']:.2f} | {r['errors']} | {r['incomplete']} |"
        )
    return "\n".join(lines)
