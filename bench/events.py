"""Event backends (``A2A_EVENTS``): what one published event costs, and how long an
event takes from the handler to an SSE client on another process; memory vs Redis
pub/sub vs PostgreSQL LISTEN/NOTIFY, in one run, as ratios to memory.

1. **Publish cost**, in this process: ``bus.publish`` of a ~1 KB task version (what
   every transition pays, listeners included), µs per event on the caller's thread,
   and events per second until the backend has sent them all.
2. **Latency across processes**: servers A and B share a file store and the backend;
   B runs ``bench.handlers.ticker`` (progress updates stamped with ``time.time()``),
   A streams them (``SubscribeToTask``, v1.0); latency = the client's clock minus the
   stamp (one machine, one clock). ``memory`` has no second process to reach: it is
   the baseline, the stream on B itself.

    .venv/bin/python -m bench.events [--publish 5000] [--events 300] [--interval 0.003] [--streams 4] [--reps 3]

Needs Redis (``--redis``, default ``$A2A_TEST_REDIS_URL`` or 127.0.0.1:6379/0) and
PostgreSQL (``--postgres``, default ``$A2A_TEST_POSTGRES_URL``; skipped when empty).
Results: a table on stdout and ``bench/results/events.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
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

from bench.stream import sse_data  # noqa: E402
from tests.server import ServerURL, manage, running_server, site_env  # noqa: E402


def _sample_task(task_id: str) -> dict[str, Any]:
    """A task version of about 1 KB: one user message, a progress message."""
    message = {"kind": "message", "role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text"}]}
    message["parts"][0]["text"] = "summarise the attached quarterly report and list the three main risks " * 6
    return {
        "id": task_id,
        "contextId": str(uuid.uuid4()),
        "kind": "task",
        "status": {"state": "working", "timestamp": "2026-01-01T00:00:00.000Z"},
        "history": [message],
        "metadata": {},
    }


def publish_cost(spec: str, count: int) -> dict[str, float]:
    """µs per ``bus.publish`` on the caller's thread, and events/s until all were sent."""
    from django.test import override_settings

    from a2a.core.events import bus, get_event_backend

    with override_settings(A2A_EVENTS=spec, A2A_EVENTS_CHANNEL=f"a2a-bench-{uuid.uuid4().hex}"):
        backend = get_event_backend()
        task = _sample_task(str(uuid.uuid4()))
        for version in range(1, 201):  # warm up: connect, first allocations
            task["_version"] = version
            bus.publish(task)
        _drain(backend)
        started = time.perf_counter()
        for version in range(201, 201 + count):
            task["_version"] = version
            bus.publish(task)
        caller = time.perf_counter() - started
        _drain(backend)
        total = time.perf_counter() - started
        backend.close()
    return {"caller_us": caller / count * 1e6, "sent_per_s": count / total}


def _drain(backend: Any) -> None:
    unsent = getattr(backend, "unsent", None)
    while unsent is not None and unsent():
        time.sleep(0.001)


async def _stream(session: aiohttp.ClientSession, base: str, task_id: str, subscribed: asyncio.Event) -> list[float]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    latencies: list[float] = []
    async with session.post(f"{base}/a2a/", data=orjson.dumps(body), headers=headers) as response:
        buffer = b""
        async for chunk in response.content.iter_any():
            buffer += chunk
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                data = sse_data(frame)
                if data is None:
                    continue
                received = time.time()
                result = orjson.loads(data)["result"]
                subscribed.set()
                update = result.get("statusUpdate")
                if update and update["status"]["state"] == "TASK_STATE_WORKING" and update["status"].get("message"):
                    stamp = float(update["status"]["message"]["parts"][0]["text"])
                    latencies.append(received - stamp)
    return latencies


async def stream_latency(a: str, b: str, events: int, interval: float, streams: int, gate: Path) -> dict[str, Any]:
    """``streams`` tasks sent to B, each streamed from A; the latency of every event."""
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        task_ids = []
        for _ in range(streams):
            message = {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": f"{events} {interval} {gate}"}],
            }
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
            body["params"] = {"message": message, "configuration": {"returnImmediately": True}}
            async with session.post(f"{b}/a2a/", data=orjson.dumps(body), headers=headers) as response:
                task_ids.append((await response.json())["result"]["task"]["id"])
        ready = [asyncio.Event() for _ in task_ids]
        jobs = [asyncio.ensure_future(_stream(session, a, t, r)) for t, r in zip(task_ids, ready, strict=True)]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 30)
        gate.touch()
        results = await asyncio.gather(*jobs)
    latencies = sorted(x * 1000 for r in results for x in r)
    expected = events * streams
    return {
        "events": len(latencies),
        "expected": expected,
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    }


@contextlib.contextmanager
def _servers(spec: str, tmp: Path, streams: int):
    """(A, B): one server for memory, two sharing the file store and the backend otherwise."""
    env = site_env(
        TASK_STORE=f"file:{tmp / 'tasks'}",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        A2A_HANDLER="bench.handlers.ticker",
        A2A_WORKERS=str(max(8, streams)),
        A2A_EVENTS=spec,
        A2A_EVENTS_CHANNEL=f"a2a-bench-{uuid.uuid4().hex}",
        A2A_LOG_LEVEL="WARNING",
    )
    manage("migrate", "--noinput", env=env)
    with contextlib.ExitStack() as stack:
        b: ServerURL = stack.enter_context(running_server(env, log=tmp / "b.log"))
        a = b if spec == "memory" else stack.enter_context(running_server(env, log=tmp / "a.log"))
        yield a, b


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each number's median over the repetitions (events received: the fewest)."""
    out: dict[str, Any] = {}
    for part in ("publish", "latency"):
        out[part] = {key: statistics.median(r[part][key] for r in runs) for key in runs[0][part]}
    out["latency"]["events"] = min(r["latency"]["events"] for r in runs)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--publish", type=int, default=5000, help="events per publish-cost measurement")
    parser.add_argument("--events", type=int, default=300, help="progress updates per streamed task")
    parser.add_argument("--interval", type=float, default=0.003, help="seconds between two updates")
    parser.add_argument("--streams", type=int, default=4, help="tasks streamed at once")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (medians are reported)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results", help="where events.{json,md} go")
    parser.add_argument("--redis", default=os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--postgres", default=os.environ.get("A2A_TEST_POSTGRES_URL", ""))
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")
    os.environ["TASK_STORE"] = "memory"
    import django

    django.setup()
    import logging

    logging.getLogger("a2a").setLevel(logging.WARNING)

    backends = {"memory": "memory", "redis": args.redis}
    if args.postgres:
        backends["postgres"] = args.postgres
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in backends}
    for rep in range(args.reps):  # the backends take turns, so each sees the machine's same moods
        for name, spec in backends.items():
            run = {"publish": publish_cost(spec, args.publish)}
            with tempfile.TemporaryDirectory() as tmp, _servers(spec, Path(tmp), args.streams) as (a, b):
                gate = Path(tmp) / "gate"
                run["latency"] = asyncio.run(stream_latency(a, b, args.events, args.interval, args.streams, gate))
            runs[name].append(run)
            print(f"rep {rep + 1} {name}: {run}", file=sys.stderr)
    results = {name: _medians(r) for name, r in runs.items()}

    base = results["memory"]
    lines = [
        f"Event backends: {args.publish} publishes of a ~1 KB task; {args.streams} streams x {args.events} events "
        f"{args.interval * 1000:g} ms apart, handler on B, client on A (memory: both on one server); "
        f"medians of {args.reps} runs",
        "",
        "| backend | publish µs/event (caller) | x memory | sent events/s | p50 ms | x memory | p99 ms | x memory "
        "| events received |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        p, lat = r["publish"], r["latency"]
        lines.append(
            f"| {name} | {p['caller_us']:.1f} | {p['caller_us'] / base['publish']['caller_us']:.2f} "
            f"| {p['sent_per_s']:,.0f} | {lat['p50_ms']:.2f} | {lat['p50_ms'] / base['latency']['p50_ms']:.2f} "
            f"| {lat['p99_ms']:.2f} | {lat['p99_ms'] / base['latency']['p99_ms']:.2f} "
            f"| {lat['events']}/{lat['expected']} |"
        )
    table = "\n".join(lines)
    print(table)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "events.json").write_bytes(
        orjson.dumps({"args": {**vars(args), "out": str(out)}, "results": results}, option=orjson.OPT_INDENT_2)
    )
    (out / "events.md").write_text(table + "\n")
    lost = [n for n, r in results.items() if r["latency"]["events"] != r["latency"]["expected"]]
    if lost:
        print(f"events lost on: {', '.join(lost)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
