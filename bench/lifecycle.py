"""Instructions per task on the direct path, counted by valgrind's callgrind.

    python -m bench.lifecycle                          # this checkout, memory store
    python -m bench.lifecycle --before /tmp/before     # and another checkout, same counts
    python -m bench.lifecycle --profile out.callgrind  # keep the larger run's profile

One task's whole lifecycle in process, as the e2e loop makes it: a non-blocking
``SendMessage`` through the ASGI application (``A2A_DIRECT_ASGI = True``, handler
``a2a.handlers.upper``), the runner's fulfilment (``working``, the handler,
``completed``) on its own thread, then one ``GetTask`` through the application. No
network, no load generator, one task at a time.

Instructions, not time: the machine is shared, and an instruction count does not move
with what else runs on it. Each checkout runs twice under callgrind, with a few tasks
and with ``--tasks`` more; the difference over the extra tasks is the count per task
(start-up, imports and warm-up cancel out). The wait for each task to finish is a
store read every 10 ms, a few polls a task.
``--profile`` keeps the larger run's callgrind file (``callgrind_annotate`` reads it;
Python frames show as the interpreter's C functions, so compare two profiles by the
store's, JSON's and the event machinery's C functions, or run the worker under
cProfile: ``--worker --cprofile``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WARMUP = 10
if sys.path and Path(sys.path[0]).resolve() == HERE:  # run as a script: bench/profile.py is no stdlib profile
    sys.path.pop(0)


def send_body(version: str | None) -> bytes:
    """A non-blocking ``SendMessage`` of a short text in ``version``'s dialect (None: toolnexus's)."""
    if version == "1.0":
        message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "hello, benchmark"}]}
        params = {"message": message, "configuration": {"returnImmediately": True}}
    else:
        message = {"role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": "hello"}]}
        params = {"message": message, "configuration": {"blocking": False}}
    method = "message/send" if version == "0.3" else "SendMessage"
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def get_body(version: str | None, task_id: str) -> bytes:
    method = "tasks/get" if version == "0.3" else "GetTask"
    return json.dumps({"jsonrpc": "2.0", "id": 2, "method": method, "params": {"id": task_id}}).encode()


def scope(
    path: str = "/a2a/", *, method: str = "POST", headers: dict[str, str] | None = None, host: str = "127.0.0.1:8000"
) -> dict[str, Any]:
    """The ASGI scope of an HTTP request to ``path`` on ``host``: JSON content, then ``headers``
    (the one scope builder of the benchmarks and the tests: this module imports nothing of
    the project's, so it runs against another checkout too)."""
    all_headers = {"host": host, "content-type": "application/json", **(headers or {})}
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(name.encode(), value.encode()) for name, value in all_headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": (host.partition(":")[0], int(host.partition(":")[2] or 80)),
    }


def rpc_scope(body: bytes, version: str | None, method: str = "POST", path: str = "/a2a/") -> dict[str, Any]:
    """The scope of a request carrying ``body`` (``A2A-Version: version``, when given)."""
    headers = {"content-length": str(len(body))} | ({"a2a-version": version} if version else {})
    return scope(path, method=method, headers=headers)


async def asgi_call(app: Any, body: bytes, version: str | None, method: str = "POST", path: str = "/a2a/") -> bytes:
    """``app``'s answer to ``body`` (its response body), through an in-memory receive and send."""
    sent: list[bytes] = []
    received = False
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never.wait()  # the client never disconnects
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))

    await app(rpc_scope(body, version, method, path), receive, send)
    return b"".join(sent)


def worker(tasks: int) -> None:
    """Run ``tasks`` tasks' lifecycles (after a warm-up) in this process."""
    import django

    django.setup()
    from a2a.runtime.runner import get_runner
    from stores.backends import get_task_store
    from toolnexus_site.asgi import application

    loop = asyncio.new_event_loop()
    store = get_task_store()
    for _ in range(WARMUP + tasks):
        answer = json.loads(loop.run_until_complete(asgi_call(application, send_body("1.0"), "1.0")))
        task_id = answer["result"]["task"]["id"]
        while store.get(task_id)["status"]["state"] != "completed":
            time.sleep(0.01)  # few polls, so few instructions not the task's
        got = json.loads(loop.run_until_complete(asgi_call(application, get_body("1.0", task_id), "1.0")))
        state = got["result"]["status"]["state"]
        if state != "TASK_STATE_COMPLETED":
            sys.exit(f"task {task_id} ended {state}")
    get_runner().shutdown()


def _env(root: Path, tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("A2A_", "TASK_STORE", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="toolnexus_site.settings",
        PYTHONPATH=str(root),
        PYTHONHASHSEED="0",
        TASK_STORE="memory",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        A2A_HANDLER="a2a.handlers.upper",
        A2A_LOG_LEVEL="WARNING",
        A2A_DIRECT_ASGI="true",
    )
    env.update(extra)
    return env


def count(root: Path, tasks: int, out: Path | None = None, extra: dict[str, str] | None = None) -> int:
    """Instructions (callgrind's Ir, every thread) of a worker running ``tasks`` tasks in
    ``root``, with the settings ``extra`` in its environment."""
    with tempfile.TemporaryDirectory(prefix="a2a-lifecycle-") as tmp_name:
        tmp = Path(tmp_name)
        env = _env(root, tmp, extra or {})
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"], env=env, cwd=root, check=True, capture_output=True
        )
        profile = out or tmp / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}", "--separate-threads=no"]
        command += [sys.executable, str(HERE / "lifecycle.py"), "--worker", "--tasks", str(tasks)]
        done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True)
        if done.returncode:
            sys.exit(done.stderr[-3000:])
        found = re.search(r"Collected : (\d+)", done.stderr)
        if found is None:
            sys.exit(f"no instruction count in callgrind's output: {done.stderr[-1000:]}")
        return int(found.group(1))


def per_task(
    root: Path, tasks: int, base: int, profile: Path | None = None, extra: dict[str, str] | None = None
) -> dict[str, Any]:
    """Callgrind's instructions per task in checkout ``root``: two runs, ``base`` and ``base + tasks`` tasks."""
    small = count(root, base, extra=extra)
    large = count(root, base + tasks, profile, extra)
    per = (large - small) / tasks
    return {
        "root": str(root),
        "env": extra or {},
        "tasks": tasks,
        "small_ir": small,
        "large_ir": large,
        "ir_per_task": per,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=200, help="the extra tasks of the larger run (default 200)")
    parser.add_argument("--base", type=int, default=20, help="tasks of the smaller run (default 20)")
    parser.add_argument("--before", type=Path, default=None, help="another checkout to count the same way")
    parser.add_argument("--profile", type=Path, default=None, help="keep this checkout's larger run's profile here")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting in the environment (repeatable)"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cprofile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        if args.cprofile:
            import cProfile
            import pstats

            with cProfile.Profile() as prof:
                worker(args.tasks)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(60)
        else:
            worker(args.tasks)
        return
    extra = dict(item.split("=", 1) for item in args.set)
    rows = [per_task(HERE.parent, args.tasks, args.base, args.profile, extra)]
    if args.before is not None:
        rows.insert(0, per_task(args.before.resolve(), args.tasks, args.base, extra=extra))
    for row in rows:
        print(json.dumps(row))
    if len(rows) == 2:
        print(f"after / before: {rows[1]['ir_per_task'] / rows[0]['ir_per_task']:.3f}")


if __name__ == "__main__":
    main()
