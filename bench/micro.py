"""Store micro-benchmarks: save (new), update and get ops/s, ~1 KB and ~64 KB tasks.

Our stores run in a subprocess of this venv with the site's settings (the ORM store
needs Django and a migrated database); the competitors' stores in their venvs
(``bench/servers/store_micro.py``). Each op is timed for at most ``seconds`` (or
until its tasks run out), one at a time from one thread: latency-bound, as one
request's store call is.

    python -m bench.micro --stores file orm-sqlite      # ops/s (ours only)
    python -m bench.micro --stores file --before /tmp/before --rounds 3
                                                        # ops/s of a checkout of the code before, same run
    python -m bench.micro --counts                      # system calls per file-store op (strace),
                                                        # queries per task on the ORM stores

``--before DIR`` runs the same worker from another checkout of this repository
(``git worktree add --detach /tmp/before <commit>``), alternating rounds with this
one, and reports each op's ratio round by round (the machine may be shared: the
ratios say more than the absolute figures). ``--counts`` is machine-independent:
each file-store op run ``N`` times under ``strace -f`` between two markers (the system
calls counted by name, divided by ``N``), and each ORM task's queries counted with
Django's ``CaptureQueriesContext`` (submitted, working, completed with an artifact,
then ``GetTask``), on SQLite and, with ``A2A_TEST_POSTGRES_URL``, PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.servers import taskdata  # noqa: E402
from bench.targets import SDK_PYTHON, SERVERS, TOOLNEXUS_PYTHON, our_store_env  # noqa: E402
from tests.server import manage, site_env  # noqa: E402

#: What a saved task survives, per store.
GUARANTEES = {
    "ours/memory": "none: process memory",
    "ours/file": "power loss: temp file fsynced, os.replace, directory fsynced",
    "ours/orm-sqlite": "process crash; a power loss may drop the last commits (WAL, synchronous=NORMAL)",
    "ours/orm-postgres": "power loss: PostgreSQL commit (WAL fsync)",
    "sdk/memory": "none: process memory",
    "sdk/sqlite": "power loss: SQLite rollback journal, synchronous=FULL (SQLAlchemy defaults)",
    "toolnexus/memory": "none: process memory",
    "toolnexus/file": "process crash only: temp file + os.replace, no fsync",
}


def _worker(store: str, directory: str, seconds: float) -> None:
    """In the subprocess: time our store ``store`` and print JSON lines (each op's
    ops/s and its process CPU per op). ``A2A_MICRO_CODE``: the checkout whose code
    (stores, app, site) is timed, by this same loop."""
    code = os.environ.get("A2A_MICRO_CODE")
    if code:
        sys.path.insert(0, code)
    import django

    django.setup()
    from stores.backends import resolve_store

    spec = {"memory": "memory", "file": f"file:{directory}/tasks"}.get(store, "orm")
    instance = resolve_store(spec)
    instance.save(taskdata.task("warm-up"))
    instance.get("warm-up")
    for shape in taskdata.SHAPES:
        tasks = [taskdata.task(f"{shape}-{i:07d}", shape) for i in range(20_000 if shape == "small" else 2_000)]
        done: dict[str, int] = {}
        for op in ("save", "update", "get"):
            n, started, cpu = 0, time.perf_counter(), time.process_time()
            deadline = started + seconds
            limit = len(tasks) if op == "save" else max(done.get("save", 1), 1)
            while n < limit and time.perf_counter() < deadline:
                t = tasks[n]
                if op == "get":
                    assert instance.get(t["id"]) is not None
                else:
                    instance.save(t)
                n += 1
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            done[op] = n
            row = {"store": f"ours/{store}", "shape": shape, "op": op, "ops": n, "ops_per_s": n / elapsed}
            print(json.dumps({**row, "cpu_us_per_op": cpu / max(n, 1) * 1e6}))


def _run(command: list[str], env: dict[str, str] | None, cwd: Path) -> list[dict[str, Any]]:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode:
        print(f"micro: {' '.join(command)} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return []
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def run_micro(stores: list[str], *, quick: bool = False, seconds: float | None = None) -> dict[str, Any]:
    seconds = seconds or (0.3 if quick else 3.0)
    rows: list[dict[str, Any]] = []
    for store in stores:
        with tempfile.TemporaryDirectory(prefix="a2a-micro-") as tmp:
            try:
                env = site_env(**our_store_env(store, Path(tmp)))
            except Exception as exc:
                print(f"micro: skip ours/{store}: {exc}", file=sys.stderr)
                continue
            if store.startswith("orm"):
                manage("migrate", "--noinput", env=env)
            rows += _run([sys.executable, "-m", "bench.micro", store, tmp, str(seconds)], env, ROOT)
    competitors = (
        []
        if quick
        else [
            (SDK_PYTHON, "sdk-memory"),
            (SDK_PYTHON, "sdk-sqlite"),
            (TOOLNEXUS_PYTHON, "toolnexus-memory"),
            (TOOLNEXUS_PYTHON, "toolnexus-file"),
        ]
    )
    for python, name in competitors:
        if not python.exists():
            print(f"micro: skip {name}: no {python.parent.parent.name}", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory(prefix="a2a-micro-") as tmp:
            for row in _run([str(python), "store_micro.py", name, tmp, str(seconds)], None, SERVERS):
                row["store"] = row["store"].replace("-", "/", 1)
                rows.append(row)
    for row in rows:
        row["guarantee"] = GUARANTEES.get(row["store"], "")
    return {"task_bytes": taskdata.sizes(), "rows": rows}


def markdown(micro: dict[str, Any]) -> str:
    sizes = micro["task_bytes"]
    table: dict[str, dict[tuple[str, str], float]] = {}
    for r in micro["rows"]:
        table.setdefault(r["store"], {})[(r["shape"], r["op"])] = r["ops_per_s"]
    head = [f"{op} {shape}" for shape in taskdata.SHAPES for op in ("save", "update", "get")]
    lines = [
        f"Tasks: small = {sizes['small']} bytes of JSON, large = {sizes['large']} bytes. Ops/s, one caller.",
        "",
        "| store | " + " | ".join(head) + " | survives |",
        "|---|" + "---|" * len(head) + "---|",
    ]
    for store, ops in table.items():
        cells = [ops.get((shape, op)) for shape in taskdata.SHAPES for op in ("save", "update", "get")]
        lines.append(
            f"| {store} | "
            + " | ".join("-" if c is None else f"{c:,.0f}" for c in cells)
            + f" | {GUARANTEES.get(store, '')} |"
        )
    return "\n".join(lines)


# --- before / after in one run ----------------------------------------------------------


def compare(stores: list[str], before: Path, *, seconds: float, rounds: int) -> list[dict[str, Any]]:
    """Each op's ops/s and CPU per op, this checkout's code against ``before``'s (another
    checkout; the same timing loop, this one's, runs both), in alternating rounds; the
    ratios after / before taken round by round, then the median."""
    measured: dict[tuple[str, str, str], dict[str, list[tuple[float, float]]]] = {}
    for _ in range(rounds):
        for side, root in (("before", before), ("after", ROOT)):
            for store in stores:
                with tempfile.TemporaryDirectory(prefix="a2a-micro-") as tmp:
                    env = {**site_env(**our_store_env(store, Path(tmp))), "A2A_MICRO_CODE": str(root)}
                    if store.startswith("orm"):
                        manage("migrate", "--noinput", env={**env, "PYTHONPATH": str(root)})
                    for row in _run([sys.executable, "-m", "bench.micro", store, tmp, str(seconds)], env, ROOT):
                        key = (row["store"], row["shape"], row["op"])
                        found = measured.setdefault(key, {"before": [], "after": []})[side]
                        found.append((row["ops_per_s"], row["cpu_us_per_op"]))
    rows = []
    for (store, shape, op), sides in measured.items():
        pairs = list(zip(sides["after"], sides["before"], strict=False))
        row: dict[str, Any] = {"store": store, "shape": shape, "op": op}
        for i, what in enumerate(("ops_per_s", "cpu_us_per_op")):
            for side in ("before", "after"):
                row[f"{side}_{what}"] = statistics.median(m[i] for m in sides[side])
            row[f"{what}_after_over_before"] = statistics.median(a[i] / b[i] for a, b in pairs if b[i])
        rows.append(row)
    return rows


# --- counts: system calls per file-store op, queries per ORM task ------------------------

#: The marker a counted stretch starts and ends with (a system call nothing else makes).
_MARK = "getppid"
#: The file-store ops counted: a new task (compare-and-swap at version 0, as SendMessage
#: creates it), an update (compare-and-swap at its version, as each transition saves),
#: a read (GetTask, from a worker thread).
FILE_OPS = ("create", "update", "get")


def _syscall_worker(op: str, directory: str, n: int) -> None:
    """In a subprocess under strace: ``n`` file-store ops of kind ``op``, between markers."""
    import django

    django.setup()
    from stores.file import FileTaskStore

    store = FileTaskStore(directory)
    warm = taskdata.task("warm-up")
    store.save(warm, expected_version=0)
    store.save({**warm, "_version": 2}, expected_version=1)
    store.get("warm-up")
    tasks = [taskdata.task(f"t{i:06d}") for i in range(n)]
    if op != "create":
        for task in tasks:
            store.save(task, expected_version=0)
    os.getppid()
    for task in tasks:
        if op == "create":
            store.save(task, expected_version=0)
        elif op == "update":
            store.save({**task, "_version": 2}, expected_version=1)
        else:
            assert store.get(task["id"]) is not None
    os.getppid()


def count_syscalls(op: str, n: int = 200) -> dict[str, Any]:
    """The system calls of one file-store ``op`` (mean over ``n``, by name): strace."""
    with tempfile.TemporaryDirectory(prefix="a2a-syscalls-") as tmp:
        trace = Path(tmp) / "trace"
        command = ["strace", "-f", "-qq", "-o", str(trace), sys.executable, "-m", "bench.micro"]
        env = site_env(**our_store_env("file", Path(tmp)))
        subprocess.run([*command, "--syscall-worker", op, f"{tmp}/tasks", str(n)], env=env, cwd=ROOT, check=True)
        names: Counter[str] = Counter()
        inside = False
        for line in trace.read_text().splitlines():
            call = line.split(None, 1)[1] if " " in line else line
            name = call.split("(", 1)[0]
            if name == _MARK:
                if inside:
                    break
                inside = True
            elif inside and "(" in call and not call.startswith(("+++", "---", "<...")):
                names[name] += 1
    per_op = {name: count / n for name, count in names.most_common()}
    return {"op": op, "n": n, "syscalls_per_op": sum(names.values()) / n, "by_name": per_op}


def _query_worker() -> None:
    """In a subprocess: the queries of one task's life on the ORM store (printed as JSON)."""
    import django

    django.setup()
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    from a2a.core import lifecycle
    from a2a.protocol.model import set_status
    from stores.backends import resolve_store

    store = resolve_store("orm")
    connection = connections[store.using]

    def artifact(task: dict) -> dict:
        task["artifacts"] = [{"artifactId": "a1", "parts": [{"kind": "text", "text": "DONE"}]}]
        return set_status(task, "completed")

    steps: list[tuple[str, Any]] = [
        ("submitted", lambda t: lifecycle.create_sync(store, t)),
        ("working", lambda t: lifecycle.transition_sync(store, t["id"], lambda s: set_status(s, "working"))),
        ("completed", lambda t: lifecycle.transition_sync(store, t["id"], artifact)),
        ("GetTask", lambda t: store.get(t["id"])),
    ]
    for round_ in range(2):  # the first warms the connection up; the second is counted
        task = taskdata.task(f"q{round_}-{os.urandom(8).hex()}", state="submitted")  # the database may be reused
        task.pop("_version")
        counts = {}
        for name, step in steps:
            with CaptureQueriesContext(connection) as queries:
                step(task)
            counts[name] = [q["sql"] for q in queries.captured_queries]
    print(json.dumps({"vendor": connection.vendor, "queries": counts}))


def count_queries(store: str) -> dict[str, Any]:
    """The queries of one task's life on ``store`` (orm-sqlite, orm-postgres)."""
    with tempfile.TemporaryDirectory(prefix="a2a-queries-") as tmp:
        own = os.environ.get("A2A_TEST_POSTGRES_URL") if store == "orm-postgres" else None
        env = site_env(**our_store_env("orm-sqlite" if own else store, Path(tmp)))
        if own:  # a database of one's own (our_store_env's is shared by the suite)
            env["DATABASE_URL"] = own
        manage("migrate", "--noinput", env=env)
        done = subprocess.run(
            [sys.executable, "-m", "bench.micro", "--query-worker"], env=env, cwd=ROOT, capture_output=True, text=True
        )
        if done.returncode:
            raise RuntimeError(done.stderr[-2000:])
        found = json.loads(done.stdout.splitlines()[-1])
    steps = found["queries"]
    return {
        "store": store,
        "queries": {name: len(sql) for name, sql in steps.items()},
        "per_task": sum(len(sql) for sql in steps.values()),
        "sql": steps,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", nargs="+", default=["memory", "file", "orm-sqlite"])
    parser.add_argument("--seconds", type=float, default=3.0, help="each op's window")
    parser.add_argument("--before", type=Path, default=None, help="a checkout of the code before: a ratio per op")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds with --before")
    parser.add_argument("--counts", action="store_true", help="system calls (file) and queries (ORM) per op")
    parser.add_argument("--ops", type=int, default=200, help="ops traced per count")
    parser.add_argument("--json", type=Path, default=None, help="write the results here too")
    parser.add_argument("--syscall-worker", nargs=3, metavar=("OP", "DIR", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--query-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.syscall_worker:
        op, directory, n = args.syscall_worker
        return _syscall_worker(op, directory, int(n))
    if args.query_worker:
        return _query_worker()
    results: dict[str, Any] = {}
    if args.counts:
        results["syscalls"] = [count_syscalls(op, args.ops) for op in FILE_OPS]
        for row in results["syscalls"]:
            top = ", ".join(f"{name} {count:g}" for name, count in row["by_name"].items())
            print(f"file {row['op']:<7} {row['syscalls_per_op']:5.1f} system calls: {top}", flush=True)
        orm = [s for s in args.stores if s.startswith("orm")] or ["orm-sqlite"]
        results["queries"] = [count_queries(store) for store in orm]
        for row in results["queries"]:
            steps = ", ".join(f"{name} {n}" for name, n in row["queries"].items())
            print(f"{row['store']:<12} {row['per_task']} queries a task: {steps}", flush=True)
    elif args.before is not None:
        results["compare"] = compare(args.stores, args.before, seconds=args.seconds, rounds=args.rounds)
        for row in results["compare"]:
            print(
                f"{row['store']:<18} {row['shape']:<5} {row['op']:<6} ops/s {row['before_ops_per_s']:9,.0f} -> "
                f"{row['after_ops_per_s']:9,.0f} (x{row['ops_per_s_after_over_before']:.2f}), CPU/op "
                f"{row['before_cpu_us_per_op']:7,.0f} -> {row['after_cpu_us_per_op']:7,.0f} us "
                f"(x{row['cpu_us_per_op_after_over_before']:.2f})",
                flush=True,
            )
    else:
        results["micro"] = run_micro(args.stores, quick=args.seconds < 1, seconds=args.seconds)
        print(markdown(results["micro"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and not sys.argv[1].startswith("-"):  # the worker: python -m bench.micro STORE DIR SECONDS
        _worker(sys.argv[1], sys.argv[2], float(sys.argv[3]))
    else:
        main()
