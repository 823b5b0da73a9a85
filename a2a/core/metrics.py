"""The Prometheus metrics the app records (served at ``/metrics`` by :mod:`a2a.ops.observability`,
which documents them). Defined here, at the bottom, so every layer can record them."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

TRANSITIONS = Counter(
    "a2a_task_transitions", "Task state changes saved, by the new state and the task's agent.", ["state", "agent"]
)
STATE_SECONDS = Histogram(
    "a2a_task_state_seconds",
    "Seconds a task stayed in a state before its next state change (seen by this process).",
    ["state", "agent"],
    buckets=_BUCKETS,
)
TASK_SECONDS = Histogram(
    "a2a_task_duration_seconds",
    "Seconds from submitted to a terminal state, by that state (seen by this process).",
    ["state", "agent"],
    buckets=_BUCKETS,
)
RUNNER_ACTIVE = Gauge(
    "a2a_runner_active_tasks", "Tasks this process is fulfilling or has queued.", multiprocess_mode="livesum"
)
LLM_REQUESTS = Counter(
    "a2a_llm_requests",
    "HTTP requests to the model endpoint, by outcome (ok, retry, error) and the agent asking.",
    ["outcome", "agent"],
)
LLM_SECONDS = Histogram(
    "a2a_llm_request_seconds", "Seconds one model request took, by the agent asking.", ["agent"], buckets=_BUCKETS
)
LLM_TOKENS = Counter(
    "a2a_llm_tokens",
    "Tokens the model endpoint reported, by kind (input, output) and the agent asking.",
    ["kind", "agent"],
)
RETENTION_DELETED = Counter(
    "a2a_retention_deleted_tasks",
    "Tasks a retention sweep or `a2a_tasks prune` deleted, by the state they were in and their agent.",
    ["state", "agent"],
)
RETENTION_SECONDS = Histogram(
    "a2a_retention_sweep_seconds", "Seconds one retention sweep of one store took.", buckets=_BUCKETS
)
