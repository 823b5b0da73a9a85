"""Visibility: a structured log line and metrics for every task transition (on every
store), /metrics in the Prometheus format, /healthz over the store, the runner and any
added check, and the JSON log formatter."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from prometheus_client.parser import text_string_to_metric_families

from a2a.core.events import TaskEvent
from a2a.ops import observability
from stores.base import TaskPage, TaskQuery, TaskStore
from stores.memory import MemoryTaskStore
from tests.conftest import ALL_DATABASES
from tests.helpers import metric_sample as sample
from tests.helpers import send_direct

pytestmark = ALL_DATABASES


@pytest.fixture(autouse=True)
def _fresh_tracker():
    observability.tracker.clear()
    yield
    observability.tracker.clear()


def test_every_transition_is_logged_with_its_fields(use_store, caplog):
    caplog.set_level(logging.INFO, logger="a2a.tasks")
    task = send_direct("hello", contextId="ctx-log")
    records = [r for r in caplog.records if r.name == "a2a.tasks" and r.task_id == task["id"]]
    assert [(r.state, r.previous_state) for r in records] == [
        ("submitted", ""),
        ("working", "submitted"),
        ("completed", "working"),
    ]
    assert all(r.context_id == "ctx-log" for r in records)
    assert records[0].duration is None  # nothing before it
    assert all(isinstance(r.duration, float) and r.duration >= 0 for r in records[1:])
    message = records[-1].getMessage()
    assert f"task_id={task['id']} context_id=ctx-log state=completed previous=working duration=" in message


def test_transitions_are_counted_and_timed(use_store):
    before = {s: sample("a2a_task_transitions_total", state=s) for s in ("submitted", "working", "completed")}
    finished = sample("a2a_task_duration_seconds_count", state="completed")
    worked = sample("a2a_task_state_seconds_count", state="working")
    send_direct("one")
    send_direct("two")
    for state, count in before.items():
        assert sample("a2a_task_transitions_total", state=state) == count + 2
    assert sample("a2a_task_duration_seconds_count", state="completed") == finished + 2
    assert sample("a2a_task_state_seconds_count", state="working") == worked + 2


def test_same_state_updates_are_not_transitions(caplog):
    caplog.set_level(logging.DEBUG, logger="a2a.tasks")
    task = {"id": "t-progress", "contextId": "c", "status": {"state": "working"}}
    before = sample("a2a_task_transitions_total", state="working")
    observability.on_task(task)
    observability.on_task(TaskEvent({**task, "status": {"state": "working", "message": {"parts": []}}}))
    assert sample("a2a_task_transitions_total", state="working") == before + 1
    infos = [r for r in caplog.records if r.name == "a2a.tasks" and r.levelno == logging.INFO]
    assert len(infos) == 1


def test_the_listener_never_raises(caplog):
    for junk in (None, 42, {"no": "id"}, {"id": 5}, TaskEvent({"id": "x", "status": "garbage"})):
        observability.on_task(junk)  # must not raise


def test_the_tracker_is_bounded(monkeypatch):
    monkeypatch.setattr(observability._Tracker, "MAX", 5)
    for i in range(20):
        observability.on_task({"id": f"t{i}", "status": {"state": "working"}})
    assert len(observability.tracker._seen) == 5
    observability.on_task({"id": "t19", "status": {"state": "completed"}})
    assert "t19" not in observability.tracker._seen  # a finished task is forgotten


def test_metrics_endpoint(client, use_store):
    send_direct("counted")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    completed = [s for s in families["a2a_task_transitions"].samples if s.labels.get("state") == "completed"]
    assert completed and completed[0].value >= 1
    for name in ("a2a_task_duration_seconds", "a2a_task_state_seconds", "a2a_runner_active_tasks", "a2a_llm_tokens"):
        assert name in families
    assert client.post("/metrics").status_code == 405


def test_health_ok(client, use_store):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["store"]["ok"] is True
    assert body["checks"]["store"]["backend"] == type(use_store).__name__
    assert body["checks"]["runner"]["ok"] is True
    assert response["Cache-Control"] == "no-store"


class BrokenStore(MemoryTaskStore):
    def get(self, task_id: str):
        raise ConnectionError("database is down")


class HangingStore(TaskStore):
    nonblocking = False

    async def aget(self, task_id: str):
        await asyncio.sleep(30)

    def get(self, task_id: str):  # pragma: no cover
        return None

    def save(self, task):  # pragma: no cover
        return task

    def list(self, query: TaskQuery | None = None) -> TaskPage:  # pragma: no cover
        return TaskPage(tasks=[])

    def delete(self, task_id: str) -> bool:  # pragma: no cover
        return False


def test_health_fails_when_the_store_fails(client, settings):
    settings.TASK_STORE = BrokenStore()
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    assert body["checks"]["store"]["ok"] is False
    assert body["checks"]["store"]["error"] == "ConnectionError: database is down"
    assert body["checks"]["runner"]["ok"] is True


def test_health_fails_when_the_store_hangs(client, settings):
    settings.TASK_STORE = HangingStore()
    settings.A2A_HEALTH_TIMEOUT = 0.2
    body = client.get("/healthz").json()
    assert body["checks"]["store"]["ok"] is False
    assert body["checks"]["store"]["error"] == "no answer within 0.2s"


def test_added_checks_count(client, use_store):
    async def queue_check():
        return {"ok": False, "depth": 12}

    observability.add_health_check("queue", queue_check)
    try:
        response = client.get("/healthz")
        assert response.status_code == 503
        assert response.json()["checks"]["queue"]["depth"] == 12
        observability.add_health_check("queue", lambda: {"ok": True})
        assert client.get("/healthz").status_code == 200
    finally:
        observability.remove_health_check("queue")
    assert "queue" not in client.get("/healthz").json()["checks"]


def test_json_formatter():
    record = logging.makeLogRecord(
        {"name": "a2a.tasks", "levelname": "INFO", "msg": "task %s", "args": ("t1",), "task_id": "t1", "duration": 0.5}
    )
    line = json.loads(observability.JsonFormatter().format(record))
    assert line["message"] == "task t1"
    assert line["task_id"] == "t1" and line["duration"] == 0.5
    assert line["logger"] == "a2a.tasks" and line["level"] == "INFO"
    assert "args" not in line and "msg" not in line


def test_the_runner_gauge(use_store):
    import time

    send_direct("x")  # starts the runner
    # The blocking send answers once the task settles; the runner forgets the job a
    # moment later, so the gauge reaches zero shortly after, not necessarily at once.
    deadline = time.monotonic() + 5
    while sample("a2a_runner_active_tasks") != 0.0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sample("a2a_runner_active_tasks") == 0.0


def test_transitions_carry_the_agent_of_the_task(caplog):
    """The metrics and the log line name the task's agent: its ``_agent``, "default" without one."""
    caplog.set_level(logging.INFO, logger="a2a.tasks")
    default_before = sample("a2a_task_transitions_total", state="working", agent="default")
    billing_before = sample("a2a_task_transitions_total", state="working", agent="billing")
    observability.on_task({"id": "t-default", "status": {"state": "working"}})
    observability.on_task({"id": "t-billing", "status": {"state": "working"}, "_agent": "billing"})
    observability.on_task({"id": "t-billing", "status": {"state": "completed"}, "_agent": "billing"})
    assert sample("a2a_task_transitions_total", state="working", agent="default") == default_before + 1
    assert sample("a2a_task_transitions_total", state="working", agent="billing") == billing_before + 1
    assert sample("a2a_task_state_seconds_count", state="working", agent="billing") >= 1
    records = {(r.task_id, r.state): r for r in caplog.records if r.name == "a2a.tasks"}
    assert records["t-default", "working"].agent == "default"
    assert records["t-billing", "completed"].agent == "billing"
    assert records["t-billing", "completed"].getMessage().endswith(" agent=billing")
