"""Before/after, in one process, of each change the suite's profiles led to.

    python -m bench.ab                  # memory and file stores; ORM on SQLite
    python -m bench.ab --postgres       # the ORM changes on PostgreSQL too

Each pair runs the code as it was (re-created here from the commit before the change,
or switched off) and as it is, in alternating rounds in one process, so both see the
same machine; reported is the best round's mean CPU time per call (the process's) and
the ratio. What is measured, and which change:

- ``requested_version``: ``a2a/http/views.py`` reads ``A2A-Version`` from ``META`` (was:
  ``request.headers`` and ``request.GET``, each built per request);
- ``asgi GetTask``: ``a2a/asgi.py``'s direct path without ``ThreadSensitiveContext``,
  with one task instead of two plus ``asyncio.wait``, and ``ALLOWED_HOSTS`` checked once
  per host (was: Django's ``__call__`` and two tasks);
- ``memory list``: ``stores/index.py`` (was: ``page_in_memory`` over every task);
- ``memory save``: the compact copy (bytes, not orjson's 4 KB buffer): memory, not CPU;
- ``file aget``: the page-cache read on the loop (was: ``asyncio.to_thread(get)``);
- ``file transitions``: the save path's raw reads and writes and the temp-file prefix
  worked out once (was: a buffered file object each, the prefix per save), 8 threads;
- ``orm transition + push``: the save says whether the task has push configs
  (``RETURNING EXISTS``; was: each version handed to delivery, which queried them);
- ``orm get`` / ``orm cas save`` / ``orm create``, each twice: "was -> SQL" is every
  change (no health-check round trip on PostgreSQL, one INSERT instead of SELECT,
  BEGIN, INSERT, COMMIT, and the fixed SQL), "QuerySet -> SQL" the fixed SQL alone
  (``stores/orm.py`` without building a ``QuerySet`` per call).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pair(name: str, before: Any, after: Any, n: int, rounds: int = 9, settle: Any = None) -> dict[str, Any]:
    """Alternate rounds of ``n`` calls of each; the best round's mean CPU µs of each.
    ``settle``, when given, runs (timed) after each round's calls: it waits for work the
    calls handed to other threads, so each round pays for its own."""
    best = {"before": float("inf"), "after": float("inf")}
    for _ in range(rounds):
        for label, fn in (("before", before), ("after", after)):
            started = time.process_time()
            for _ in range(n):
                fn()
            if settle is not None:
                settle()
            best[label] = min(best[label], (time.process_time() - started) / n * 1e6)
    row: dict[str, Any] = {"what": name, "before_us": best["before"], "after_us": best["after"]}
    row["after_over_before"] = row["after_us"] / row["before_us"]
    print(
        f"{name:28} before {row['before_us']:9.1f} us  after {row['after_us']:9.1f} us  "
        f"x{row['after_over_before']:.2f}",
        flush=True,
    )
    return row


def _old_requested_version(request: Any) -> str | None:
    return request.headers.get("A2A-Version") or request.GET.get("A2A-Version")


def _old_handler_class() -> type:
    """A2AASGIHandler.handle as it was (two tasks and asyncio.wait; Django's __call__)."""
    import contextlib

    from django.core.exceptions import DisallowedHost, RequestAborted
    from django.core.handlers.asgi import ASGIRequest, get_script_prefix
    from django.http import HttpResponse, HttpResponseBadRequest
    from django.urls import set_script_prefix

    from a2a.asgi import A2AASGIHandler
    from a2a.conf import a2a_settings

    class Old(A2AASGIHandler):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            from django.core.handlers.asgi import ASGIHandler

            return await ASGIHandler.__call__(self, scope, receive, send)

        async def handle(self, scope: Any, receive: Any, send: Any) -> None:
            found = self.direct_view(scope["path"]) if a2a_settings.DIRECT_ASGI else None
            if found is None:
                return await super().handle(scope, receive, send)
            view, kwargs = found
            try:
                body_file = await self.read_body(receive)
            except RequestAborted:
                return
            set_script_prefix(get_script_prefix(scope))
            try:
                request = ASGIRequest(scope, body_file)
                request.get_host()
            except DisallowedHost as exc:
                body_file.close()
                return await self.send_response(HttpResponseBadRequest(str(exc)), send)

            async def respond() -> None:
                try:
                    response = await view(request, **kwargs)
                except Exception:
                    response = HttpResponse(b"{}", status=500, content_type="application/json")
                await self.send_response(response, send)

            tasks = [asyncio.ensure_future(self.listen_for_disconnect(receive)), asyncio.ensure_future(respond())]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    if not task.done():
                        task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, RequestAborted, AssertionError):
                        await task
                body_file.close()

    return Old


def memory_and_http(rows: list[dict[str, Any]], n: int) -> None:
    os.environ.update(TASK_STORE="memory", A2A_HANDLER="a2a.handlers.upper", A2A_LOG_LEVEL="WARNING")
    import django

    django.setup()
    from django.core.handlers.asgi import ASGIRequest

    from a2a.asgi import A2AASGIHandler
    from a2a.http import common
    from bench.lifecycle import asgi_call, get_body, rpc_scope, send_body
    from bench.scale import lean_task
    from stores.base import TaskQuery
    from stores.memory import MemoryTaskStore
    from stores.paging import page_in_memory

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    new, old = A2AASGIHandler(), _old_handler_class()()
    answer = json.loads(loop.run_until_complete(asgi_call(new, send_body(None), None)))
    task_id = answer["result"]["id"]
    time.sleep(0.2)
    body = get_body(None, task_id)
    request = ASGIRequest(rpc_scope(body, None), io.BytesIO(body))
    rows.append(
        pair(
            "requested_version",
            lambda: _old_requested_version(ASGIRequest(rpc_scope(body, None), io.BytesIO(body))),
            lambda: common.requested_version(ASGIRequest(rpc_scope(body, None), io.BytesIO(body))),
            n,
        )
    )
    del request
    rows.append(
        pair(
            "asgi GetTask (memory)",
            lambda: loop.run_until_complete(asgi_call(old, body, None)),
            lambda: loop.run_until_complete(asgi_call(new, body, None)),
            n,
        )
    )
    store = MemoryTaskStore()
    for i in range(10_000):
        store.save(lean_task(i))
    tasks_json = list(store._tasks.values())
    import orjson

    query = TaskQuery(page_size=50, owner="")
    rows.append(
        pair(
            "memory list, 10^4 tasks",
            lambda: page_in_memory([orjson.loads(r) for r in tasks_json], query),
            lambda: store.list(query),
            max(n // 100, 5),
        )
    )


def file_store(rows: list[dict[str, Any]], n: int) -> None:
    from stores.file import FileTaskStore

    with tempfile.TemporaryDirectory(prefix="a2a-ab-") as tmp:
        store = FileTaskStore(tmp)
        from bench.servers import taskdata

        store.save(taskdata.task("ab-1"))
        loop = asyncio.new_event_loop()
        rows.append(
            pair(
                "file aget (page cache)",
                lambda: loop.run_until_complete(asyncio.to_thread(store.get, "ab-1")),
                lambda: loop.run_until_complete(store.aget("ab-1")),
                n,
            )
        )
        loop.close()
        rows.append(_file_transitions(store, n))


def _old_atomic_write(target: Path, data: bytes, *, fsync: bool = True) -> int:
    """``stores.file.fsio.atomic_write`` as it was: through a buffered file object."""
    from stores.file import fsio as file_module

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=_old_temp_prefix(), suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
            inode = os.fstat(fh.fileno()).st_ino
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    if fsync:
        file_module.sync_directory(target.parent)
    return inode


def _old_temp_prefix() -> str:
    """``stores.file.fsio.temp_prefix`` as it was: the host name and /proc read on every save."""
    from stores.file import fsio as file_module

    pid = os.getpid()
    return f"{file_module.TEMP_PREFIX}{file_module._host_tag()}.{pid}.{file_module._started(pid) or 0}."


def _file_transitions(store: Any, n: int, threads: int = 8) -> dict[str, Any]:
    """Durable transitions (get, then a compare-and-swap save) from 8 threads at once,
    each on its own task, as the runner makes them under load: the save path as it was
    (a buffered file object for each read and write, the temp-file prefix worked out
    per save) against as it is (raw reads and writes, the prefix once per process).
    Under contention each system call that lets go of the GIL may cost a wait to take
    it back. Per call: one transition of each thread."""
    import threading

    from a2a.core import lifecycle
    from bench.servers import taskdata
    from stores.file import fsio as file_module

    new = (file_module.atomic_write, file_module.read_file)
    old = (_old_atomic_write, lambda path: path.read_bytes())
    ids = [f"ab-t{i}" for i in range(threads)]
    for task_id in ids:
        store.save(taskdata.task(task_id, state="working"))

    def run(functions: tuple[Any, Any]) -> None:
        file_module.atomic_write, file_module.read_file = functions
        workers = [
            threading.Thread(target=lambda t=t: [lifecycle.transition_sync(store, t, lambda x: x) for _ in range(20)])
            for t in ids
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    try:
        return pair(f"file transitions ({threads} threads x 20)", lambda: run(old), lambda: run(new), max(n // 50, 3))
    finally:
        file_module.atomic_write, file_module.read_file = new


def orm(rows: list[dict[str, Any]], n: int, database_url: str, label: str) -> None:
    """In a subprocess: the ORM store on ``database_url``, the old paths against the new."""
    import subprocess

    from tests.server import manage, site_env

    env = site_env(TASK_STORE="orm", DATABASE_URL=database_url, A2A_LOG_LEVEL="WARNING")
    manage("migrate", "--noinput", env=env)
    done = subprocess.run(
        [sys.executable, "-m", "bench.ab", "--orm-worker", label, "-n", str(n)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(done.stderr[-3000:])
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            rows.append(json.loads(line))
            r = rows[-1]
            print(
                f"{r['what']:28} before {r['before_us']:9.1f} us  after {r['after_us']:9.1f} us  "
                f"x{r['after_over_before']:.2f}",
                flush=True,
            )


def _orm_worker(label: str, n: int) -> None:
    import django

    django.setup()
    from django.db import connections, transaction

    from bench.servers import taskdata
    from stores import orm_connection
    from stores.orm import OrmTaskStore

    store = OrmTaskStore()
    real_poll = orm_connection._nothing_to_read

    def health_check(each_query: bool) -> None:
        """``each_query``: Django's ``SELECT 1`` before each query (as it was); else the
        socket poll (``_nothing_to_read``) that skips it."""
        orm_connection._nothing_to_read = (lambda connection: False) if each_query else real_poll

    # Each op three ways: "was" (QuerySet, a health check before each query), "QuerySet"
    # (QuerySet, the poll: the code before the SQL paths) and "SQL" (as it is). Two pairs
    # each: was -> SQL (all the changes) and QuerySet -> SQL (the SQL paths alone).
    def old_get(task_id: str, each_query: bool) -> Any:
        health_check(each_query)
        rows = list(store.objects.filter(pk=task_id).values_list("task", flat=True)[:1])
        return rows[0] if rows else None

    def new_get(task_id: str) -> Any:
        health_check(False)
        return store.get(task_id)

    task = taskdata.task(f"ab-{uuid.uuid4()}")
    store.save(task)
    out = []
    for each_query, what in ((True, "was"), (False, "QuerySet")):
        out.append(
            pair(
                f"orm get ({label}, {what} -> SQL)",
                lambda e=each_query: old_get(task["id"], e),
                lambda: new_get(task["id"]),
                n,
            )
        )

    version = {"v": 1}

    def fields(t: dict) -> dict:
        from stores.orm import _updated_at

        return {
            "context_id": t["contextId"],
            "state": "completed",
            "task": t,
            "updated_at": _updated_at(t),
            "owner": "",
            "version": t["_version"],
        }

    def old_cas(each_query: bool) -> None:
        health_check(each_query)
        expected = version["v"]
        task["_version"] = expected + 1
        assert store.objects.filter(pk=task["id"], version=expected).update(**fields(task))
        version["v"] += 1

    def new_cas() -> None:
        health_check(False)
        expected = version["v"]
        task["_version"] = expected + 1
        store.save(task, expected_version=expected)
        version["v"] += 1

    for each_query, what in ((True, "was"), (False, "QuerySet")):
        out.append(pair(f"orm cas save ({label}, {what} -> SQL)", lambda e=each_query: old_cas(e), new_cas, n))

    def old_create() -> None:  # as it was: SELECT, then BEGIN, INSERT, COMMIT
        health_check(True)
        t = taskdata.task(f"ab-{uuid.uuid4()}")
        f = fields(t)
        assert store.objects.filter(pk=t["id"]).values_list("version", "task").first() is None
        with transaction.atomic(using=store.using):
            store.objects.create(id=t["id"], created_at=f["updated_at"], **f)

    def queryset_create() -> None:  # one INSERT through the ORM
        health_check(False)
        t = taskdata.task(f"ab-{uuid.uuid4()}")
        f = fields(t)
        store.objects.create(id=t["id"], created_at=f["updated_at"], **f)

    def new_create() -> None:
        health_check(False)
        store.save(taskdata.task(f"ab-{uuid.uuid4()}"), expected_version=0)

    out.append(pair(f"orm create ({label}, was -> SQL)", old_create, new_create, max(n // 2, 10)))
    out.append(pair(f"orm create ({label}, QuerySet -> SQL)", queryset_create, new_create, max(n // 2, 10)))
    out.append(_orm_push_pair(label, n))
    connections.close_all()
    for row in out:
        print(json.dumps(row))


def _orm_push_pair(label: str, n: int) -> dict[str, Any]:
    """A published transition on the ORM store of a task without push configs, the push
    listener's work included (the delivery thread's, waited for each round): "lookup"
    hands every version to delivery, which queries the task's configs (as it was);
    "RETURNING" (as it is) learns there are none from the save's own statement and
    hands nothing off."""
    from a2a import push
    from a2a.core import lifecycle
    from bench.servers import taskdata
    from stores import orm as orm_module
    from stores.backends import get_task_store

    store = get_task_store()  # the instance the push listener asks
    real = orm_module._returns_rows
    task = taskdata.task(f"ab-{uuid.uuid4()}", state="working")
    store.save(task)

    def transition(returning: bool) -> None:
        orm_module._returns_rows = real if returning else (lambda connection: False)
        assert lifecycle.transition_sync(store, task["id"], lambda t: t) is not None

    try:
        return pair(
            f"orm transition + push ({label}, lookup -> RETURNING)",
            lambda: transition(False),
            lambda: transition(True),
            n,
            settle=push.wait_idle,
        )
    finally:
        orm_module._returns_rows = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=500)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--orm-worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ab.json")
    args = parser.parse_args()
    if args.orm_worker:
        _orm_worker(args.orm_worker, args.n)
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="a2a-ab-db-") as tmp:
        os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/db.sqlite3")
        memory_and_http(rows, args.n)
        file_store(rows, args.n)
        orm(rows, args.n, f"sqlite:///{tmp}/orm.sqlite3", "sqlite")
        if args.postgres:
            from bench.targets import bench_database_url

            orm(rows, args.n, bench_database_url(), "postgres")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
