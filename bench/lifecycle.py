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

    python -m bench.lifecycle --store orm --path default --counts   # no valgrind

``--store orm`` serves the ORM store on the PostgreSQL database of
``A2A_TEST_POSTGRES_URL`` (migrated first), ``--store file`` the file store in the
worker's temporary directory; ``--path default`` the default path (the
project's ``MIDDLEWARE`` on the loop) instead of the direct one. ``--counts`` runs the
worker once, in process, and prints per task and per extra ``GetTask`` of a finished
task: the queries (by their first word), the connections opened, the jobs handed to a
thread pool (``asyncio.to_thread``, ``sync_to_async``, the runner's) and the process
CPU (indicative: the machine may be shared). The wait for each task is then the
runner's own set of unsettled tasks (no store read), in every mode.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
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


#: Whether this thread is in :func:`_wait` (its store reads are not the task's).
_waiting = threading.local()


def context_switches(thread: str = "*") -> int:
    """Context switches so far, voluntary or not, of this process's threads (``thread``:
    one native id): a thread that gives up the GIL to another, or waits for it, or for
    I/O, is switched out."""
    total = 0
    for task in Path("/proc/self/task").glob(thread):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            status = (task / "status").read_text()
            total += sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)
    return total


def _wait(runner: Any, store: Any, task_id: str) -> None:
    """Until the task is completed: the runner's own set of unsettled tasks first (no
    store read while it runs), then one read (two when the runner had not taken it yet)."""
    _waiting.on = True  # what --counts leaves out
    me = str(threading.get_native_id())
    switches = context_switches(me)
    try:
        while task_id in runner.task_ids() or store.get(task_id)["status"]["state"] != "completed":
            time.sleep(0.002)
    finally:
        _waiting.on = False
        _waiting.switches = getattr(_waiting, "switches", 0) + context_switches(me) - switches


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
        _one_task(loop, application, get_runner(), store)
    get_runner().shutdown()


def _one_task(loop: asyncio.AbstractEventLoop, application: Any, runner: Any, store: Any) -> str:
    """One task's life: ``SendMessage``, its fulfilment, one ``GetTask``; its id."""
    answer = json.loads(loop.run_until_complete(asgi_call(application, send_body("1.0"), "1.0")))
    task_id = answer["result"]["task"]["id"]
    _wait(runner, store, task_id)
    _get(loop, application, task_id)
    return task_id


def _get(loop: asyncio.AbstractEventLoop, application: Any, task_id: str) -> None:
    got = json.loads(loop.run_until_complete(asgi_call(application, get_body("1.0", task_id), "1.0")))
    state = got["result"]["status"]["state"]
    if state != "TASK_STATE_COMPLETED":
        sys.exit(f"task {task_id} ended {state}")


def _instrument() -> Counter[str]:
    """Count, from now on, in every thread: the queries (by first word), the connections
    opened, the jobs given to thread pools and the event loops woken from another thread.
    The main thread's waits (:func:`_wait`) are not counted."""
    import concurrent.futures

    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.utils import CursorWrapper

    from a2a.runtime.pool import DaemonPool

    counts: Counter[str] = Counter()
    main = threading.main_thread()

    def counting(name: str, owner: Any, label: Callable[..., str]) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def counted(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not main or not getattr(_waiting, "on", False):
                counts[label(*args)] += 1
            return original(*args, **kwargs)

        setattr(owner, name, counted)

    counting("_execute", CursorWrapper, lambda _self, sql, *_: "query " + sql.split(None, 1)[0].upper())
    counting("_executemany", CursorWrapper, lambda *_: "query executemany")
    counting("connect", BaseDatabaseWrapper, lambda *_: "connection opened")
    counting("submit", concurrent.futures.ThreadPoolExecutor, lambda *_: "job to a thread pool")
    counting("submit", DaemonPool, lambda *_: "job to a thread pool")  # the sync handlers' pool
    counting("call_soon_threadsafe", asyncio.BaseEventLoop, lambda *_: "loop woken from a thread")
    return counts


def count_worker(tasks: int, gets: int) -> None:
    """``--counts``: per task and per ``GetTask`` of a finished task, in this process (JSON)."""
    import django

    django.setup()
    from a2a.runtime.runner import get_runner
    from stores.backends import get_task_store
    from toolnexus_site.asgi import application

    loop = asyncio.new_event_loop()
    store, runner = get_task_store(), get_runner()
    ids = [_one_task(loop, application, runner, store) for _ in range(WARMUP)]
    counts = _instrument()
    start, switches, _waiting.switches = time.process_time(), context_switches(), 0
    ids += [_one_task(loop, application, runner, store) for _ in range(tasks)]
    counts["context switches"] = context_switches() - switches - _waiting.switches  # not the waits' sleeps
    per_task = {name: n / tasks for name, n in sorted(counts.items())}
    task_cpu = (time.process_time() - start) / tasks
    counts.clear()
    start, switches = time.process_time(), context_switches()
    for i in range(gets):
        _get(loop, application, ids[i % len(ids)])
    counts["context switches"] = context_switches() - switches
    per_get = {name: n / gets for name, n in sorted(counts.items())}
    get_cpu = (time.process_time() - start) / gets
    runner.shutdown()
    print(
        json.dumps(
            {
                "per_task": per_task,
                "cpu_ms_per_task": round(task_cpu * 1000, 3),
                "per_get": per_get,
                "cpu_ms_per_get": round(get_cpu * 1000, 3),
            }
        )
    )


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
    env.update({key: value.replace("{tmp}", str(tmp)) for key, value in extra.items()})
    return env


def settings_for(store: str, path: str) -> dict[str, str]:
    """The environment of ``--store`` and ``--path`` (see the module doc)."""
    extra = {"A2A_DIRECT_ASGI": "true" if path == "direct" else "false"}
    if store == "orm":
        url = os.environ.get("A2A_TEST_POSTGRES_URL")
        if not url:
            sys.exit("--store orm needs A2A_TEST_POSTGRES_URL (a PostgreSQL database it may migrate)")
        extra.update(TASK_STORE="orm", DATABASE_URL=url)
    elif store == "file":
        extra.update(TASK_STORE="file:{tmp}/tasks")  # in the worker's temporary directory
    return extra


def _migrated(root: Path, tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    """The worker's environment, its database migrated."""
    env = _env(root, tmp, extra)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], env=env, cwd=root, check=True, capture_output=True
    )
    return env


def count(root: Path, tasks: int, out: Path | None = None, extra: dict[str, str] | None = None) -> int:
    """Instructions (callgrind's Ir, every thread) of a worker running ``tasks`` tasks in
    ``root``, with the settings ``extra`` in its environment."""
    with tempfile.TemporaryDirectory(prefix="a2a-lifecycle-") as tmp_name:
        tmp = Path(tmp_name)
        env = _migrated(root, tmp, extra or {})
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


def counted(root: Path, tasks: int, gets: int, extra: dict[str, str]) -> dict[str, Any]:
    """``--counts`` in checkout ``root``: :func:`count_worker`'s answer."""
    with tempfile.TemporaryDirectory(prefix="a2a-lifecycle-") as tmp_name:
        env = _migrated(root, Path(tmp_name), extra)
        command = [sys.executable, str(HERE / "lifecycle.py"), "--worker", "--counts"]
        command += ["--tasks", str(tasks), "--gets", str(gets)]
        done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True)
        if done.returncode:
            sys.exit(done.stderr[-3000:])
        return {"root": str(root), "env": extra} | json.loads(done.stdout.splitlines()[-1])


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
        "--store", choices=("memory", "file", "orm"), default="memory", help="orm: on A2A_TEST_POSTGRES_URL"
    )
    parser.add_argument("--path", choices=("direct", "default"), default="direct", help="the request path")
    parser.add_argument("--counts", action="store_true", help="queries, thread jobs, CPU: in process, no valgrind")
    parser.add_argument("--gets", type=int, default=200, help="GetTasks of finished tasks counted with --counts")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting in the environment (repeatable)"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cprofile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _work(args)
        return
    extra = settings_for(args.store, args.path) | dict(item.split("=", 1) for item in args.set)
    roots = ([args.before.resolve()] if args.before is not None else []) + [HERE.parent]
    if args.counts:
        for root in roots:
            print(json.dumps(counted(root, args.tasks, args.gets, extra)))
        return
    profiles = {HERE.parent: args.profile}  # the larger run's profile: this checkout's only
    rows = [per_task(root, args.tasks, args.base, profiles.get(root), extra) for root in roots]
    for row in rows:
        print(json.dumps(row))
    if len(rows) == 2:
        print(f"after / before: {rows[1]['ir_per_task'] / rows[0]['ir_per_task']:.3f}")


def _work(args: argparse.Namespace) -> None:
    """The worker's part: ``--counts``, ``--cprofile`` or the plain run callgrind counts."""
    if args.counts:
        count_worker(args.tasks, args.gets)
    elif args.cprofile:
        import cProfile
        import pstats

        with cProfile.Profile() as prof:
            worker(args.tasks)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(60)
    else:
        worker(args.tasks)


if __name__ == "__main__":
    main()
