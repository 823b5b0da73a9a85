"""Scale with data: GetTask and ListTasks latency at 10^3, 10^5 and 10^6 tasks.

One worker subprocess per store (the site's settings, so the store is the one the
server would use) grows the data set size by size, generating tasks straight into
the store: ``save`` for the memory store, plain file writes for the file store (no
fsync: only the reads are timed), bulk SQL (``COPY`` on PostgreSQL) for the ORM
store. At each size it times, in process, the whole JSON-RPC path minus HTTP
(``a2a.http.jsonrpc.handle``: parse, dialect, operation, store, render, JSON):

- ``GetTask`` of random tasks (p50/p99);
- ``ListTasks`` first page (``pageSize`` 50, newest first) and a deep page (the page
  token of the task in the middle of the set), p50/p99;
- the first ``ListTasks`` after the data appeared (the file store builds its index
  then, as a new process would), reported apart;
- the file store: the first ``list`` page of a new store on the directory (a restarted
  process, the index persisted by the listing before) and a later page of it.

Also the memory store's memory per 10k tasks (tracemalloc: what its saves allocate). The tasks
are lean (~600 bytes: one short message, one artifact) so 10^6 of them fit in
minutes; ``--file-scale-max`` caps the file store when 10^6 files take too long.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.targets import our_store_env  # noqa: E402
from tests.server import manage, site_env  # noqa: E402

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
CONTEXTS = 1000


def _when(i: int) -> str:
    when = T0 + dt.timedelta(milliseconds=i)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _task_id(i: int) -> str:
    return f"task-{i:08d}"


def lean_task(i: int) -> dict[str, Any]:
    task_id, context_id = _task_id(i), f"ctx-{i % CONTEXTS:05d}"
    return {
        "id": task_id,
        "contextId": context_id,
        "kind": "task",
        "status": {"state": "completed", "timestamp": _when(i)},
        "history": [
            {
                "kind": "message",
                "role": "user",
                "messageId": f"m-{i}",
                "taskId": task_id,
                "contextId": context_id,
                "parts": [{"kind": "text", "text": f"hello number {i}"}],
            }
        ],
        "artifacts": [{"artifactId": f"a-{i}", "parts": [{"kind": "text", "text": f"HELLO NUMBER {i}"}]}],
        "metadata": {},
        "_version": 3,
    }


# --- generation, per store -----------------------------------------------------------------


def _generate(kind: str, store: Any, start: int, stop: int) -> None:
    if kind == "memory":
        for i in range(start, stop):
            store.save(lean_task(i))
    elif kind == "file":
        import orjson

        store.open()  # its directory exists from the first use on (the constructor does no I/O)
        directory = store.directory
        for i in range(start, stop):
            (directory / f"{_task_id(i)}.json").write_bytes(orjson.dumps(lean_task(i)))
    else:
        _generate_sql(store, start, stop)


def _generate_sql(store: Any, start: int, stop: int) -> None:
    import orjson
    from django.db import connections, transaction

    connection = connections[store.using]
    columns = "id, context_id, state, task, created_at, updated_at, owner, version"

    def row(i: int) -> tuple[Any, ...]:
        task = lean_task(i)
        when = T0 + dt.timedelta(milliseconds=i)
        return (task["id"], task["contextId"], "completed", orjson.dumps(task).decode(), when, when, "", 3)

    chunk = 20_000
    with transaction.atomic(using=store.using), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            raw = cursor.cursor  # psycopg's own cursor: COPY
            with raw.copy(f"COPY stores_taskrecord ({columns}) FROM STDIN") as copy:
                for i in range(start, stop):
                    copy.write_row(row(i))
        else:
            sql = f"INSERT INTO stores_taskrecord ({columns}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            for first in range(start, stop, chunk):
                cursor.executemany(sql, [row(i) for i in range(first, min(stop, first + chunk))])
    if connection.vendor == "postgresql":  # as autovacuum would leave a table in use
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE stores_taskrecord")


# --- timing ----------------------------------------------------------------------------------


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_us": 1e6 * statistics.median(ordered),
        "p99_us": 1e6 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "n": len(ordered),
    }


def _time_calls(call: Any, bodies: list[bytes], budget: float) -> list[float]:
    """Run ``call(body)`` for each body until ``budget`` seconds are spent (at least 3)."""
    samples: list[float] = []
    deadline = time.perf_counter() + budget
    for body in bodies:
        started = time.perf_counter()
        call(body)
        samples.append(time.perf_counter() - started)
        if len(samples) >= 3 and time.perf_counter() > deadline:
            break
    return samples


def _rpc(method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def _worker(kind: str, sizes: list[int], quick: bool) -> None:
    """In the subprocess (site settings): grow, time, print one JSON line per size."""
    import django

    django.setup()
    import orjson

    from a2a.http import jsonrpc
    from a2a.protocol.model import ListParams
    from a2a.service.context import INTERNAL
    from a2a.service.page_tokens import seal, task_listing
    from stores.backends import get_task_store
    from stores.cursors import encode_cursor

    store = get_task_store()
    loop = asyncio.new_event_loop()

    def call(body: bytes) -> Any:
        answer = orjson.loads(loop.run_until_complete(jsonrpc.handle(body, None)))
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["result"]

    if kind == "memory":
        print(json.dumps({"memory_per_10k": _memory_per_10k()}), flush=True)
    have = 0
    budget = 1.0 if quick else 5.0
    for size in sizes:
        started = time.perf_counter()
        _generate(kind, store, have, size)
        if kind == "file":
            store._listing.rebuild()  # files written behind its back: as a new process sees them
        generated_s = time.perf_counter() - started
        have = size
        rng = random.Random(size)
        gets = [_rpc("GetTask", {"id": _task_id(rng.randrange(size))}) for _ in range(2000)]
        first = _rpc("ListTasks", {"pageSize": 50})
        middle = size // 2
        # the token a client walking the pages would hold there (sealed to its listing)
        token = seal(encode_cursor(_when(middle), _task_id(middle)), task_listing(ListParams(), INTERNAL))
        deep = _rpc("ListTasks", {"pageSize": 50, "pageToken": token})
        started = time.perf_counter()
        page = call(first)
        first_list_s = time.perf_counter() - started
        assert [t["id"] for t in page["tasks"][:2]] == [_task_id(size - 1), _task_id(size - 2)], page["tasks"][:2]
        deep_page = call(deep)
        assert deep_page["tasks"][0]["id"] == _task_id(middle - 1), deep_page["tasks"][0]["id"]
        result = {
            "store": kind,
            "tasks": size,
            "generate_s": generated_s,
            "first_list_s": first_list_s,
            **(_restart(store.directory) if kind == "file" else {}),
            "get": _percentiles(_time_calls(call, gets, budget)),
            "list_first": _percentiles(_time_calls(call, [first] * 200, budget)),
            "list_deep": _percentiles(_time_calls(call, [deep] * 200, budget)),
        }
        print(json.dumps(result), flush=True)


def _restart(directory: Path, repeat: int = 5) -> dict[str, float]:
    """The file store as a restarted process finds it (its index listed once before):
    a new store on the directory, its first ``list`` page, then later ones: right
    after it (``later_list_s``: the directory check may still run in the background)
    and once the index agrees with the directory (``settled_list_s``). Medians of
    ``repeat`` restarts (one is a single sample on a shared machine)."""
    from stores.base import TaskQuery
    from stores.file import FileTaskStore

    restarts: list[float] = []
    later: list[float] = []
    settled: list[float] = []
    cpu: dict[str, list[float]] = {"restart": [], "settled": []}

    def page(store: Any, samples: list[float], cpu_samples: list[float] | None = None) -> None:
        started, started_cpu = time.perf_counter(), time.thread_time()
        store.list(TaskQuery(page_size=50))
        samples.append(time.perf_counter() - started)
        if cpu_samples is not None:
            cpu_samples.append(time.thread_time() - started_cpu)

    for _ in range(repeat):
        store = FileTaskStore(directory, fsync=False, stale_temp_seconds=None)
        page(store, restarts, cpu["restart"])
        for _ in range(5):
            page(store, later)
        checked = getattr(store._listing, "checked", None)  # the code before has none
        if checked is not None:
            checked.wait(600)
        for _ in range(5):
            page(store, settled, cpu["settled"])
    return {
        "restart_list_s": statistics.median(restarts),
        "restart_list_max_s": max(restarts),
        "later_list_s": statistics.median(later),
        "settled_list_s": statistics.median(settled),
        # this thread's CPU time (the machine's load stretches the wall time, not this)
        "restart_list_cpu_s": statistics.median(cpu["restart"]),
        "settled_list_cpu_s": statistics.median(cpu["settled"]),
    }


def _memory_per_10k() -> dict[str, float]:
    """Bytes the memory store allocates for 10k tasks (tracemalloc: Python allocations
    made by the saves, the store's index included), beside the tasks' JSON size."""
    import gc
    import tracemalloc

    from bench.servers import taskdata
    from stores.memory import MemoryTaskStore

    out = {}
    for shape, make in (("lean", lean_task), ("small", lambda i: taskdata.task(f"mem-{i:07d}", "small"))):
        tasks = [make(i) for i in range(10_000)]
        gc.collect()
        tracemalloc.start()
        store = MemoryTaskStore()
        for t in tasks:
            store.save(t)
        gc.collect()
        out[f"{shape}_mb"] = tracemalloc.get_traced_memory()[0] / 2**20
        tracemalloc.stop()
        out[f"{shape}_json_mb"] = sum(len(json.dumps(t)) for t in tasks) / 2**20
        del store, tasks
    return out


def run_scale(stores: list[str], sizes: list[int], file_max: int, *, quick: bool = False) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    memory: dict[str, float] = {}
    for store in stores:
        store_sizes = [s for s in sizes if store != "file" or s <= file_max]
        if store == "file" and file_max not in store_sizes and file_max < max(sizes):
            store_sizes.append(file_max)
        with tempfile.TemporaryDirectory(prefix="a2a-scale-") as tmp:
            try:
                env = site_env(A2A_LOG_LEVEL="WARNING", **our_store_env(store, Path(tmp)))
            except Exception as exc:
                print(f"scale: skip {store}: {exc}", file=sys.stderr)
                continue
            if store.startswith("orm"):
                manage("migrate", "--noinput", env=env)
            command = [
                sys.executable,
                "-m",
                "bench.scale",
                store,
                *map(str, store_sizes),
                *(["--quick"] if quick else []),
            ]
            proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None
            for line in proc.stdout:
                row = json.loads(line)
                if "memory_per_10k" in row:
                    memory = row["memory_per_10k"]
                    continue
                row["store"] = store
                results.append(row)
                print(
                    f"scale {store:13} {row['tasks']:>8} tasks: generated in {row['generate_s']:.1f}s; "
                    f"GetTask p99 {row['get']['p99_us']:.0f} us; first page p99 {row['list_first']['p99_us']:.0f} us; "
                    f"deep page p99 {row['list_deep']['p99_us']:.0f} us; first list {row['first_list_s']:.2f}s"
                    + (
                        f"; after a restart {row['restart_list_s'] * 1000:.1f} ms"
                        f" (later {row['later_list_s'] * 1000:.2f} ms,"
                        f" settled {row['settled_list_s'] * 1000:.2f} ms; CPU"
                        f" {row['restart_list_cpu_s'] * 1000:.2f} vs {row['settled_list_cpu_s'] * 1000:.2f} ms)"
                        if "restart_list_s" in row
                        else ""
                    ),
                    file=sys.stderr,
                    flush=True,
                )
            if proc.wait():
                print(f"scale: the {store} worker failed ({proc.returncode})", file=sys.stderr)
    return {"rows": results, "memory_per_10k": memory, "growth": growth(results)}


def growth(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per store: p99 at its largest size over p99 at its smallest (10^3)."""
    out: dict[str, dict[str, Any]] = {}
    by_store: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_store.setdefault(r["store"], []).append(r)
    for store, group in by_store.items():
        group.sort(key=lambda r: r["tasks"])
        small, large = group[0], group[-1]
        if small is large:
            continue
        out[store] = {
            "smallest": small["tasks"],
            "largest": large["tasks"],
            **{key: large[key]["p99_us"] / small[key]["p99_us"] for key in ("get", "list_first", "list_deep")},
            "get_p99": large["get"]["p99_us"] / small["get"]["p99_us"],
        }
    return out


def markdown(scale: dict[str, Any]) -> str:
    lines = [
        "In process, the whole JSON-RPC path but HTTP; microseconds (p50 / p99).",
        "",
        "| store | tasks | GetTask | ListTasks first page | ListTasks deep page | first ListTasks | generated in |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in scale["rows"]:
        cells = [f"{r[k]['p50_us']:,.0f} / {r[k]['p99_us']:,.0f}" for k in ("get", "list_first", "list_deep")]
        lines.append(
            f"| {r['store']} | {r['tasks']:,} | "
            + " | ".join(cells)
            + f" | {r['first_list_s'] * 1000:,.0f} ms | {r['generate_s']:.1f} s |"
        )
    if scale["growth"]:
        lines += ["", "| store | sizes | GetTask p99 x | first page p99 x | deep page p99 x |", "|---|---|---|---|---|"]
        for store, g in scale["growth"].items():
            lines.append(
                f"| {store} | {g['smallest']:,} → {g['largest']:,} | {g['get']:.2f} | {g['list_first']:.2f} "
                f"| {g['list_deep']:.2f} |"
            )
    restarts = [r for r in scale["rows"] if "restart_list_s" in r]
    if restarts:
        lines += [
            "",
            "| file store | first page after a restart | a later page (right after; settled) | ratio to settled |",
            "|---|---|---|---|",
        ]
        for r in restarts:
            lines.append(
                f"| {r['tasks']:,} tasks | {r['restart_list_s'] * 1000:,.1f} ms | {r['later_list_s'] * 1000:,.2f} ms; "
                f"{r['settled_list_s'] * 1000:,.2f} ms | {r['restart_list_s'] / r['settled_list_s']:,.1f} |"
            )
    m = scale.get("memory_per_10k")
    if m:
        lines += [
            "",
            f"Memory store, 10k tasks: {m['lean_mb']:.1f} MB for lean tasks ({m['lean_json_mb']:.1f} MB of JSON), "
            f"{m['small_mb']:.1f} MB for ~1 KB tasks ({m['small_json_mb']:.1f} MB of JSON) (tracemalloc).",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--quick"]
    _worker(args[0], [int(a) for a in args[1:]], "--quick" in sys.argv)
