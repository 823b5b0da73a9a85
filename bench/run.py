"""The benchmark suite in one command (bench/README.md).

    python -m bench.run --table          # issue 34's table: default, direct, the anchors, C=8..512 (~30 min)
    python -m bench.run                  # everything: e2e, micro, stream, crash, scale (~2 h)
    python -m bench.run --quick          # a smoke run: ours + null, short windows (~1 min)
    python -m bench.run --sections e2e --targets ours/memory sdk/memory null --clients 8

Results: ``bench/results/<name>.json`` (every measured window, the medians, the
targets) and ``bench/results/<name>.md`` (the tables); ``<name>`` is ``suite`` or
``quick`` unless ``--name`` says otherwise. Exits non-zero when any run lost a task
or had an error (the targets are reported, never enforced).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import e2e  # noqa: E402
from bench.targets import TARGETS  # noqa: E402

SECTIONS = ("e2e", "micro", "scale", "stream", "crash")
QUICK_TARGETS = ["ours/memory", "ours/file", "null"]
#: The table's servers: ours on both paths, the anchors, and this round's start when
#: A2A_BENCH_BEFORE names a checkout of it.
TABLE_TARGETS = [
    *("ours/memory", "direct/memory", "ours/file", "direct/file", "ours/file-atomic", "ours/orm-postgres"),
    *("null", "toolnexus/memory", "toolnexus/file", "sdk/memory"),
]
TABLE_BEFORE = ["before/memory", "before-direct/memory"]


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    preset = parser.add_mutually_exclusive_group()
    preset.add_argument("--quick", action="store_true", help="a smoke run: few targets, short windows, one rep")
    preset.add_argument(
        "--table",
        action="store_true",
        help="issue 34's table: e2e of TABLE_TARGETS (and before/ with A2A_BENCH_BEFORE) in the toolnexus and "
        "v1.0 dialects at C=8, 32, 128, 512, 3 reps of 3 s, then 20 kill -9 rounds of file and ORM PostgreSQL",
    )
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=None)
    parser.add_argument("--targets", nargs="+", choices=list(TARGETS), default=None)
    parser.add_argument("--dialects", nargs="+", choices=["toolnexus", "v0.3", "v1.0"], default=None)
    parser.add_argument("--clients", type=int, nargs="+", default=None)
    parser.add_argument("--seconds", type=float, default=None, help="window of each e2e measurement")
    parser.add_argument("--reps", type=int, default=None, help="repetitions of the e2e runs (medians reported)")
    parser.add_argument("--warmup", type=float, default=None, help="seconds of warm-up per server and dialect")
    parser.add_argument(
        "--quiet",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="wait for the machine to be quiet before each e2e window (default: on, off with --quick)",
    )
    parser.add_argument(
        "--quiet-timeout",
        type=float,
        default=None,
        help="longest wait for a quiet machine before each e2e window, in seconds (default 30; --table: 3)",
    )
    parser.add_argument("--scale-sizes", type=int, nargs="+", default=None, help="task counts of the scale runs")
    parser.add_argument("--file-scale-max", type=int, default=None, help="largest task count for the file store")
    parser.add_argument("--stores", nargs="+", default=None, help="our stores for micro/scale/stream/crash")
    parser.add_argument("--crash-rounds", type=int, default=None, help="kill -9 rounds per durable store")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = (
        _TABLE
        if args.table
        else {
            "sections": list(SECTIONS),
            "targets": QUICK_TARGETS if quick else list(TARGETS),
            "dialects": ["toolnexus", "v0.3", "v1.0"],
            "clients": [8, 512] if quick else [1, 8, 32, 128, 512],
            "seconds": 1.0 if quick else 5.0,
            "reps": 1 if quick else 3,
            "warmup": 0.3 if quick else 1.0,
            "quiet": not quick,
            "scale_sizes": [1000] if quick else [1000, 100_000, 1_000_000],
            "file_scale_max": 1000 if quick else 1_000_000,
            "stores": ["memory", "file"] if quick else ["memory", "file", "orm-sqlite", "orm-postgres"],
            "crash_rounds": 2 if quick else 20,
            "name": "quick" if quick else "suite",
            "quiet_timeout": 30.0,
        }
    )
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


_TABLE: dict[str, Any] = {
    "sections": ["e2e", "crash"],
    "targets": TABLE_TARGETS + (TABLE_BEFORE if os.environ.get("A2A_BENCH_BEFORE") else []),
    "dialects": ["toolnexus", "v1.0"],  # ours against toolnexus, and against the SDK
    "clients": [8, 32, 128, 512],
    "seconds": 3.0,
    "reps": 3,
    "warmup": 1.0,
    "quiet": True,
    "quiet_timeout": 3.0,  # a bound on the whole run's length: the background column says what it was
    "stores": ["file", "orm-postgres"],
    "crash_rounds": 20,
    "name": "table",
    "scale_sizes": [],
    "file_scale_max": 0,
}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, Any] = {"machine": machine(), "args": {k: str(v) for k, v in vars(args).items()}}
    markdown = [f"# A2A benchmark suite: {args.name}", "", _machine_line(results["machine"]), ""]
    problems: list[str] = []
    started = time.monotonic()

    def write() -> str:
        """The results so far, targets included: a section that fails later (an hour
        into a full run) leaves the earlier ones on disk."""
        from bench import goals

        results["targets"] = goals.evaluate(results)
        text = "\n".join([*markdown[:4], "## Targets", "", goals.markdown(results["targets"]), "", *markdown[4:]])
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=2, default=str))
        (args.out / f"{args.name}.md").write_text(text + "\n")
        return text

    def done(section: str) -> None:
        write()
        print(f"== {section} done at {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

    if "e2e" in args.sections:
        rows = e2e.run_e2e(
            args.targets,
            args.dialects,
            args.clients,
            args.seconds,
            args.reps,
            args.warmup,
            quiet=args.quiet_timeout if args.quiet else 0.0,
        )
        summary = e2e.medians(rows)
        results["e2e"] = {"runs": rows, "medians": summary}
        markdown += [
            f"## End-to-end task loop ({args.reps} repetition(s) of {args.seconds:g} s, medians)",
            "",
            e2e.markdown(summary),
            "",
        ]
        problems += [
            f"e2e {r['target']} {r['dialect']} C={r['clients']}: {r['errors']} error(s), {r['lost']} lost "
            f"{r['error_samples'][:2]}"
            for r in summary
            if r["errors"] or r["lost"]
        ]
        done("e2e")

    if "micro" in args.sections:
        from bench import micro

        results["micro"] = micro.run_micro(args.stores, quick=args.quick)
        markdown += ["## Store micro-benchmarks", "", micro.markdown(results["micro"]), ""]
        done("micro")

    if "stream" in args.sections:
        from bench import stream

        results["stream"] = stream.run_stream([s for s in args.stores if s in ("memory", "file")], quick=args.quick)
        markdown += ["## Streaming", "", stream.markdown(results["stream"]), ""]
        problems += results["stream"].get("problems", [])
        done("stream")

    if "crash" in args.sections:
        from bench import crash

        results["crash"] = crash.run_crash([s for s in args.stores if s != "memory"], args.crash_rounds)
        markdown += ["## Acknowledged tasks after kill -9 under load", "", crash.markdown(results["crash"]), ""]
        problems += crash.problems(results["crash"])
        done("crash")

    if "scale" in args.sections:  # last: the longest (10^6 tasks per store)
        from bench import scale

        results["scale"] = scale.run_scale(args.stores, args.scale_sizes, args.file_scale_max, quick=args.quick)
        markdown += ["## Scale with data", "", scale.markdown(results["scale"]), ""]
        done("scale")

    text = write()
    print(text)
    print(f"\nwritten: {args.out / args.name}.json, .md", file=sys.stderr)
    if problems:
        print("\n".join(["errors or lost tasks:", *problems]), file=sys.stderr)
        return 1
    return 0


def _machine_line(m: dict[str, Any]) -> str:
    return f"{m['date']}; {m['cpu']}, {m['cores']} cores; Python {m['python']}; {m['platform']}"


if __name__ == "__main__":
    sys.exit(main())
