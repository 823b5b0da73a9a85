"""A remote task followed through its stream: each event folded into the task it updates.

Delegation keeps a local copy of the remote task as its events arrive; :func:`apply` is
the one place that says what each event does to it (an artifact chunk with ``append``
extends the artifact of the same id, in the order the chunks came).
"""

from __future__ import annotations

import copy
from typing import Any

from a2a.protocol.model import StreamItem, Task


def apply(task: Task | None, item: StreamItem) -> Task | None:
    """``task`` after ``item`` (a new dict; ``task`` is not changed). A snapshot replaces
    it; a message or keepalive leaves it as it was."""
    if item.kind == "task":
        return copy.deepcopy(item.task)
    if item.kind not in ("status", "artifact") or item.task is None:
        return task
    out: Task = copy.deepcopy(task) if task is not None else {"kind": "task", "id": item.task["id"]}
    out.setdefault("contextId", item.task.get("contextId", ""))
    if item.kind == "status":
        out["status"] = copy.deepcopy(item.task["status"])
        return out
    assert item.artifact is not None
    artifacts: list[dict[str, Any]] = out.setdefault("artifacts", [])
    same = next((a for a in artifacts if a.get("artifactId") == item.artifact.get("artifactId")), None)
    if same is not None and item.append:
        same["parts"] = [*same.get("parts", ()), *copy.deepcopy(item.artifact.get("parts", []))]
    elif same is not None:
        artifacts[artifacts.index(same)] = copy.deepcopy(item.artifact)
    else:
        artifacts.append(copy.deepcopy(item.artifact))
    return out
