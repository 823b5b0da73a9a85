"""The issue's targets, checked against one run's medians: met, missed, or not measured."""

from __future__ import annotations

from typing import Any


def _e2e(results: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(r["target"], r["dialect"], r["clients"]): r for r in results.get("e2e", {}).get("medians", [])}


def _check(name: str, detail: str, value: float | None, bound: float, *, at_most: bool = False) -> dict[str, Any]:
    status = "not measured"
    if value is not None:
        status = "met" if (value <= bound if at_most else value >= bound) else "missed"
    return {
        "target": name,
        "where": detail,
        "value": value,
        "bound": f"{'≤' if at_most else '≥'} {bound:g}",
        "status": status,
    }


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 34's targets on the e2e medians (each a ratio of two servers measured in the
    same repetition, dialect and C), the kill -9 rounds, and the scale checks of earlier
    issues when that section ran."""
    e2e = _e2e(results)

    def row(target: str, dialect: str, c: int) -> dict[str, Any]:
        return e2e.get((target, dialect, c), {})

    checks = [*_throughput(row), *_cpu_and_latency(row), *_high_concurrency(row)]
    for run in results.get("crash", {}).get("stores", []):
        checks.append(
            _check(
                f"acknowledged tasks lost after {run['rounds']} kill -9 under load",
                f"{run['store']} ({run['acknowledged']} acknowledged)",
                run["lost"],
                0,
                at_most=True,
            )
        )
    return checks + _scale(results.get("scale", {}))


def _throughput(row: Any) -> list[dict[str, Any]]:
    checks = []
    for dialect in ("toolnexus", "v0.3", "v1.0"):
        for c in (8, 32):
            r = row("ours/memory", dialect, c)
            checks.append(_check("memory, default, tasks/s ≥ 0.9x direct", f"{dialect} C={c}", r.get("x_direct"), 0.9))
    for c in (8, 32):
        r = row("ours/file", "toolnexus", c)
        checks.append(
            _check("file, default, tasks/s ≥ 1.0x toolnexus file", f"toolnexus C={c}", r.get("x_toolnexus_file"), 1.0)
        )
    for dialect in ("toolnexus", "v0.3", "v1.0"):
        r = row("ours/orm-postgres", dialect, 8)
        checks.append(
            _check(
                "ORM PostgreSQL, default, tasks/s ≥ 0.5x memory direct",
                f"{dialect} C=8",
                r.get("x_direct_memory"),
                0.5,
            )
        )
    return checks


def _cpu_and_latency(row: Any) -> list[dict[str, Any]]:
    checks = []
    for dialect in ("v0.3", "v1.0"):  # (the SDK does not speak the toolnexus dialect)
        r = row("ours/memory", dialect, 8)
        checks.append(
            _check(
                "memory, default, CPU/task ≤ 0.4x SDK", f"{dialect} C=8", r.get("cpu_x_sdk_memory"), 0.4, at_most=True
            )
        )
    for dialect in ("toolnexus", "v0.3", "v1.0"):  # against before-direct/memory (A2A_BENCH_BEFORE)
        r = row("direct/memory", dialect, 8)
        checks.append(
            _check(
                "direct, CPU/task ≤ 0.9x this round's start", f"{dialect} C=8", r.get("cpu_x_before"), 0.9, at_most=True
            )
        )
    for dialect in ("v0.3", "v1.0"):
        r = row("ours/memory", dialect, 32)
        checks.append(
            _check("memory, default, p99 ≤ 0.3x SDK", f"{dialect} C=32", r.get("p99_x_sdk_memory"), 0.3, at_most=True)
        )
    return checks


def _high_concurrency(row: Any) -> list[dict[str, Any]]:
    """p99 at C=512 within a second, no error, and at least C=32's throughput (no collapse)."""
    checks = []
    for dialect in ("toolnexus", "v0.3", "v1.0"):
        r = row("ours/memory", dialect, 512)
        p99 = r.get("p99_ms")
        checks.append(
            _check(
                "memory, default, p99 at C=512 ≤ 1 s",
                dialect,
                p99 / 1000 if p99 is not None else None,
                1.0,
                at_most=True,
            )
        )
        checks.append(
            _check("memory, default, errors at C=512", dialect, r["errors"] + r["lost"] if r else None, 0, at_most=True)
        )
        checks.append(_check("memory, default, tasks/s at C=512 ≥ C=32's", dialect, r.get("x_c32"), 1.0))
    return checks


def _scale(scale: dict[str, Any]) -> list[dict[str, Any]]:
    """Earlier issues' scale targets (issue 5, 21), when the scale section ran."""
    checks = []
    restarts = [r for r in scale.get("rows", []) if "restart_list_s" in r]
    if restarts:
        largest = max(restarts, key=lambda r: r["tasks"])
        checks.append(
            _check(
                "first ListTasks after a restart ≤ 2x a later one",
                # a later page once the restart's background directory check is over (the
                # steady state); the page right after the first is in the JSON too
                f"file ({largest['tasks']} tasks)",
                largest["restart_list_s"] / largest.get("settled_list_s", largest["later_list_s"]),
                2.0,
                at_most=True,
            )
        )
    for store, growth in scale.get("growth", {}).items():
        checks.append(
            _check(
                "GetTask p99 at the largest size ≤ 2x at 10^3",
                f"{store} ({growth['largest']} tasks)",
                growth.get("get_p99"),
                2.0,
                at_most=True,
            )
        )
        for page in ("list_first", "list_deep"):
            checks.append(
                _check(
                    f"ListTasks {page.split('_')[1]} page ≤ 3x at 10^3",
                    f"{store} ({growth['largest']} tasks)",
                    growth.get(page),
                    3.0,
                    at_most=True,
                )
            )
    return checks


def markdown(checks: list[dict[str, Any]]) -> str:
    lines = ["| target | where | measured | bound | status |", "|---|---|---|---|---|"]
    for c in checks:
        value = "-" if c["value"] is None else f"{c['value']:.2f}"
        mark = {"met": "met", "missed": "**missed**"}.get(c["status"], c["status"])
        lines.append(f"| {c['target']} | {c['where']} | {value} | {c['bound']} | {mark} |")
    return "\n".join(lines)
