"""Store micro-benchmarks: save (new), update and get ops/s, ~1 KB and ~64 KB tasks.

Our stores run in a subprocess of this venv with the site's settings (the ORM store
needs Django and a migrated database); the competitors' stores in their venvs
(``bench/servers/store_micro.py``). Each op is timed for at most ``seconds`` (or
until its tasks run out), one at a time from one thread: latency-bound, as one
request's store call is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
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
    """In the subprocess: time our store ``store`` and print JSON lines."""
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
            n, started = 0, time.perf_counter()
            deadline = started + seconds
            limit = len(tasks) if op == "save" else max(done.get("save", 1), 1)
            while n < limit and time.perf_counter() < deadline:
                t = tasks[n]
                if op == "get":
                    assert instance.get(t["id"]) is not None
                else:
                    instance.save(t)
                n += 1
            elapsed = time.perf_counter() - started
            done[op] = n
            print(json.dumps({"store": f"ours/{store}", "shape": shape, "op": op, "ops": n, "ops_per_s": n / elapsed}))


def _run(command: list[str], env: dict[str, str] | None, cwd: Path) -> list[dict[str, Any]]:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode:
        print(f"micro: {' '.join(command)} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return []
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def run_micro(stores: list[str], *, quick: bool = False) -> dict[str, Any]:
    seconds = 0.3 if quick else 3.0
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


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2], float(sys.argv[3]))
