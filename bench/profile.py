"""Profile one server under the task loop with py-spy (a flame graph and a summary).

    python -m bench.profile ours/memory --dialect v1.0 --clients 8 --seconds 10
    python -m bench.profile sdk/memory --dialect v1.0

Writes ``bench/results/profile-<target>-<dialect>-c<C>.svg`` (the flame graph),
``.txt`` (py-spy's collapsed stacks) and prints the functions with the most samples,
inclusive and self, as a share of all samples. By default only the thread holding
the GIL is sampled (``--gil``): the Python work that costs CPU, whichever thread does
it. py-spy must be able to ptrace the server (run as the same user, or root).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.loadgen import measure  # noqa: E402
from bench.targets import TARGETS  # noqa: E402

PY_SPY = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")


def summarize(collapsed: Path, top: int = 25) -> str:
    """The frames with the most samples (inclusive and self) in py-spy's raw output."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    out = [f"{total} samples"]
    for title, counter in (("inclusive", inclusive), ("self", own)):
        out.append(f"\ntop {top} {title}:")
        out += [f"{100 * n / total:6.1f}%  {frame}" for frame, n in counter.most_common(top)]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=list(TARGETS))
    parser.add_argument("--dialect", default="v1.0")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--idle", action="store_true", help="include idle samples (waiting threads)")
    parser.add_argument("--all-threads", action="store_true", help="sample every thread, not only the GIL holder")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    target = TARGETS[args.target]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"profile-{args.target.replace('/', '-')}-{args.dialect}-c{args.clients}"
    with tempfile.TemporaryDirectory(prefix="a2a-profile-") as tmp, target.running(Path(tmp)) as base:
        measure(base, base.pid, path=target.path, dialect=args.dialect, clients=args.clients, seconds=1)  # warm-up
        spy = [PY_SPY, "record", "-p", str(base.pid), "-r", str(args.rate), "-d", str(int(args.seconds) + 1)]
        if args.idle:
            spy.append("--idle")
        if not args.all_threads:
            spy.append("--gil")  # what costs CPU in a Python process: the thread holding the GIL
        procs = [
            subprocess.Popen([*spy, "-f", "raw", "-o", f"{stem}.txt"], stdout=subprocess.DEVNULL),
            subprocess.Popen([*spy, "-f", "flamegraph", "-o", f"{stem}.svg"], stdout=subprocess.DEVNULL),
        ]
        result: dict = {}
        load = threading.Thread(
            target=lambda: result.update(
                measure(
                    base, base.pid, path=target.path, dialect=args.dialect, clients=args.clients, seconds=args.seconds
                )
            )
        )
        load.start()
        load.join()
        for proc in procs:
            proc.wait()
    print(
        f"{args.target} {args.dialect} C={args.clients}: {result['tasks_per_s']:.1f} tasks/s, "
        f"{result['server_cpu_ms_per_task']:.2f} CPU ms/task (under py-spy)"
    )
    print(summarize(Path(f"{stem}.txt")))
    print(f"\nflame graph: {stem}.svg")


if __name__ == "__main__":
    main()
