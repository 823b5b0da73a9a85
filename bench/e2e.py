"""The end-to-end task loop, side by side: every target, dialect and C, repeated.

Repetitions are outermost (each repetition starts every server afresh, on an empty
store) so the ratios of one repetition compare servers measured minutes apart, not
hours. Each server gets a short warm-up before its first measured window.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.loadgen import measure
from bench.targets import TARGETS

NUMERIC = (
    "tasks_per_s",
    "gets_per_s",
    "requests_per_s",
    "p50_ms",
    "p99_ms",
    "server_cpu_ms_per_task",
    "server_cpu_util",
    "generator_cpu_s",
    "generator_cpu_util",
    "background_cpu",
    "rss_before_mb",
    "rss_after_mb",
)
#: The reference each target's throughput is divided by (same repetition, dialect, C).
REFERENCES = {"x_sdk_memory": "sdk/memory", "x_null": "null", "x_ours_memory": "ours/memory"}
#: Our targets' counterparts from another checkout (A2A_BENCH_BEFORE), for ``x_before``.
BEFORE = {"ours": "before", "direct": "before-direct"}


def run_e2e(
    targets: list[str],
    dialects: list[str],
    clients: list[int],
    seconds: float,
    reps: int,
    warmup: float,
    *,
    quiet: float = 0.0,
) -> list[dict[str, Any]]:
    """Every measured window, as a row (``rep``, ``target``, ``dialect``, ``clients``, figures).
    ``quiet``: before each window, wait up to that many seconds for the machine to be quiet
    (``loadgen.wait_for_quiet``); 0, not at all."""
    rows: list[dict[str, Any]] = []
    for rep in range(1, reps + 1):
        for name in run_order(targets, rep):
            target = TARGETS[name]
            missing = target.missing()
            if missing:
                print(f"skip {name}: {missing}", file=sys.stderr, flush=True)
                continue
            with tempfile.TemporaryDirectory(prefix="a2a-bench-") as tmp, target.running(Path(tmp)) as base:
                for dialect in [d for d in dialects if d in target.dialects]:
                    if warmup:
                        measure(base, base.pid, path=target.path, dialect=dialect, clients=8, seconds=warmup)
                    for c in clients:
                        row = measure(
                            base, base.pid, path=target.path, dialect=dialect, clients=c, seconds=seconds, quiet=quiet
                        )
                        row.update(rep=rep, target=name, store=target.store, dialect=dialect, clients=c)
                        rows.append(row)
                        print(
                            f"rep {rep} {name:18} {dialect:9} C={c:<3} {row['tasks_per_s']:8.1f} tasks/s "
                            f"p50 {fmt(row['p50_ms'])} p99 {fmt(row['p99_ms'])} ms "
                            f"cpu {fmt(row['server_cpu_ms_per_task'], '.2f')} ms/task "
                            f"errors {row['errors']} lost {row['lost']} background {row['background_cpu']:.2f}",
                            file=sys.stderr,
                            flush=True,
                        )
    add_ratios(rows)
    return rows


def run_order(targets: list[str], rep: int) -> list[str]:
    """The servers of repetition ``rep`` in the order they run: as given, reversed in every
    other repetition. What one server leaves behind weighs on the next: a file store's
    saves free inodes that ext4 without a journal walks past at each allocation for
    minutes (docs/stores.md), so the second of two file-writing servers pays for the
    first; reversed, each of them runs first in some repetition."""
    return list(targets) if rep % 2 else list(reversed(targets))


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """Each row's throughput, p99 and CPU per task relative to the references measured in
    the same repetition, dialect and C (None where the reference did not run)."""
    index = {(r["rep"], r["target"], r["dialect"], r["clients"]): r for r in rows}
    for r in rows:
        for key, ref_name in REFERENCES.items():
            if key == "x_ours_memory" and r["target"].startswith("before/"):
                ref_name = "before/memory"  # an earlier commit's stores against its own memory store
            ref = index.get((r["rep"], ref_name, r["dialect"], r["clients"]))
            r[key] = _ratio(r["tasks_per_s"], ref["tasks_per_s"]) if ref else None
            if key == "x_sdk_memory":
                r["p99_x_sdk_memory"] = _ratio(r["p99_ms"], ref["p99_ms"]) if ref else None
                r["cpu_x_sdk_memory"] = (
                    _ratio(r["server_cpu_ms_per_task"], ref["server_cpu_ms_per_task"]) if ref else None
                )
        if r["target"].startswith("ours/"):  # the default path against the direct one
            direct = index.get((r["rep"], r["target"].replace("ours/", "direct/", 1), r["dialect"], r["clients"]))
            r["x_direct"] = _ratio(r["tasks_per_s"], direct["tasks_per_s"]) if direct else None
        direct_memory = index.get((r["rep"], "direct/memory", r["dialect"], r["clients"]))
        r["x_direct_memory"] = _ratio(r["tasks_per_s"], direct_memory["tasks_per_s"]) if direct_memory else None
        path, _, store = r["target"].partition("/")
        before = index.get((r["rep"], f"{BEFORE.get(path)}/{store}", r["dialect"], r["clients"]))
        r["x_before"] = _ratio(r["tasks_per_s"], before["tasks_per_s"]) if before else None
        r["cpu_x_before"] = _ratio(r["server_cpu_ms_per_task"], before["server_cpu_ms_per_task"]) if before else None
        at_32 = index.get((r["rep"], r["target"], r["dialect"], 32))  # does it hold up past C=32?
        r["x_c32"] = _ratio(r["tasks_per_s"], at_32["tasks_per_s"]) if at_32 and r["clients"] > 32 else None
        tn = index.get((r["rep"], "toolnexus/file", "toolnexus", r["clients"]))
        r["x_toolnexus_file"] = _ratio(r["tasks_per_s"], tn["tasks_per_s"]) if tn else None
        sdk_sqlite = index.get((r["rep"], "sdk/sqlite", r["dialect"], r["clients"]))
        r["x_sdk_sqlite"] = _ratio(r["tasks_per_s"], sdk_sqlite["tasks_per_s"]) if sdk_sqlite else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (target, dialect, C): the median of each figure and ratio over the
    repetitions; errors, failed and lost summed."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["target"], r["dialect"], r["clients"]), []).append(r)
    out = []
    for (target, dialect, c), group in groups.items():
        row: dict[str, Any] = {"target": target, "dialect": dialect, "clients": c, "reps": len(group)}
        ratio_keys = [k for k in group[0] if k.startswith(("x_", "p99_x", "cpu_x"))]
        for key in (*NUMERIC, *ratio_keys):
            values = [g[key] for g in group if g.get(key) is not None]
            row[key] = statistics.median(values) if values else None
        for key in ("completed", "errors", "failed", "lost"):
            row[key] = sum(g[key] for g in group)
        row["error_samples"] = [s for g in group for s in g["error_samples"]][:5]
        out.append(row)
    return out


def fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def markdown(summary: list[dict[str, Any]]) -> str:
    lines = [
        "| server | dialect | C | tasks/s | x direct | x SDK mem | x null | x ours mem | x toolnexus file | x before "
        "| p50 ms | p99 ms | GetTask/s "
        "| CPU ms/task | CPU x before | server CPU | generator CPU | background CPU | RSS MB before→after "
        "| errors | lost |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {name: i for i, name in enumerate(TARGETS)}
    dialect_order = {"toolnexus": 0, "v0.3": 1, "v1.0": 2}
    for r in sorted(summary, key=lambda r: (dialect_order[r["dialect"]], r["clients"], order[r["target"]])):
        lines.append(
            f"| {r['target']} | {r['dialect']} | {r['clients']} | {fmt(r['tasks_per_s'])} "
            f"| {fmt(r.get('x_direct'), '.2f')} | {fmt(r['x_sdk_memory'], '.2f')} | {fmt(r['x_null'], '.2f')} "
            f"| {fmt(r['x_ours_memory'], '.2f')} "
            f"| {fmt(r.get('x_toolnexus_file'), '.2f')} | {fmt(r.get('x_before'), '.2f')} "
            f"| {fmt(r['p50_ms'])} | {fmt(r['p99_ms'])} | {fmt(r['gets_per_s'])} "
            f"| {fmt(r['server_cpu_ms_per_task'], '.2f')} | {fmt(r.get('cpu_x_before'), '.2f')} "
            f"| {fmt(r['server_cpu_util'], '.2f')} "
            f"| {fmt(r['generator_cpu_util'], '.2f')} | {fmt(r['background_cpu'], '.2f')} "
            f"| {fmt(r['rss_before_mb'], '.0f')}→{fmt(r['rss_after_mb'], '.0f')} | {r['errors']} | {r['lost']} |"
        )
    return "\n".join(lines)
