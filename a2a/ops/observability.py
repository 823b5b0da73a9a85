"""Visibility: a log line and metrics for every task transition, and the health check.

:func:`install` (called from ``A2AConfig.ready``) adds :func:`on_task` as a listener
of the event bus, so every saved task version passes here, whoever saved it (the
runner, ``CancelTask``, the admin, ``manage.py a2a_tasks``).

Logs: one ``INFO`` record on the ``a2a.tasks`` logger per state change, in logfmt
(``task_id=… context_id=… state=completed previous=working duration=1.204 agent=default``)
and with the same fields as record attributes (``task_id``, ``context_id``, ``agent``,
``state``, ``previous_state``, ``duration``) for structured formatters such as
:class:`JsonFormatter`. ``duration`` is the time spent in the previous state, as seen
by this process (absent when this process did not see it begin). ``agent`` is the name
of the agent the task belongs to (``default`` for the project's single-agent settings),
read from the stored task, so a transition saved by any process is labelled alike.

Metrics (Prometheus, via ``prometheus_client``), served at ``/metrics``:

- ``a2a_task_transitions_total{state,agent}``: state changes saved, by new state;
- ``a2a_task_state_seconds{state,agent}``: how long tasks stayed in a state before leaving it;
- ``a2a_task_duration_seconds{state,agent}``: submitted to terminal, by terminal state;
- ``a2a_runner_active_tasks``: tasks this process is fulfilling or has queued;
- ``a2a_llm_requests_total{outcome}``, ``a2a_llm_request_seconds``,
  ``a2a_llm_tokens_total{kind}``: the model-backed handler's calls.
- ``a2a_retention_deleted_tasks_total{state,agent}``: tasks retention (or ``a2a_tasks
  prune``) deleted; ``a2a_retention_sweep_seconds``: how long each store's sweep took.

Under several worker processes, set ``PROMETHEUS_MULTIPROC_DIR`` (see
prometheus_client's multiprocess mode) and ``/metrics`` aggregates them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import json
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry
from prometheus_client import generate_latest as _generate_latest

from a2a.core.events import bus
from a2a.core.metrics import RUNNER_ACTIVE, STATE_SECONDS, TASK_SECONDS, TRANSITIONS
from a2a.runtime.runner import current_runner
from stores.backends import get_task_store
from stores.base import TERMINAL_STATES, Task
from stores.fields import OWNER, task_state
from stores.retention import delete_tasks
from stores.scope import agent_name
from stores.timestamps import now_iso

task_logger = logging.getLogger("a2a.tasks")
logger = logging.getLogger(__name__)


def _runner_active() -> float:
    current = current_runner()
    return float(current.active) if current is not None else 0.0


RUNNER_ACTIVE.set_function(_runner_active)


# --- Transitions ----------------------------------------------------------------------


class _Tracker:
    """When this process last saw each unfinished task change state (bounded)."""

    MAX = 10_000

    def __init__(self) -> None:
        self._seen: OrderedDict[str, tuple[str, float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def update(self, task_id: str, state: str, now: float) -> tuple[str | None, float | None, float | None]:
        """Record ``state``; return (previous state, seconds in it, seconds since first seen)."""
        with self._lock:
            previous = self._seen.pop(task_id, None)
            if previous is not None and previous[0] == state:
                self._seen[task_id] = previous  # same state (progress, artifacts): not a transition
                return state, None, None
            if state not in TERMINAL_STATES:
                first = previous[2] if previous else now
                self._seen[task_id] = (state, now, first)
                while len(self._seen) > self.MAX:
                    self._seen.popitem(last=False)
        if previous is None:
            return None, None, None
        return previous[0], now - previous[1], now - previous[2]

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


tracker = _Tracker()


def on_task(event: Any) -> None:
    """The bus listener: log and count a saved task version. Never raises."""
    try:
        task = event if isinstance(event, dict) else getattr(event, "task", None)
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            return
        _observe(task)
    except Exception:  # a metrics problem must never stop a transition
        logger.exception("observing a task transition failed")


@functools.lru_cache(maxsize=1024)
def _child(metric: Any, state: str, agent: str) -> Any:
    """``metric.labels(state, agent)``, looked up once per label pair: ``labels``
    checks and converts its values and takes the metric's lock at every call."""
    return metric.labels(state, agent)


def _observe(task: Task) -> None:
    state = task_state(task)
    previous, in_previous, since_first = tracker.update(task["id"], state, time.monotonic())
    if previous == state:
        task_logger.debug("task update task_id=%s state=%s", task["id"], state)
        return
    agent = agent_name(task)
    _child(TRANSITIONS, state, agent).inc()
    if previous is not None and in_previous is not None:
        _child(STATE_SECONDS, previous, agent).observe(in_previous)
    if state in TERMINAL_STATES and since_first is not None:
        _child(TASK_SECONDS, state, agent).observe(since_first)
    fields = {
        "task_id": task["id"],
        "context_id": task.get("contextId") or "",
        "agent": agent,
        "state": state,
        "previous_state": previous or "",
        "duration": round(in_previous, 6) if in_previous is not None else None,
    }
    task_logger.info(
        "task transition task_id=%s context_id=%s state=%s previous=%s duration=%s agent=%s",
        fields["task_id"],
        fields["context_id"] or "-",
        state,
        previous or "-",
        f"{in_previous:.3f}" if in_previous is not None else "-",
        agent,
        extra=fields,
    )


def install() -> None:
    """Listen to the event bus (idempotent)."""
    bus.add_listener(on_task)


# --- Metrics --------------------------------------------------------------------------


def metrics_registry() -> CollectorRegistry:
    """This process's registry, or every worker's under prometheus_client's multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


def render_metrics() -> tuple[bytes, str]:
    """The metrics in the Prometheus text format, and its content type."""
    return _generate_latest(metrics_registry()), CONTENT_TYPE_LATEST


# --- Health ---------------------------------------------------------------------------

HealthCheck = Callable[[], Awaitable[dict[str, Any]] | dict[str, Any]]
_health_checks: dict[str, HealthCheck] = {}


def add_health_check(name: str, check: HealthCheck) -> None:
    """Add a check to ``/healthz`` (e.g. a queue's, when one is configured): a sync or
    async callable returning a dict with ``"ok": bool`` (raising counts as not ok)."""
    _health_checks[name] = check


def remove_health_check(name: str) -> None:
    _health_checks.pop(name, None)


#: The owner of the record ``/healthz`` writes and deletes: no caller has it, so no
#: caller lists it; it is saved already terminal, so no lease or stale sweep touches it.
HEALTH_PROBE_OWNER = "a2a:healthz-probe"


def _probe_task(task_id: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "contextId": task_id,
        "kind": "task",
        "status": {"state": "canceled", "timestamp": now_iso()},
        OWNER: HEALTH_PROBE_OWNER,
    }


async def _check_store() -> dict[str, Any]:
    """Read an unknown id, then save and delete a probe record: a store that still reads
    but can no longer write (a full disk, a read-only database) fails the check."""
    store = get_task_store()
    probe = f"healthz-{uuid.uuid4()}"
    task = _probe_task(probe)
    if store.nonblocking:  # deleted the one way every task is (what goes with a task goes)
        store.get(probe)
        delete_tasks(store, [store.save(task)])
    else:
        await store.aget(probe)
        try:
            saved = await store.asave(task)
        except BaseException:
            with contextlib.suppress(Exception):  # whatever a failed save left behind
                await asyncio.to_thread(delete_tasks, store, [task])
            raise
        await asyncio.to_thread(delete_tasks, store, [saved])
    return {"ok": True, "backend": type(store).__name__}


def _check_runner() -> dict[str, Any]:
    current = current_runner()
    started = current is not None and current.started
    alive = not started or (current is not None and current.alive)
    return {"ok": alive, "started": started, "active": current.active if current is not None else 0}


async def health(timeout: float) -> dict[str, Any]:
    """Run every check (each within ``timeout`` seconds): ``{"status": "ok"|"fail",
    "checks": {name: {"ok": ..., "ms": ..., ...}}}``."""
    checks: dict[str, HealthCheck] = {"store": _check_store, "runner": _check_runner, **_health_checks}
    results: dict[str, Any] = {}
    for name, check in checks.items():
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                outcome = check()
                if asyncio.iscoroutine(outcome) or isinstance(outcome, Awaitable):
                    outcome = await outcome
            result: dict[str, Any] = dict(outcome) if isinstance(outcome, dict) else {"ok": bool(outcome)}
        except TimeoutError:
            result = {"ok": False, "error": f"no answer within {timeout:g}s"}
        except Exception as exc:
            logger.warning("health check %s failed: %s", name, exc)
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        result["ok"] = bool(result.get("ok"))
        result["ms"] = round((time.perf_counter() - started) * 1000, 2)
        results[name] = result
    ok = all(r["ok"] for r in results.values())
    return {"status": "ok" if ok else "fail", "checks": results}


# --- Structured logs --------------------------------------------------------------------

_RECORD_ATTRS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and every ``extra`` field
    (so a transition's ``task_id``, ``state``, ``duration`` become JSON keys)::

        LOGGING = {..., "formatters": {"json": {"()": "a2a.ops.observability.JsonFormatter"}}}
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)
