"""The load generator of the end-to-end task loop (asyncio + aiohttp, on uvloop).

Each of C virtual clients sends a non-blocking ``SendMessage`` with a short text and
polls ``GetTask`` every 10 ms until the task is terminal, again and again for a fixed
window (a task in flight when the window closes is followed to its end). Speaks three
dialects: ``toolnexus`` (no ``A2A-Version``; v0.3 payloads under the v1.0 method
names), ``v0.3`` and ``v1.0``. Any server that speaks one of them can be measured;
a server whose ``SendMessage`` answers with a terminal task needs no ``GetTask``.

A task is *completed* (counted, its latency is send -> terminal seen), *failed*
(ended in another terminal state: an error), or *lost* (acknowledged, never seen
terminal within 30 s after the window). Every failed request counts as an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
POLL_INTERVAL = 0.01
#: How long after the window a client keeps following its last task before it is lost.
DRAIN_TIMEOUT = 30.0


@dataclass(frozen=True)
class Dialect:
    name: str
    headers: dict[str, str]
    send_method: str
    get_method: str
    message: Callable[[str], dict[str, Any]]
    configuration: dict[str, Any]


def _v03_message(text: str) -> dict[str, Any]:
    return {"role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": text}]}


def _v10_message(text: str) -> dict[str, Any]:
    return {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": text}]}


DIALECTS = {
    "toolnexus": Dialect("toolnexus", {}, "SendMessage", "GetTask", _v03_message, {"blocking": False}),
    "v0.3": Dialect("v0.3", {"A2A-Version": "0.3"}, "message/send", "tasks/get", _v03_message, {"blocking": False}),
    "v1.0": Dialect(
        "v1.0", {"A2A-Version": "1.0"}, "SendMessage", "GetTask", _v10_message, {"returnImmediately": True}
    ),
}


def task_of(result: Any) -> dict[str, Any]:
    """The task in a ``SendMessage``/``GetTask`` result (v1.0 wraps it in ``task``)."""
    if isinstance(result, dict) and "status" not in result and isinstance(result.get("task"), dict):
        return result["task"]
    return result


def state_of(task: dict[str, Any]) -> str:
    """The task's state in v0.3 spelling (``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``)."""
    state = task["status"]["state"]
    if state.startswith("TASK_STATE_"):
        state = state[11:].lower().replace("_", "-")
    return state


class RPCError(Exception):
    pass


@dataclass
class Stats:
    acknowledged: int = 0
    completed: int = 0
    failed: int = 0
    lost: int = 0
    gets: int = 0
    requests: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    error_samples: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(what[:200])


async def _rpc(client: aiohttp.ClientSession, url: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    async with client.post(url, data=orjson.dumps(body), headers=headers) as response:
        raw = await response.read()
    try:
        answer = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise RPCError(f"HTTP {response.status}: {raw[:100]!r}") from None
    if not isinstance(answer, dict) or "result" not in answer:
        raise RPCError(f"HTTP {response.status}: {str(answer)[:150]}")
    return answer["result"]


async def _client_loop(
    client: aiohttp.ClientSession, url: str, dialect: Dialect, stop_at: float, stats: Stats, text: str
) -> None:
    headers = {"Content-Type": "application/json", **dialect.headers}
    while time.monotonic() < stop_at:
        started = time.monotonic()
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": dialect.send_method,
            "params": {"message": dialect.message(text), "configuration": dialect.configuration},
        }
        stats.requests += 1
        try:
            task = task_of(await _rpc(client, url, headers, body))
            task_id, state = task["id"], state_of(task)
        except Exception as exc:
            stats.error(f"{dialect.send_method}: {type(exc).__name__}: {exc}")
            await asyncio.sleep(POLL_INTERVAL)
            continue
        stats.acknowledged += 1
        get = {"jsonrpc": "2.0", "id": 2, "method": dialect.get_method, "params": {"id": task_id}}
        while state not in TERMINAL:
            if time.monotonic() > stop_at + DRAIN_TIMEOUT:
                break
            await asyncio.sleep(POLL_INTERVAL)
            stats.requests += 1
            try:
                state = state_of(task_of(await _rpc(client, url, headers, get)))
                stats.gets += 1
            except Exception as exc:
                stats.error(f"{dialect.get_method}: {type(exc).__name__}: {exc}")
        if state == "completed":
            stats.completed += 1
            stats.latencies.append(time.monotonic() - started)
        elif state in TERMINAL:
            stats.failed += 1
            stats.error(f"task {task_id} ended {state}")
        else:
            stats.lost += 1


def raise_file_limit(clients: int) -> None:
    """Raise this process's soft open-file limit to the hard one when ``clients``
    connections (and the servers started after, which inherit it) may need more than
    it allows: distributions often default it to 1024. RuntimeError when even the hard
    limit is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * clients + 256  # the generator's sockets, a server's, and the rest
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise RuntimeError(f"{clients} clients need {needed} open files; the hard limit is {hard} (ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def run_load(
    base: str,
    *,
    path: str = "/a2a/",
    dialect: str = "toolnexus",
    clients: int = 8,
    seconds: float = 5.0,
    text: str = "hello, benchmark",
) -> dict[str, Any]:
    """Drive the task loop against ``base + path`` for ``seconds``; the figures."""
    stats = Stats()
    spec = DIALECTS[dialect]
    raise_file_limit(clients)
    connector = aiohttp.TCPConnector(limit=clients, force_close=False)  # one connection per client
    cpu_before = _self_cpu()
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as client:
        started = time.monotonic()
        stop_at = started + seconds
        await asyncio.gather(*(_client_loop(client, base + path, spec, stop_at, stats, text) for _ in range(clients)))
        elapsed = time.monotonic() - started
    latencies = sorted(stats.latencies)
    return {
        "completed": stats.completed,
        "tasks_per_s": stats.completed / elapsed,
        "gets_per_s": stats.gets / elapsed,
        "requests_per_s": stats.requests / elapsed,
        "p50_ms": 1000 * statistics.median(latencies) if latencies else None,
        "p99_ms": 1000 * _percentile(latencies, 0.99) if latencies else None,
        "errors": stats.errors,
        "failed": stats.failed,
        "lost": stats.lost,
        "error_samples": stats.error_samples,
        "elapsed_s": elapsed,
        "generator_cpu_s": _self_cpu() - cpu_before,
    }


def run(coro: Any) -> Any:
    """Run ``coro`` on uvloop when it is installed (a faster generator), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


# --- The server process: CPU and memory from /proc --------------------------------


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (uvicorn may fork; toolnexus is one process)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, ()))
    return tree


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process tree rooted at ``pid``."""
    total = 0.0
    for p in process_tree(pid):
        with contextlib.suppress(OSError, IndexError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def rss_mb(pid: int) -> float:
    """Resident memory of the process tree rooted at ``pid``, in MiB."""
    total = 0
    for p in process_tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores, from /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_for_quiet(pid: int, *, limit: float = 0.3, timeout: float = 30.0) -> float:
    """Wait (at most ``timeout`` s) until the machine is quiet: less than ``limit`` of a
    core busy outside the server ``pid`` for one second. Returns the background load
    last seen (in cores). Other processes on a 2-core machine skew every figure."""
    deadline = time.monotonic() + timeout
    while True:
        busy, server, started = machine_busy_seconds(), cpu_seconds(pid), time.monotonic()
        time.sleep(1.0)
        elapsed = time.monotonic() - started
        background = (machine_busy_seconds() - busy - (cpu_seconds(pid) - server)) / elapsed
        if background < limit or time.monotonic() > deadline:
            return background


def measure(base: str, pid: int, *, quiet: float = 0.0, **load: Any) -> dict[str, Any]:
    """:func:`run_load` plus the server's CPU per completed task, its RSS before and
    after, and the background load (CPU busy outside the server and the generator,
    in cores: anything above ~0.1 means something else ran and skewed the window).
    ``quiet``: first wait up to that many seconds for the machine to be quiet
    (:func:`wait_for_quiet`); 0, not at all."""
    if quiet:
        wait_for_quiet(pid, timeout=quiet)
    rss_before, cpu_before, busy_before = rss_mb(pid), cpu_seconds(pid), machine_busy_seconds()
    result = run(run_load(base, **load))
    cpu = cpu_seconds(pid) - cpu_before
    busy = machine_busy_seconds() - busy_before
    result.update(
        server_cpu_ms_per_task=1000 * cpu / result["completed"] if result["completed"] else None,
        server_cpu_util=cpu / result["elapsed_s"],
        generator_cpu_util=result["generator_cpu_s"] / result["elapsed_s"],
        background_cpu=max(0.0, busy - cpu - result["generator_cpu_s"]) / result["elapsed_s"],
        rss_before_mb=rss_before,
        rss_after_mb=rss_mb(pid),
    )
    return result
