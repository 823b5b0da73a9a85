"""The fields of a stored task that the stores read: its id (:func:`check_task`),
``_version``, ``status.state`` and ``status.timestamp``; and the names of the private
fields (a key starting with ``_``: never rendered) the ``a2a`` app and the stores keep
on a task, declared here once. Each accessor answers for a task of any shape (a default
for a missing or mistyped field), never raising."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from stores.timestamps import parse_timestamp

if TYPE_CHECKING:  # stores.base reads a task's fields through this module
    from stores.base import Task

# --- the private fields -----------------------------------------------------------------

#: The task's version: 1 when created, one more per save (the stores' compare-and-set).
VERSION = "_version"
#: When the task was created (an ISO timestamp).
CREATED = "_created"
#: Who the task belongs to, the tenant it was created under, and the agent that created
#: it (:mod:`stores.scope` reads them).
OWNER = "_owner"
TENANT = "_tenant"
AGENT = "_agent"
#: The lease of the process running the task (a2a.core.leases).
LEASE = "_lease"
#: What the task keeps of the call that brought its latest message (a2a.handlers.call_record).
CALL = "_call"
#: Set on a task settled by a handler's ``Reply``: a blocking send answers with its message.
REPLY = "_reply"
#: The W3C trace context of the span that created the task (a2a.core.tracing).
TRACE = "_trace"
#: Set by staff on a task retention must never expire (stores.retention).
KEEP = "_keep"
#: The task's stream sequence: the number of the last stream event it published
#: (a2a.core.replay). Kept by every store as part of the task.
EVENT_SEQ = "_seq"
#: The task's bounded log of its last stream events (a2a.core.replay), saved with the
#: transition that made them: what a reconnecting stream replays. Never rendered.
EVENT_LOG = "_events"
#: The bytes of file content the task's messages carried (a2a.core.files), held to
#: A2A_FILES_MAX_TASK_BYTES; a task with files has its offloaded files deleted with it.
FILE_BYTES = "_fileBytes"
#: A framework agent's paused run, kept while the task waits for an answer
#: (a2a.handlers.frameworks.awaiting): the next message resumes it, in any process.
PAUSED = "_paused"
#: On a task the A2A client parsed, the agent's generation for it (a2a.client.generation):
#: the agent's own number, never this app's (that is ``_seq``).
GENERATION = "_generation"
#: The task's timeline (A2A 1.1 draft, spec 3.2.8; a2a.protocol.timeline): its client
#: messages and agent statuses, each with the event number (generation) it was given,
#: saved with the transition that appended them.
TIMELINE = "_timeline"
#: The generations at which each artifact first appeared and was completed
#: (``{artifactId: [start, end or None]}``; a2a.protocol.timeline).
ARTIFACT_GENERATIONS = "_artifactGenerations"
#: Set by a change on the client messages it adds to the task (a follow-up), read and
#: removed by the save that numbers them (a2a.core.replay): never stored.
CLIENT_MESSAGES = "_clientMessages"


def check_task(task: Any) -> str:
    """Return the id of a savable task, or raise ValueError saying what is wrong."""
    if not isinstance(task, dict):
        raise ValueError(f"a task must be a dict, not {type(task).__name__}")
    task_id = task.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise ValueError("a task needs a non-empty string 'id'")
    return task_id


def task_version(task: Task | None) -> int:
    """The task's ``_version`` (0 for None or a task saved without one)."""
    version = task.get(VERSION, 0) if isinstance(task, dict) else 0
    return version if isinstance(version, int) and not isinstance(version, bool) else 0


def task_call(task: Task) -> dict[str, Any]:
    """The task's ``_call`` record ({} when it has none)."""
    call = task.get(CALL)
    return call if isinstance(call, dict) else {}


def task_binding(task: Task) -> str:
    """Where the task's latest message came from, for a person: ``MCP``, or the A2A
    binding and version (``A2A JSONRPC 1.0``); "" for a task saved without a ``_call``."""
    call = task_call(task)
    binding = str(call.get("binding") or "")
    if binding in ("", "mcp"):
        return binding.upper()
    named = _BINDINGS.get(binding, binding)
    return f"A2A {named} {call.get('version') or ''}".strip()


#: The protocol's names of the bindings a ``_call`` records in lower case.
_BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC", "browser": "agent page"}


def task_state(task: Task) -> str:
    """The task's ``status.state`` ("unknown" when it has none)."""
    status = task.get("status")
    return status.get("state", "unknown") if isinstance(status, dict) else "unknown"


def task_updated(task: Task) -> str:
    """The task's last status change as an ISO string ("" when it has none)."""
    status = task.get("status")
    ts = status.get("timestamp") if isinstance(status, dict) else None
    return ts if isinstance(ts, str) else ""


def task_updated_at(task: Task) -> dt.datetime | None:
    """:func:`task_updated` as a datetime (None when missing or not a timestamp)."""
    try:
        return parse_timestamp(task_updated(task))
    except ValueError:
        return None


#: The task metadata key under which a task lists the remote tasks its handler started
#: (a2a.handlers.delegation writes it; the admin shows it). Reserved: a client's
#: metadata does not set it.
DELEGATIONS = "a2a.delegations"
_RECORD_FIELDS = ("agent", "url", "taskId", "contextId", "state")


def task_delegations(task: Task) -> list[dict[str, str]]:
    """The remote tasks ``task`` started (:data:`DELEGATIONS`), each with its ``agent``,
    ``url`` (the remote card's, "" unless http or https), ``taskId``, ``contextId`` and
    ``state`` as strings; records of any other shape are skipped."""
    metadata = task.get("metadata")
    records = metadata.get(DELEGATIONS) if isinstance(metadata, dict) else None
    found = []
    for record in records if isinstance(records, list) else ():
        if not isinstance(record, dict) or not isinstance(record.get("taskId"), str):
            continue
        entry = {key: str(record.get(key) or "") for key in _RECORD_FIELDS}
        if not entry["url"].lower().startswith(("http://", "https://")):
            entry["url"] = ""  # a link a person follows: never javascript: or the like
        found.append(entry)
    return found


def task_seq(task: Task | None) -> int:
    """The task's ``_seq`` (0 for None or a task saved without one)."""
    seq = task.get(EVENT_SEQ, 0) if isinstance(task, dict) else 0
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else 0


def task_generation(task: Task) -> int:
    """The task's generation (A2A 1.1, spec 3.2.7): the number of its last stream event,
    ``_seq``, which grows by exactly 1 per event, so one counter serves both; 1 for a
    task saved before numbers (its next event is 2)."""
    return task_seq(task) or 1


def without_event_log(task: Task) -> Task:
    """``task`` without its event log (a copy when it has one): what the admin and an
    export show of it (the log repeats the task's statuses and artifacts)."""
    return {k: v for k, v in task.items() if k != EVENT_LOG} if EVENT_LOG in task else task


def joined_parts(parts: Any) -> list[tuple[int, Any]]:
    """A message's or artifact's ``parts`` as a person reads them, each with the index of
    its (first) part in ``parts``: consecutive text parts as one text (a streamed answer
    is appended one chunk, one text part, at a time; the chunks carry their own spaces),
    every other part as it is. What the admin, the dashboard and the agent page show."""
    joined: list[tuple[int, Any]] = []
    for index, part in enumerate(parts if isinstance(parts, list) else []):
        if _is_text(part) and joined and _is_text(joined[-1][1]):
            first, before = joined[-1]
            joined[-1] = (first, {**before, "text": before["text"] + part["text"]})
        else:
            joined.append((index, part))
    return joined


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("text"), str)
