"""What the interpreter lock's hand-overs cost a file save, beside a busy event loop.

    python -m bench.gil_saves                       # 2,000 saves each way, with and without fsync
    python -m bench.gil_saves --saves 500 --dir /some/ssd

Every ``os`` call that makes a system call lets go of the interpreter lock (GIL) for its
duration. When another thread wants the lock meanwhile (the server's event loop, busy
with requests), it takes it, and the saving thread, its call done in microseconds, waits
to get it back: up to the switch interval (5 ms) each time. A file store's save is about
twenty such calls (bench/README.md, "Results: issue #34, session 12").

This measures one thread saving files the store's way (a temp file opened ``O_EXCL``,
written, optionally fsynced, ``fstat``ed, closed, renamed over its target) while another
thread runs Python without pause (the worst case of a saturated loop), three ways:

- ``os``: the calls from Python (the store without its C companion), each letting go of
  the lock;
- ``held``: ``open``, ``write``, ``close`` and ``rename`` through ``ctypes.PyDLL`` (libc
  called *without* letting go of the lock: microseconds on a local filesystem with the
  metadata cached); ``fsync`` and ``fstat`` still through ``os``;
- ``one``: the six calls in one release of the lock, by the store's C companion
  (``a2a_fsio._syscalls.write_replace``; skipped where it is not installed).

Reported: saves per second and context switches per save (``getrusage``), each way, in
alternating rounds. Linux only (libc through ``ctypes``). The hand-over's cost alone.
Holding the lock for a save's short calls was tried end to end and did not pay
(bench/README.md, "Results: issue #34, session 12"): the server's calls can wait (a
journal commit, a contended ``flock``), and a thread waiting with the lock held holds up
the loop. Letting go of it once for all of them (``one``) is what the store does since
(bench/README.md, "Results: issue #34, session 13").
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from stores.file.syscalls import COMPANION

DATA = b"x" * 700  # about a task's JSON
FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def _libc() -> ctypes.PyDLL:
    libc = ctypes.PyDLL(None, use_errno=True)  # PyDLL: the GIL is held during each call
    libc.open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    libc.write.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    libc.close.argtypes = [ctypes.c_int]
    libc.rename.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return libc


def save_os(tmp: str, target: str, fsync: bool) -> None:
    fd = os.open(tmp, FLAGS, 0o600)
    os.write(fd, DATA)
    if fsync:
        os.fsync(fd)
    os.fstat(fd)
    os.close(fd)
    os.replace(tmp, target)


def saver_held(libc: ctypes.PyDLL) -> Callable[[str, str, bool], None]:
    def save(tmp: str, target: str, fsync: bool) -> None:
        fd = libc.open(tmp.encode(), FLAGS, 0o600)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "open failed", tmp)
        libc.write(fd, DATA, len(DATA))
        if fsync:
            os.fsync(fd)
        os.fstat(fd)
        libc.close(fd)
        if libc.rename(tmp.encode(), target.encode()) != 0:
            raise OSError(ctypes.get_errno(), "rename failed", tmp)

    return save


def save_one(tmp: str, target: str, fsync: bool) -> None:
    assert COMPANION is not None
    COMPANION.write_replace(tmp, target, DATA, fsync)


def measure(save: Callable[[str, str, bool], None], directory: str, saves: int, fsync: bool) -> tuple[float, float]:
    """(saves per second, context switches per save) of ``saves`` saves beside a busy thread."""
    stop = threading.Event()

    def busy() -> None:
        count = 0
        while not stop.is_set():
            count += 1

    spinner = threading.Thread(target=busy, daemon=True)
    spinner.start()
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for i in range(saves):
        save(f"{directory}/.tmp-{i}", f"{directory}/task-{i % 50}.json", fsync)
    elapsed, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    spinner.join()
    switches = (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
    return saves / elapsed, switches / saves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saves", type=int, default=2000, help="saves per way and round (default 2,000)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp directory)")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        sys.exit("Linux only: libc through ctypes")
    ways = {"os": save_os, "held": saver_held(_libc())}
    if COMPANION is not None:
        ways["one"] = save_one
    root = tempfile.mkdtemp(prefix="a2a-gil-", dir=args.dir)
    try:
        for fsync in (False, True):
            saves = args.saves if not fsync else max(1, args.saves // 4)
            for round_ in range(args.rounds):
                order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
                for name in order:
                    directory = tempfile.mkdtemp(dir=root)
                    rate, switches = measure(ways[name], directory, saves, fsync)
                    shutil.rmtree(directory)
                    label = "fsync" if fsync else "no fsync"
                    print(f"{label:8} round {round_}  {name:4}  {rate:8.0f} saves/s  {switches:5.1f} switches a save")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
