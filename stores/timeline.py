"""A task's interaction in the order it happened, read from its timeline (A2A 1.1 draft,
spec 3.2.8; kept by :mod:`a2a.protocol.timeline`): one ordering for the admin's task
page, the agent page and the project's client."""

from __future__ import annotations

from typing import Any, Literal

from stores.base import Task
from stores.fields import ARTIFACT_GENERATIONS, TIMELINE

#: ``(kind, index, item)``: a timeline entry's client ``Message`` or agent ``TaskStatus``
#: (``index`` in the timeline), or an ``Artifact`` (``index`` in the task's artifacts).
Step = tuple[Literal["message", "status", "artifact"], int, dict[str, Any]]


def in_order(task: Task) -> list[Step] | None:
    """``task``'s timeline entries in generation order, each artifact placed after the
    entries that precede its start generation (one without a generation last); None
    for a task kept without a timeline (a 1.0 agent's, or an earlier release's)."""
    timeline = task.get(TIMELINE)
    if not isinstance(timeline, list):
        return None
    spans = task.get(ARTIFACT_GENERATIONS)
    spans = spans if isinstance(spans, dict) else {}
    placed: list[tuple[float, int, Step]] = []
    for i, entry in enumerate(timeline):
        kind: Literal["message", "status"] = "message" if "message" in entry else "status"
        if isinstance(entry.get(kind), dict) and isinstance(entry.get("g"), int):
            placed.append((entry["g"], 0, (kind, i, entry[kind])))
    for i, artifact in enumerate(task.get("artifacts") or ()):
        if isinstance(artifact, dict):
            span = spans.get(artifact.get("artifactId"))
            start = span[0] if isinstance(span, list) and span and isinstance(span[0], int) else float("inf")
            placed.append((start, 1, ("artifact", i, artifact)))
    return [step for _, _, step in sorted(placed, key=lambda p: (p[0], p[1]))]
