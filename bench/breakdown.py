"""Per-request breakdown: where one request's server time goes, layer by layer, in process.

    python -m bench.breakdown                 # memory store
    python -m bench.breakdown --store file    # (also orm-sqlite, orm-postgres)

No network and no load generator: each layer is called directly, many times, on the
site's settings (``a2a.handlers.upper``), and CPU time is measured (the process's,
not the wall clock), the best of several rounds (the mean of ``n`` calls in the least
disturbed round), so the figures hold still on a busy machine where end-to-end ones
do not. Layers, each including the ones below:

- ``asgi``: the whole ASGI application (``toolnexus_site.asgi.application``) with an
  in-memory ``receive``/``send`` (everything but uvicorn's HTTP parsing and socket I/O);
- ``view``: ``a2a.http.views.jsonrpc_endpoint`` on a ready ``ASGIRequest``;
- ``binding``: ``a2a.http.jsonrpc.handle`` (parse, dialect, operation, render, JSON);
- ``operation``: ``a2a.service.operations.get_task`` / ``send_message`` (parsed parameters in,
  canonical task out);
- ``store``: ``store.get`` / ``store.save`` of the same task.

A ``SendMessage`` here also queues the task on the runner (as the server does); the
runner's work (the handler, two more saves) runs on its own thread meanwhile and
competes for the GIL, so ``SendMessage`` figures are less steady; ``runner`` times a
task's whole fulfilment (``SendMessage`` through the binding, then polling the store
until it is completed), one task at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.lifecycle import asgi_call, get_body, rpc_scope, send_body  # noqa: E402


def _rounds(fn: Any, n: int, rounds: int = 7) -> dict[str, float]:
    """The best and the median over ``rounds`` of the mean CPU time (the process's, every
    thread's) of ``n`` calls, in µs."""
    means = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(n):
            fn()
        means.append((time.process_time() - started) / n * 1e6)
    return {"median_us": statistics.median(means), "best_us": min(means)}


def run(store: str, version: str | None, n: int) -> dict[str, Any]:
    import django

    django.setup()
    from django.core.handlers.asgi import ASGIRequest

    from a2a.http import jsonrpc, views
    from a2a.protocol import dialect_for
    from a2a.runtime.runner import get_runner
    from a2a.service import operations
    from stores.backends import get_task_store
    from toolnexus_site.asgi import application

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    run_ = loop.run_until_complete
    dialect = dialect_for(version)
    store_ = get_task_store()

    # a task to get, completed by the runner
    answer = json.loads(run_(asgi_call(application, send_body(version), version)))
    task_id = (answer["result"].get("task") or answer["result"])["id"]
    deadline = time.monotonic() + 10
    while store_.get(task_id)["status"]["state"] != "completed" and time.monotonic() < deadline:
        time.sleep(0.01)
    get_task = get_body(version, task_id)
    task = store_.get(task_id)

    def request(body: bytes) -> Any:
        req = ASGIRequest(rpc_scope(body, version), io.BytesIO(body))
        return req

    out: dict[str, Any] = {"store": store, "dialect": version or "toolnexus"}
    out["GetTask"] = {
        "asgi": _rounds(lambda: run_(asgi_call(application, get_task, version)), n),
        "view": _rounds(lambda: run_(views.jsonrpc_endpoint(request(get_task))), n),
        "binding": _rounds(lambda: run_(jsonrpc.handle(get_task, version)), n),
        "operation": _rounds(lambda: run_(operations.get_task(dialect.parse_get({"id": task_id}))), n),
        "store": _rounds(lambda: store_.get(task_id), n),
    }
    send_n = max(n // 4, 50)
    params = json.loads(send_body(version))["params"]
    out["SendMessage"] = {
        "asgi": _rounds(lambda: run_(asgi_call(application, send_body(version), version)), send_n),
        "view": _rounds(lambda: run_(views.jsonrpc_endpoint(request(send_body(version)))), send_n),
        "binding": _rounds(lambda: run_(jsonrpc.handle(send_body(version), version)), send_n),
        "operation": _rounds(lambda: run_(operations.send_message(dialect.parse_send(params))), send_n),
        "store": _rounds(lambda: store_.save({**task, "id": str(uuid.uuid4()), "_version": 1}), send_n),
    }

    # the runner: submit and wait for completion, one task at a time (no HTTP)
    def fulfil() -> None:
        answer = json.loads(run_(jsonrpc.handle(send_body(version), version)))
        tid = (answer["result"].get("task") or answer["result"])["id"]
        while store_.get(tid)["status"]["state"] != "completed":
            time.sleep(0.0002)

    out["runner"] = _rounds(fulfil, max(n // 10, 20), rounds=5)
    get_runner().shutdown()
    return out


LAYERS = ("asgi", "view", "binding", "operation", "store")


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| store | dialect | request | asgi | view | binding | operation | store |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for method in ("GetTask", "SendMessage"):
            cells = [
                f"{r[method][layer]['best_us']:.0f}" for layer in ("asgi", "view", "binding", "operation", "store")
            ]
            lines.append(f"| {r['store']} | {r['dialect']} | {method} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Runner, submitted -> completed, one task at a time: "
        + ", ".join(f"{r['store']} {r['dialect']} {r['runner']['best_us'] / 1000:.2f} ms" for r in rows)
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default="memory", choices=["memory", "file", "orm-sqlite", "orm-postgres"])
    parser.add_argument("--dialect", default=None, choices=[None, "0.3", "1.0"])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run(args.store, args.dialect, args.n)))
        return
    import subprocess

    from bench.targets import our_store_env
    from tests.server import manage, site_env

    with tempfile.TemporaryDirectory(prefix="a2a-breakdown-") as tmp:
        # The fast path, as the benchmarked server runs (bench/targets.py): without it the
        # asgi layer is mostly the MIDDLEWARE stack (bench/middleware.py measures that).
        env = site_env(
            A2A_HANDLER="a2a.handlers.upper",
            A2A_LOG_LEVEL="WARNING",
            A2A_DIRECT_ASGI="true",
            **our_store_env(args.store, Path(tmp)),
        )
        manage("migrate", "--noinput", env=env)
        command = [sys.executable, "-m", "bench.breakdown", "--worker", "--store", args.store, "-n", str(args.n)]
        if args.dialect:
            command += ["--dialect", args.dialect]
        done = subprocess.run(command, env={**env, "PYTHONHASHSEED": "0"}, cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            sys.exit(done.stderr[-3000:])
        row = json.loads(done.stdout.splitlines()[-1])
    print(json.dumps(row, indent=1))
    print(markdown([row]))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")
    main()
