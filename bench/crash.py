"""Acknowledged tasks lost to ``kill -9`` under load, per durable store.

Runs ``tests/test_crash.py::test_kill_9_under_load_loses_nothing`` (the real server under
8 clients, killed at a random moment, restarted; ``rounds`` times) with
``A2A_CRASH_REPORT`` set, and reads back what it counted before its checks: kills,
tasks acknowledged to a client, and how many of those the store no longer has::

    python -m bench.crash --rounds 20 --stores file orm-sqlite orm-postgres

``orm-postgres`` needs ``A2A_TEST_POSTGRES_URL`` (the test makes a database of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/test_crash.py::test_kill_9_under_load_loses_nothing"


def run_crash(stores: list[str], rounds: int, seed: int = 20261201) -> dict[str, Any]:
    """One pytest run per store; its report line, plus whether every check passed."""
    out: list[dict[str, Any]] = []
    for store in stores:
        if store == "orm-postgres" and not os.environ.get("A2A_TEST_POSTGRES_URL"):
            print("crash: orm-postgres skipped (A2A_TEST_POSTGRES_URL is not set)", file=sys.stderr)
            continue
        with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as report:
            env = {
                **os.environ,
                "A2A_CRASH_STORES": store,
                "A2A_CRASH_ROUNDS": str(rounds),
                "A2A_CRASH_SEED": str(seed),
                "A2A_CRASH_REPORT": report.name,
            }
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{TEST}[{store}]"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
            lines = [json.loads(line) for line in report.read().splitlines() if line.strip()]
        row = lines[-1] if lines else {"store": store, "rounds": rounds, "kills": [], "acknowledged": 0, "lost": None}
        row["checks_passed"] = proc.returncode == 0
        if proc.returncode:
            row["failure"] = proc.stdout[-2000:]
        print(f"crash: {json.dumps(row)}", file=sys.stderr, flush=True)
        out.append(row)
    return {"stores": out}


def markdown(crash: dict[str, Any]) -> str:
    lines = [
        "| store | kill -9 rounds | tasks acknowledged | lost | every check of the test passed |",
        "|---|---|---|---|---|",
    ]
    for r in crash["stores"]:
        lines.append(
            f"| {r['store']} | {r['rounds']} | {r['acknowledged']} | {r['lost']} | "
            f"{'yes' if r['checks_passed'] else '**no**'} |"
        )
    return "\n".join(lines)


def problems(crash: dict[str, Any]) -> list[str]:
    return [
        f"crash {r['store']}: {r['lost']} lost, checks {'passed' if r['checks_passed'] else 'failed'}"
        for r in crash["stores"]
        if r["lost"] != 0 or not r["checks_passed"]
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--stores", nargs="+", default=["file", "orm-sqlite", "orm-postgres"])
    args = parser.parse_args()
    result = run_crash(args.stores, args.rounds)
    print(markdown(result))
    sys.exit(1 if problems(result) else 0)
