"""The benchmark suite's smoke run (``python -m bench.run --quick``): every section runs,
against our memory and file stores and the null server, and nothing is lost. The
numbers are never checked here (CI machines vary); bench/README.md has them.

The competitors (a2a-sdk, toolnexus) are left out: their virtualenvs take minutes to
build (bench/setup-venvs.sh), longer than this whole run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_the_quick_suite_runs_and_loses_nothing(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,  # a guard against a hang: the run takes ~1.5 min, longer on a busy machine (C=512)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "quick.json").read_text())

    e2e = results["e2e"]["medians"]
    assert {r["target"] for r in e2e} == {"ours/memory", "ours/file", "null"}
    assert {r["dialect"] for r in e2e} == {"toolnexus", "v0.3", "v1.0"}
    assert {r["clients"] for r in e2e} == {8, 512}  # C=512: the generator drives it, the server holds
    for row in e2e:
        where = f"{row['target']} {row['dialect']} C={row['clients']}"
        assert row["completed"] > 0, where
        assert (row["errors"], row["failed"], row["lost"]) == (0, 0, 0), (where, row["error_samples"])

    assert {r["store"] for r in results["micro"]["rows"]} == {"ours/memory", "ours/file"}
    assert {r["store"] for r in results["scale"]["rows"]} == {"memory", "file"}
    for row in results["stream"]["rows"]:
        assert row["events"] == row["subscribers"] * row["events_each"], row
        assert (row["errors"], row["incomplete"]) == (0, 0), row
    [crash] = results["crash"]["stores"]  # the file store, 2 rounds of kill -9
    assert (crash["store"], crash["rounds"], crash["lost"], crash["checks_passed"]) == ("file", 2, 0, True), crash
    assert crash["acknowledged"] > 0 and len(crash["kills"]) == 2, crash
    assert "acknowledged tasks lost after 2 kill -9 under load" in {t["target"] for t in results["targets"]}
    assert results["targets"], "the targets table is always written"
    assert (tmp_path / "quick.md").read_text().startswith("# A2A benchmark suite: quick")


def test_the_event_backends_bench_runs_and_loses_nothing(tmp_path):
    """bench/events.py, tiny: memory, Redis and (when configured) PostgreSQL; it exits
    non-zero when a stream missed an event."""
    tiny = ["--publish", "200", "--events", "20", "--streams", "2", "--reps", "1", "--out", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "bench.events", *tiny],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "events.json").read_text())["results"]
    assert {"memory", "redis"} <= set(results)
    for name, result in results.items():
        assert result["latency"]["events"] == result["latency"]["expected"] == 40, name
        assert result["publish"]["caller_us"] > 0, name
