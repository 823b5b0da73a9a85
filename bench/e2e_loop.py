"""The end-to-end task loop against our own stores only (kept for its old command line).

    python bench/e2e_loop.py                       # our 4 stores, C = 1, 8, 32, 5 s each
    python bench/e2e_loop.py --seconds 2 --clients 8 --stores memory file

Now part of the suite (``python -m bench.run``, bench/README.md), which also runs the
official SDK, toolnexus and the null server side by side. This runs its e2e section
on our stores, toolnexus dialect, one repetition; results in bench/results/e2e_loop.*.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", default="5")
    parser.add_argument("--clients", nargs="+", default=["1", "8", "32"])
    parser.add_argument("--stores", nargs="+", default=["memory", "file", "orm-sqlite", "orm-postgres"])
    args = parser.parse_args()
    fixed = ["--sections", "e2e", "--dialects", "toolnexus", "--reps", "1", "--no-quiet", "--name", "e2e_loop"]
    targets = [f"ours/{s}" for s in args.stores]
    sys.exit(main([*fixed, "--seconds", args.seconds, "--clients", *args.clients, "--targets", *targets]))
