"""The benchmark table's pieces without running a server: the presets, the ratios the
targets read, the targets themselves, the load generator's open-file limit."""

from __future__ import annotations

import resource

import pytest

from bench import e2e, goals, loadgen, run


def test_the_table_preset_is_the_issues_table_and_options_override_it():
    args = run.parse_args(["--table"])
    assert (args.sections, args.dialects, args.clients) == (["e2e", "crash"], ["toolnexus", "v1.0"], [8, 32, 128, 512])
    assert (args.reps, args.seconds, args.quiet_timeout, args.name) == (3, 3.0, 3.0, "table")
    assert {"ours/memory", "direct/memory", "null", "toolnexus/file", "sdk/memory"} <= set(args.targets)
    assert run.parse_args(["--table", "--clients", "8", "--reps", "1"]).clients == [8]
    assert 512 in run.parse_args(["--quick"]).clients and 512 in run.parse_args([]).clients
    assert run.parse_args([]).quiet_timeout == 30.0
    with pytest.raises(SystemExit):
        run.parse_args(["--table", "--quick"])


def _row(target: str, clients: int, tasks: float, cpu: float, p99: float, errors: int = 0) -> dict:
    return {
        "rep": 1,
        "target": target,
        "dialect": "toolnexus",
        "clients": clients,
        "tasks_per_s": tasks,
        "server_cpu_ms_per_task": cpu,
        "p99_ms": p99,
        "errors": errors,
        "failed": 0,
        "lost": 0,
        "completed": 1,
        "error_samples": [],
    }


def _targets(rows: list[dict]) -> dict[tuple[str, str], dict]:
    e2e.add_ratios(rows)
    checks = goals.evaluate({"e2e": {"medians": e2e.medians(rows)}})
    return {(c["target"], c["where"]): c for c in checks}


def test_c512_holds_up_against_c32_within_a_second_and_the_direct_path_against_its_start():
    rows = [
        _row("ours/memory", 32, 500, 2.0, 100),
        _row("ours/memory", 512, 600, 2.2, 900),
        _row("direct/memory", 8, 700, 0.9, 30),
        _row("before-direct/memory", 8, 650, 1.0, 30),
    ]
    found = _targets(rows)
    assert found[("memory, default, tasks/s at C=512 ≥ C=32's", "toolnexus")]["value"] == pytest.approx(1.2)
    assert found[("memory, default, p99 at C=512 ≤ 1 s", "toolnexus")]["status"] == "met"
    assert found[("memory, default, errors at C=512", "toolnexus")]["status"] == "met"
    before = found[("direct, CPU/task ≤ 0.9x this round's start", "toolnexus C=8")]
    assert (before["value"], before["status"]) == (pytest.approx(0.9), "met")
    assert found[("memory, default, p99 at C=512 ≤ 1 s", "v1.0")]["status"] == "not measured"


def test_a_collapse_at_c512_misses_its_targets():
    rows = [_row("ours/memory", 32, 500, 2.0, 100), _row("ours/memory", 512, 300, 3.0, 2500, errors=2)]
    found = _targets(rows)
    for name in ("tasks/s at C=512 ≥ C=32's", "p99 at C=512 ≤ 1 s", "errors at C=512"):
        assert found[(f"memory, default, {name}", "toolnexus")]["status"] == "missed", name


def test_the_generator_raises_its_open_file_limit_for_c_clients(monkeypatch):
    set_to = []
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    monkeypatch.setattr(resource, "setrlimit", lambda _, limits: set_to.append(limits))
    loadgen.raise_file_limit(128)
    assert set_to == []  # 1024 is enough for 128
    loadgen.raise_file_limit(512)
    assert set_to == [(4096, 4096)]
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 1024))
    with pytest.raises(RuntimeError, match="ulimit -Hn"):
        loadgen.raise_file_limit(512)
