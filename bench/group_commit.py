"""The file store's saves per second, each save durable, before and after group commit.

    python -m bench.group_commit                 # 1, 8 and 32 threads, 3 rounds, 2 s each
    python -m bench.group_commit --seconds 1 --rounds 1 --dir /some/ssd

Threads save tasks (each its own tasks, ``FileTaskStore.save``) into a task directory
on the given filesystem (default: a temp directory under the system's), in alternating
rounds in one process so both see the same machine:

- ``before``: each save ``fsync``s its temp file and then the directory itself (the
  store before group commit);
- ``after``: as the store is now: the temp file ``fsync``ed, the directory fsync
  shared by the saves renamed meanwhile (``stores.file.fsio.sync_directory``).

(``fdatasync`` instead of the temp file's ``fsync`` was measured too, on ext4: no
difference beyond the noise, so the store keeps ``fsync``.)

Reported: the median saves/s of each, the ratio to ``before`` (within a round, then the
median), and the directory fsyncs per save. The machine may be shared: the ratios, taken
round by round, say more than the absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import stores.file.fsio  # noqa: E402
from stores.file import FileTaskStore  # noqa: E402
from stores.file.syscalls import PythonSyscalls  # noqa: E402

GROUP, FSYNC_DIRECTORY = stores.file.fsio.sync_directory, stores.file.fsio.fsync_directory


def _own_fsync(directory: Path, kept_by: object = None) -> None:
    stores.file.fsio.fsync_directory(directory)  # (the counting one, during a run)


MODES: dict[str, Callable[..., None]] = {"before": _own_fsync, "after": GROUP}


def task(n: int) -> dict[str, Any]:
    return {
        "kind": "task",
        "id": str(uuid.uuid4()),
        "contextId": f"ctx-{n}",
        "status": {"state": "submitted", "timestamp": "2026-12-01T00:00:00.000Z"},
        "history": [
            {
                "kind": "message",
                "role": "user",
                "messageId": str(uuid.uuid4()),
                "parts": [{"kind": "text", "text": "x" * 200}],
            }
        ],
    }


def run(mode: str, threads: int, seconds: float, base: Path) -> dict[str, float]:
    directory = Path(tempfile.mkdtemp(prefix=f"{mode}-{threads}-", dir=base))
    dir_syncs = [0]

    class Counting(PythonSyscalls):
        def fsync_if_same(self, path: Any, fd: int, device: int, inode: int, /) -> bool:
            dir_syncs[0] += 1  # the kept directory's fsyncs
            return super().fsync_if_same(path, fd, device, inode)

    store = FileTaskStore(directory, syscalls=Counting())
    setattr(stores.file.fsio, "sync_directory", MODES[mode])  # noqa: B010

    def counting(directory: Path, fd: int | None = None) -> None:
        dir_syncs[0] += 1  # (a race may drop a count: a rough figure)
        FSYNC_DIRECTORY(directory, fd)

    setattr(stores.file.fsio, "fsync_directory", counting)  # noqa: B010
    counts = [0] * threads
    start = threading.Barrier(threads + 1)
    stop = threading.Event()

    def work(n: int) -> None:
        mine = [task(n) for _ in range(16)]
        start.wait()
        i = 0
        while not stop.is_set():
            store.save(mine[i % len(mine)])
            i += 1
        counts[n] = i

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - began
    stores.file.fsio.sync_directory, stores.file.fsio.fsync_directory = GROUP, FSYNC_DIRECTORY
    shutil.rmtree(directory, ignore_errors=True)
    saves = sum(counts)
    return {"saves_per_s": saves / elapsed, "dir_fsyncs_per_save": dir_syncs[0] / max(saves, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the task directories go (default: a temp directory)")
    parser.add_argument("--json", default=None, help="write the results here too")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="group-commit-", dir=args.dir))
    results: list[dict[str, Any]] = []
    try:
        for threads in (int(t) for t in args.threads.split(",")):
            rounds: list[dict[str, dict[str, float]]] = []
            for _ in range(args.rounds):
                rounds.append({mode: run(mode, threads, args.seconds, base) for mode in MODES})
            row: dict[str, Any] = {"threads": threads}
            for mode in MODES:
                row[mode] = statistics.median(r[mode]["saves_per_s"] for r in rounds)
                row[f"{mode}_dir_fsyncs_per_save"] = statistics.median(r[mode]["dir_fsyncs_per_save"] for r in rounds)
                row[f"{mode}_over_before"] = statistics.median(
                    r[mode]["saves_per_s"] / r["before"]["saves_per_s"] for r in rounds
                )
            results.append(row)
            print(
                f"C={threads:<3} "
                + "  ".join(
                    f"{mode} {row[mode]:7.0f}/s (x{row[f'{mode}_over_before']:.2f}, "
                    f"{row[f'{mode}_dir_fsyncs_per_save']:.2f} dir fsync/save)"
                    for mode in MODES
                ),
                flush=True,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
