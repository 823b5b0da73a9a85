"""Instructions counted in process under callgrind: a bench module started under
``valgrind --tool=callgrind --instr-atstart=no`` (its output file named by
``CALLGRIND_OUT``) runs each measured part between named dumps, and a part's cost is
its dump's total less that of a baseline dump taken first (what a dump itself costs)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path


def control(command: str) -> None:
    """``callgrind_control <command>`` on this process (``--instr=on``, ``--dump=NAME``)."""
    subprocess.run(["callgrind_control", command, str(os.getpid())], check=True, capture_output=True)


def measure(parts: dict[str, Callable[[], object]]) -> dict[str, int]:
    """Each part run once with instrumentation on: its instructions, by the part's name."""
    control("--instr=on")
    control("--dump=baseline")
    for index, run in enumerate(parts.values()):
        run()
        control(f"--dump=part{index}")  # a dump's name is one word; the parts' may not be
    control("--instr=off")
    counts = _dumps(Path(os.environ["CALLGRIND_OUT"]))
    return {name: counts[f"part{index}"] - counts["baseline"] for index, name in enumerate(parts)}


def _dumps(out: Path) -> dict[str, int]:
    """The total of each dump callgrind wrote beside ``out``, by the dump's name."""
    counts = {}
    for dump in out.parent.glob(out.name + ".*"):
        text = dump.read_text(errors="replace")
        name = re.search(r"^desc: Trigger: dump (\S+)", text, re.M)
        total = re.search(r"^summary: (\d+)", text, re.M)
        if name and total:
            counts[name.group(1)] = int(total.group(1))
    return counts
