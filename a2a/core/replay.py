"""Resumable streams: every stream event of a task numbered, the last ones kept with it.

Every published save of a task (:mod:`a2a.core.lifecycle`) numbers the stream events it
makes, per task and monotonic (``_seq``; 1 is the task as created), and, once a stream
follows the task (:func:`follow`), appends them to the task's bounded log (``_events``,
``A2A_STREAM_REPLAY_EVENTS`` entries and ``A2A_STREAM_REPLAY_MAX_AGE`` seconds at most)
**in the same compare-and-swap save**: the log is part of the task, so it survives a
restart, every process sees it, and every store keeps it with no store API of its own.
Lease renewals publish nothing, so they number nothing: ``_seq`` is contiguous over
the task's steps (its generation, A2A 1.1), ``_version`` is not; a client message added
to the task (a follow-up) takes a number no stream shows. A task no stream ever followed keeps no log: a
number is only ever shown on a stream, so no client holds one to resume after.

A stream event (an *entry*) is what one stream item shows: ``{"s": seq, "at": time,
"k": "s", "status": ...}`` (a status update) or ``{"s", "at", "k": "a", "artifact",
"append", "last"}`` (an artifact update), or ``{"s", "at", "k": "m"}`` (a client
message, numbered and never shown: :mod:`a2a.protocol.timeline` keeps it). One save can make several (a result's new
artifacts, then its status), each its own number, so a stream can be cut between them.

A client that reconnects names the last number it saw (SSE ``Last-Event-ID``, or the
request metadata key :data:`KEY`) and gets the logged entries after it; when the log no
longer reaches back that far it gets the gap marker and then the whole task
(:func:`gap`). The extension is declared on the card as :data:`URI`
(docs/extensions/resumable-streams.md).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable
from typing import Any

from a2a.conf import a2a_settings
from a2a.core.events import TaskEvent
from a2a.protocol import timeline
from a2a.protocol.errors import InvalidParamsError
from a2a.protocol.model import StreamItem
from stores.base import Task
from stores.fields import EVENT_LOG, EVENT_SEQ, task_seq, task_state

#: The extension's URI (the card's ``capabilities.extensions``, the ``A2A-Extensions``
#: header a client activates it with).
URI = "https://django-a2a-agent.readthedocs.io/extensions/resumable-streams/v1"
#: The metadata key: on each stream event of a client that activated the extension
#: (``{"seq": n}``, and ``{"gap": {...}}`` on the gap marker), and in a
#: ``SubscribeToTask`` request's ``metadata`` (``{"lastEventId": n}``).
KEY = URI
#: The card's declaration (``capabilities.extensions``): optional, a client that does
#: not use it sees plain streams.
CARD_EXTENSION = {
    "uri": URI,
    "description": "Resumable streams: every stream event carries the task's sequence number (SSE id, and "
    "metadata[uri].seq for clients that activate it); SubscribeToTask resumes after Last-Event-ID or "
    "metadata[uri].lastEventId, with a gap marker past the kept events.",
    # "required" left out: false is its default, and a signed card must read back the same
    # through an SDK that drops defaults before it checks the signature.
}

Entry = dict[str, Any]


def _changed_artifacts(before: list[dict[str, Any]], task: Task) -> Iterable[dict[str, Any]]:
    old = {a.get("artifactId"): a for a in before}
    return (a for a in task.get("artifacts") or () if old.get(a.get("artifactId")) != a)


def _entries(event: TaskEvent, before_artifacts: list[dict[str, Any]]) -> list[Entry]:
    """The stream events ``event`` makes (unnumbered), as a stream of its version shows them."""
    if event.kind == "artifact" and event.artifact is not None:
        return [{"k": "a", "artifact": event.artifact, "append": event.append, "last": event.last_chunk}]
    made: list[Entry] = [
        {"k": "a", "artifact": a, "append": False, "last": True}
        for a in _changed_artifacts(before_artifacts, event.task)
    ]
    made.append({"k": "s", "status": event.task.get("status") or {}})
    return made


def record(new: Task, event: TaskEvent, before_artifacts: list[dict[str, Any]]) -> tuple[Entry, ...]:
    """Number the stream events of ``event`` (the save of ``new``, whose version before
    had ``before_artifacts``), keep them in ``new``'s log (bounded) and return them. In
    place, before the save: the log is saved with the transition."""
    now = round(time.time(), 3)
    seq = task_seq(new) or 1  # (a task saved before sequence numbers: from 1 on)
    messages = timeline.added_messages(new)
    # A client message added (a follow-up) is a step too (A2A 1.1 draft, spec 3.2.7): its
    # number comes first, and no stream shows it (:func:`visible`).
    made = [*({"k": "m"} for _ in messages), *_entries(event, before_artifacts)]
    for entry in made:
        seq += 1
        entry["s"], entry["at"] = seq, now
    new[EVENT_SEQ] = seq
    timeline.append(new, made, messages)
    if EVENT_LOG not in new:  # no stream follows the task (see follow)
        return tuple(made)
    keep = a2a_settings.STREAM_REPLAY_EVENTS
    oldest = now - a2a_settings.STREAM_REPLAY_MAX_AGE
    log = [*_fresh(new.get(EVENT_LOG), oldest), *made][-keep:] if keep else []
    if log:
        new[EVENT_LOG] = log
    else:
        new.pop(EVENT_LOG, None)
    return tuple(made)


def follow(task: Task) -> Task:
    """Mark ``task`` (in place, before a save) as one a stream follows: from then on its
    stream events are kept in its log (:func:`record`), for a client that reconnects."""
    task.setdefault(EVENT_LOG, [])
    return task


def followed(task: Task) -> bool:
    """Whether a stream follows ``task`` (:func:`follow`): its events are kept."""
    return EVENT_LOG in task


def _fresh(log: Any, oldest: float) -> list[Entry]:
    """The well-formed entries of ``log`` saved at ``oldest`` or later."""
    if not isinstance(log, list):
        return []
    return [e for e in log if isinstance(e, dict) and isinstance(e.get("s"), int) and e.get("at", 0) >= oldest]


def after(task: Task, last: int) -> list[Entry] | None:
    """The logged stream events of ``task`` after number ``last``, in order; None when
    the log no longer reaches back to ``last + 1`` (trimmed, or too old)."""
    if last >= task_seq(task):
        return []
    newer = [e for e in _fresh(task.get(EVENT_LOG), time.time() - a2a_settings.STREAM_REPLAY_MAX_AGE) if e["s"] > last]
    return visible(newer) if newer and newer[0]["s"] == last + 1 else None


def visible(entries: Iterable[Entry]) -> list[Entry]:
    """The stream events of ``entries`` a stream shows: not a client message's number
    (spec 3.2.8: a client message is seen through GetTask, not as a stream event)."""
    return [e for e in entries if e.get("k") != "m"]


def logged(event: TaskEvent, sent: int) -> list[Entry] | None:
    """What ``event`` brings to a stream that sent number ``sent``, read from the events'
    numbers: its own entries when they follow on, else its task's log (when it carries
    one: events from other processes do not); None when neither tells (the stream
    catches up from versions)."""
    if not sent:
        return None  # a stream of a task saved before sequence numbers
    entries = event.entries
    if entries and entries[0]["s"] <= sent + 1 <= entries[-1]["s"] + 1:
        return visible(e for e in entries if e["s"] > sent)
    if EVENT_LOG in event.task or event.kind == "sync":
        return after(event.task, sent)
    return None


def item(task: Task, entry: Entry, until: frozenset[str]) -> StreamItem:
    """The stream item of logged ``entry`` of ``task`` (``final``: its state is one of ``until``)."""
    if entry.get("k") == "a":
        return StreamItem(
            "artifact",
            task=task,
            artifact=entry.get("artifact") or {},
            append=bool(entry.get("append")),
            last_chunk=bool(entry.get("last")),
            seq=entry["s"],
        )
    status = entry.get("status") or {}
    shown = {"id": task["id"], "contextId": task.get("contextId", ""), "status": status}
    return StreamItem("status", task=shown, final=task_state(shown) in until, seq=entry["s"])


def gap(task: Task, last: int) -> list[StreamItem]:
    """What a stream resumed after number ``last`` starts with when the log no longer
    reaches back to it: the gap marker (a status update of the task's status, with no
    number, marked ``{KEY: {"gap": {"after": last, "seq": <the task's>}}}``) and then
    the whole task (numbered as its last event)."""
    seq = task_seq(task)
    marker = StreamItem("status", task=task, metadata={KEY: {"gap": {"after": last, "seq": seq}}})
    return [marker, StreamItem("task", task=task, seq=seq)]


def last_event_id(header: str, metadata: Any = None) -> int | None:
    """The number a reconnecting client last saw: the request metadata's
    ``{KEY: {"lastEventId": n}}`` or the ``Last-Event-ID`` header (gRPC: the
    ``last-event-id`` metadata); None when it names none. InvalidParamsError for
    anything but a non-negative whole number (:func:`whole_number`)."""
    named = metadata.get(KEY) if isinstance(metadata, dict) else None
    value: Any = named.get("lastEventId") if isinstance(named, dict) else None
    where = f"metadata[{KEY!r}].lastEventId"
    if value is None:
        value, where = (header.strip() or None), "Last-Event-ID"
    if value is None:
        return None
    number = whole_number(value)
    if number is None:
        raise InvalidParamsError(
            f"must be the number of a stream event (a non-negative whole number), not {repr(value)[:80]}",
            field=where,
        )
    return number


#: A number as text: digits, and a fraction of zeros (``2.0``, what a float prints).
_WHOLE = re.compile(r"(\d{1,18})(?:\.0+)?")
#: The largest float every smaller whole number of which a float holds exactly.
_EXACT_FLOAT = 2.0**53


def whole_number(value: Any) -> int | None:
    """``value`` as a non-negative int when it is one: an int, an integral float (a
    client that keeps metadata as a protobuf ``Struct``, such as the official SDK's,
    sends back the number it was given as ``2.0``), or their text (``"2"``, ``"2.0"``);
    else None (a fraction, a negative, a bool, anything else)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer() and 0 <= value <= _EXACT_FLOAT:
        value = int(value)
    elif isinstance(value, str) and value.isascii() and (match := _WHOLE.fullmatch(value)):
        value = int(match.group(1))
    return value if isinstance(value, int) and value >= 0 else None


def numbered(item: StreamItem) -> StreamItem:
    """``item`` with its number in its metadata (for a client that activated the extension)."""
    if item.seq is None:
        return item
    mine = (item.metadata or {}).get(KEY) or {}
    return dataclasses.replace(item, metadata={**(item.metadata or {}), KEY: {**mine, "seq": item.seq}})
