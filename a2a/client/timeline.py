"""The task timeline (A2A 1.1 draft, spec 3.2.8) as the client reads it.

A 1.1 agent's Task carries ``timeline``: its client messages and agent statuses, each
with the generation at which it was appended, and artifacts carrying the generations at
which they started and completed. The client keeps a parsed task's timeline as the
server does (:data:`stores.fields.TIMELINE`, in generation order; an entry of a kind it
does not know is skipped, spec 3.2.8: :func:`a2a.client.wire.parse_task`), and :func:`interaction` reads a task's whole
interaction in the order it happened. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from a2a.protocol.model import Task
from stores.fields import ARTIFACT_GENERATIONS, TIMELINE

Step = tuple[Literal["message", "status", "artifact"], dict[str, Any]]


def interaction(task: Task) -> list[Step]:
    """``task``'s interaction in the order it happened: with a 1.1 agent's timeline, its
    entries in generation order, each artifact placed where it first appeared (an
    artifact without a generation last); without one, the history, the status, then the
    artifacts (all a 1.0 agent tells)."""
    artifacts = task.get("artifacts") or []
    if not isinstance(task.get(TIMELINE), list):
        steps: list[Step] = [("message", m) for m in task.get("history") or ()]
        return [*steps, ("status", task.get("status") or {}), *(("artifact", a) for a in artifacts)]
    spans = task.get(ARTIFACT_GENERATIONS) or {}
    placed: list[tuple[float, int, Step]] = []
    for entry in task[TIMELINE]:
        kind: Literal["message", "status"] = "message" if "message" in entry else "status"
        placed.append((entry["g"], 0, (kind, entry[kind])))
    for artifact in artifacts:
        start = (spans.get(artifact.get("artifactId")) or [float("inf")])[0]
        placed.append((start, 1, ("artifact", artifact)))
    return [step for _, _, step in sorted(placed, key=lambda p: (p[0], p[1]))]
