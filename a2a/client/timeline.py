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
from stores.timeline import in_order

Step = tuple[Literal["message", "status", "artifact"], dict[str, Any]]


def interaction(task: Task) -> list[Step]:
    """``task``'s interaction in the order it happened: with a 1.1 agent's timeline, its
    entries in generation order, each artifact placed where it first appeared (an
    artifact without a generation last); without one, the history, the status, then the
    artifacts (all a 1.0 agent tells)."""
    ordered = in_order(task)
    if ordered is None:
        steps: list[Step] = [("message", m) for m in task.get("history") or ()]
        artifacts = task.get("artifacts") or []
        return [*steps, ("status", task.get("status") or {}), *(("artifact", a) for a in artifacts)]
    return [(kind, item) for kind, _, item in ordered]
