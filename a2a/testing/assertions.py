"""Assertions on tasks and event sequences as they come off the wire, in either version:
a state is written the short way (``"completed"``, ``"input-required"``) whether the
server said ``TASK_STATE_COMPLETED`` (v1.0) or ``completed`` (v0.3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: The kind of an event that carries no state, by its v1.0 key or v0.3 ``kind``.
_EVENT_KINDS = {
    "artifactUpdate": "artifact",
    "artifact-update": "artifact",
    "message": "message",
}


def short_state(state: str) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``; a v0.3 state is kept."""
    if state.startswith("TASK_STATE_"):
        return state[len("TASK_STATE_") :].lower().replace("_", "-")
    return state


def task_of(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """The task in a ``SendMessage`` result (v1.0 ``{"task": ...}``), a JSON-RPC envelope
    (its ``result``), or the task itself."""
    if "result" in value and "jsonrpc" in value:
        value = value["result"]
    return value["task"] if "task" in value and "status" not in value else value


def state_of(task: Mapping[str, Any]) -> str:
    """A task's state, the short way."""
    return short_state(task_of(task)["status"]["state"])


def assert_task_state(task: Mapping[str, Any], state: str) -> Mapping[str, Any]:
    """AssertionError (with the task's status) unless the task is in ``state``; the task."""
    found = task_of(task)
    assert state_of(found) == short_state(state), f"task in {state_of(found)!r}, not {state!r}: {found['status']}"
    return found


def event_kind(frame: Mapping[str, Any]) -> str:
    """What one stream event says: the state of a task or status update, else
    ``artifact`` or ``message``. Takes a JSON-RPC frame, a v1.0 stream response or a v0.3 event."""
    event = frame["result"] if "jsonrpc" in frame and "result" in frame else frame
    if "kind" in event:  # v0.3: one object with a kind
        kind = event["kind"]
        return short_state(event["status"]["state"]) if kind in ("task", "status-update") else _EVENT_KINDS[kind]
    ((key, value),) = event.items()  # v1.0: a one-of
    return short_state(value["status"]["state"]) if key in ("task", "statusUpdate") else _EVENT_KINDS[key]


def event_kinds(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """:func:`event_kind` of each event."""
    return [event_kind(event) for event in events]


def assert_events(events: Sequence[Mapping[str, Any]], expected: Sequence[str]) -> None:
    """AssertionError unless the events say ``expected`` in order (``["submitted", "working",
    "artifact", "completed"]``); the states may be written either way."""
    assert event_kinds(events) == [short_state(kind) for kind in expected], events


def artifact_text(task: Mapping[str, Any]) -> str:
    """The text parts of a task's artifacts, joined (in order)."""
    artifacts = task_of(task).get("artifacts") or []
    return "".join(part["text"] for artifact in artifacts for part in artifact["parts"] if "text" in part)
