"""The task timeline of the A2A 1.1 draft (spec 3.2.8): a task's client messages and
agent statuses, each with the generation at which it was appended, in that order.

A generation is the number of a task's stream event (``_seq``, :mod:`a2a.core.replay`):
one counter, advanced in the task's compare-and-swap save. Every published save numbers
its events there: a client message it adds (a follow-up, :data:`CLIENT_MESSAGES`) is a
``message`` entry, its status update a ``status`` entry, each artifact update advances
the counter without an entry (gaps are expected) and marks the artifact's start and end
generations. The entries are kept with the task (``_timeline``, at most
``A2A_MAX_HISTORY`` of them, the oldest go first), so every store keeps, copies, exports
and imports them as part of the task.

A task saved by an earlier release has no ``_timeline``: :func:`entries` makes one from
what it kept (:func:`legacy`). Only 1.1 callers are shown it (:mod:`a2a.protocol.v11`).
"""

from __future__ import annotations

from typing import Any

from a2a.protocol import limits
from a2a.protocol.model import Message, Task
from stores.fields import ARTIFACT_GENERATIONS, CLIENT_MESSAGES, TIMELINE, task_generation

#: ``{"g": generation, "message": Message}`` or ``{"g": generation, "status": TaskStatus}``.
Entry = dict[str, Any]


def entries(task: Task) -> list[Entry]:
    """The timeline of ``task`` as kept, or as :func:`legacy` makes it for a task kept
    without one."""
    kept = task.get(TIMELINE)
    return kept if isinstance(kept, list) else legacy(task)


def legacy(task: Task) -> list[Entry]:
    """The timeline of a task an earlier release saved: its history's messages as
    ``message`` entries at generations 1, 2, ... (the first one created the task, at 1;
    an agent message's state was not kept, so it stays a message) and, when the task
    has moved since, its status as a ``status`` entry at its generation (the agent
    message it carries is not repeated). Generations stay at most the task's: when
    they do not fit, the oldest messages are left out (the history still has them)."""
    generation = task_generation(task)
    status = task.get("status")
    status = status if isinstance(status, dict) else {}
    said = status.get("message")
    history = [m for m in task.get("history") or () if isinstance(m, dict) and m != said]
    made: list[Entry] = []
    if generation > 1 and status:
        made.append({"g": generation, "status": status})
    room = generation - len(made)  # generations 1 .. room are free for the messages
    kept = history[len(history) - room :] if room > 0 else []
    return [*({"g": 1 + i, "message": m} for i, m in enumerate(kept)), *made]


def created(task: Task) -> list[Entry]:
    """The timeline of a task being created (generation 1): the client's message."""
    first = next((m for m in task.get("history") or () if isinstance(m, dict) and m.get("role") == "user"), None)
    return [{"g": 1, "message": first}] if first is not None else []


def added_messages(task: Task) -> list[Message]:
    """The client messages a change added to ``task`` (removed from it: never saved)."""
    added = task.pop(CLIENT_MESSAGES, None)
    return [m for m in added if isinstance(m, dict)] if isinstance(added, list) else []


def append(task: Task, numbered: list[dict[str, Any]], messages: list[Message]) -> None:
    """Record a save's numbered stream events (:mod:`a2a.core.replay`'s entries) in
    ``task``'s timeline, in place: each ``"m"`` event the next of ``messages``, each
    ``"s"`` event the task's status, each ``"a"`` event its artifact's generations."""
    timeline = list(entries(task))
    spans = dict(task.get(ARTIFACT_GENERATIONS) or {})
    pending = iter(messages)
    for event in numbered:
        kind, generation = event.get("k"), event["s"]
        if kind == "m":
            timeline.append({"g": generation, "message": next(pending)})
        elif kind == "s":
            timeline.append({"g": generation, "status": event.get("status") or {}})
        elif kind == "a":
            artifact_id = (event.get("artifact") or {}).get("artifactId", "")
            start = (spans.get(artifact_id) or [generation])[0]
            spans[artifact_id] = [start, generation if event.get("last") else None]
    limit = limits.max_history()
    task[TIMELINE] = timeline[len(timeline) - limit :] if len(timeline) > limit else timeline
    if spans:
        task[ARTIFACT_GENERATIONS] = spans


def with_timeline(task: Task, timeline_length: int | None) -> Task:
    """``task`` (a copy) with its timeline kept in it (:func:`entries`): at most
    ``timeline_length`` most recent entries (spec 3.2.4: None keeps all, 0 none)."""
    kept = entries(task)
    if timeline_length is not None:
        kept = kept[len(kept) - timeline_length :] if timeline_length else []
    return {**task, TIMELINE: kept}


def artifact_generations(task: Task, artifact_id: str) -> tuple[int | None, int | None]:
    """The generations at which the artifact first appeared and was completed (None:
    unknown, or still streaming)."""
    spans = task.get(ARTIFACT_GENERATIONS)
    span = spans.get(artifact_id) if isinstance(spans, dict) else None
    if not isinstance(span, list) or len(span) != 2:
        return None, None
    return span[0], span[1]
