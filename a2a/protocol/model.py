"""The canonical representation inside the app, whatever dialect came in.

Tasks, Messages and Parts are plain JSON-ready dicts in the stored shape (the A2A
v0.3 wire shape, which is also what toolnexus stores): lowercase states, ``kind``
discriminators, camelCase keys. Each dialect module converts to and from it at the
edge; operations and stores only ever see this shape.

The parsed parameters of each operation are small dataclasses, so operations never
look at wire JSON.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from a2a.protocol.errors import InvalidParamsError
from stores.base import TERMINAL_STATES, Task
from stores.fields import task_state
from stores.timestamps import now_iso

Message = dict[str, Any]
Part = dict[str, Any]
Artifact = dict[str, Any]

#: States in which the task waits for the client (blocking calls return on them too).
INTERRUPTED_STATES = frozenset({"input-required", "auth-required"})
#: States after which SendMessage stops waiting.
SETTLED_STATES = TERMINAL_STATES | INTERRUPTED_STATES
#: The largest int64 (a proto ``int64`` field: the 1.1 draft's generations).
INT64_MAX = 2**63 - 1

__all__ = [
    "INTERRUPTED_STATES",
    "SETTLED_STATES",
    "TERMINAL_STATES",
    "Artifact",
    "Message",
    "Part",
    "Task",
    "new_id",
    "new_task",
    "now_iso",
    "task_state",
]


def new_id() -> str:
    return str(uuid.uuid4())


def new_task(message: Message, *, context_id: str, metadata: dict[str, Any] | None = None) -> Task:
    """A fresh ``submitted`` task whose history starts with ``message``."""
    task_id = new_id()
    task: Task = {
        "kind": "task",
        "id": task_id,
        "contextId": context_id,
        "status": {"state": "submitted", "timestamp": now_iso()},
        "history": [{**message, "taskId": task_id, "contextId": context_id}],
    }
    if metadata:
        task["metadata"] = metadata
    return task


def set_status(task: Task, state: str, message: Message | None = None) -> Task:
    """Move ``task`` to ``state`` now (in place), with an optional status message."""
    status: dict[str, Any] = {"state": state, "timestamp": now_iso()}
    if message is not None:
        status["message"] = message
    task["status"] = status
    return task


def agent_message(content: str | list[Part], *, task: Task | None = None) -> Message:
    """An agent-role message (of one text part, or of ``content``'s parts), tied to
    ``task`` when given."""
    parts = [text_part(content)] if isinstance(content, str) else content
    message: Message = {"kind": "message", "messageId": new_id(), "role": "agent", "parts": parts}
    if task is not None:
        message["taskId"] = task["id"]
        if task.get("contextId"):
            message["contextId"] = task["contextId"]
    return message


def text_part(text: str) -> Part:
    return {"kind": "text", "text": text}


def data_part(data: Any) -> Part:
    return {"kind": "data", "data": data}


def message_text(message: Message) -> str:
    """The text parts of a message, joined by newlines."""
    return "\n".join(p["text"] for p in message.get("parts", ()) if p.get("kind") == "text")


def with_history(task: Task, history_length: int | None) -> Task:
    """The task with at most ``history_length`` recent messages (spec 3.2.4):
    None keeps all, 0 drops the field."""
    if history_length is None or "history" not in task:
        return task
    task = dict(task)
    if history_length == 0:
        del task["history"]
    else:
        task["history"] = task["history"][-history_length:]
    return task


@dataclass
class StreamItem:
    """One item of a stream, before a dialect renders it.

    ``kind``: "task" (the snapshot that opens a stream), "message", "status" (a status
    update of ``task``; ``final`` on the last), "artifact" (``artifact`` added to
    ``task``, or appended to with ``append``), or "keepalive" (nothing happened).
    ``seq``: the task's number of this event (resumable streams: the SSE ``id``), None
    for an item that has none; ``metadata``: added to the rendered event's metadata.
    """

    kind: str
    task: Task | None = None
    message: Message | None = None
    artifact: Artifact | None = None
    append: bool = False
    last_chunk: bool = False
    final: bool = False
    seq: int | None = None
    metadata: dict[str, Any] | None = None


def with_item_metadata(rendered: dict[str, Any], item: StreamItem) -> dict[str, Any]:
    """``rendered`` (one stream event, as a dialect renders it) with ``item.metadata``
    merged into its own ``metadata`` (in place)."""
    if item.metadata:
        rendered["metadata"] = {**(rendered.get("metadata") or {}), **item.metadata}
    return rendered


# --- Parsed operation parameters (dialect-free) ---------------------------------


@dataclass
class SendParams:
    """SendMessage's and SendStreamingMessage's: the message, and how to answer it."""

    message: Message
    blocking: bool = True
    history_length: int | None = None
    accepted_output_modes: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    #: A push notification config for the task (its ``task_id`` is filled in once the task exists).
    push_config: PushConfigParams | None = None
    #: A follow-up's precondition (A2A 1.1 ``ifGenerationMatch``): the task's generation it expects.
    if_generation_match: int | None = None
    #: How many recent timeline entries the answer shows (A2A 1.1 ``timelineLength``).
    timeline_length: int | None = None


@dataclass
class GetParams:
    """GetTask's and SubscribeToTask's: the task, and from where to give it."""

    id: str
    history_length: int | None = None
    #: SubscribeToTask: the number of the last stream event the client saw (resumable
    #: streams, :mod:`a2a.core.replay`), None for a new stream.
    last_event_id: int | None = None
    #: GetTask long-poll (A2A 1.1 ``currentGeneration``): answer once the task's
    #: generation is past it (or the wait times out); None answers at once.
    current_generation: int | None = None
    #: How many recent timeline entries the answer shows (A2A 1.1 ``timelineLength``).
    timeline_length: int | None = None


@dataclass
class CancelParams:
    """CancelTask's: the task, and the request's metadata."""

    id: str
    metadata: dict[str, Any] | None = None


@dataclass
class ListParams:
    """ListTasks': which tasks (all filters optional), one page of them, and how much of
    each (its last ``history_length`` messages; its artifacts or not)."""

    context_id: str | None = None
    state: str | None = None
    updated_after: dt.datetime | None = None
    page_size: int = 50
    page_token: str | None = None
    history_length: int | None = None
    include_artifacts: bool = False
    #: How many recent timeline entries each task shows (A2A 1.1 ``timelineLength``).
    timeline_length: int | None = None


@dataclass
class PushConfigParams:
    """A push notification config to create (or replace, when ``id`` names an existing
    one). ``authentication`` is ``{"schemes": [...], "credentials"?: str}``;
    ``dialect`` is the protocol version the deliveries are rendered in."""

    task_id: str
    url: str
    id: str | None = None
    token: str | None = None
    authentication: dict[str, Any] | None = None
    dialect: str = "0.3"


@dataclass
class PushConfigRef:
    """One push notification config of a task; ``id`` None means the task's first one
    (v0.3 ``tasks/pushNotificationConfig/get`` without ``pushNotificationConfigId``)."""

    task_id: str
    id: str | None = None


@dataclass
class PushConfigListParams:
    """ListTaskPushNotificationConfigs': one page of a task's configs."""

    task_id: str
    page_size: int | None = None
    page_token: str | None = None


# --- Validation helpers shared by the dialects ----------------------------------


def want_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidParamsError(f"must be an object, not {json_type(value)}", field=path)
    return value


@overload
def want_string(
    value: Any, path: str, *, required: Literal[True] = ..., max_length: int = ..., setting: str | None = ...
) -> str: ...
@overload
def want_string(
    value: Any, path: str, *, required: bool, max_length: int = ..., setting: str | None = ...
) -> str | None: ...
def want_string(
    value: Any, path: str, *, required: bool = True, max_length: int = 1024, setting: str | None = None
) -> str | None:
    """A string at ``path`` of at most ``max_length`` characters (``setting``, when
    given, names the setting the limit comes from in the error)."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise InvalidParamsError(
            "is required and must be a non-empty string"
            if value in (None, "")
            else f"must be a string, not {json_type(value)}",
            field=path,
        )
    if len(value) > max_length:
        raise InvalidParamsError(f"is longer than {max_length} characters{_named(setting)}", field=path)
    return value


def want_int(
    value: Any, path: str, *, minimum: int | None = None, maximum: int | None = None, setting: str | None = None
) -> int | None:
    if value is None:
        return None
    # ProtoJSON allows an int32 to arrive as a string of digits (not thousands of them:
    # int() refuses over 4300 digits, and no int64 has more than 20 characters).
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        if len(value) > 20:
            raise InvalidParamsError("is not an integer in range", field=path)
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParamsError(f"must be an integer, not {json_type(value)}", field=path)
    if minimum is not None and value < minimum:
        raise InvalidParamsError(f"must be at least {minimum}", field=path)
    if maximum is not None and value > maximum:
        raise InvalidParamsError(f"must be at most {maximum}{_named(setting)}", field=path)
    return value


def _named(setting: str | None) -> str:
    return f" (the {setting} setting)" if setting else ""


def want_bool(value: Any, path: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise InvalidParamsError(f"must be true or false, not {json_type(value)}", field=path)


def want_string_list(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParamsError("must be a list of strings", field=path)
    return value


def shown(value: Any, limit: int = 40) -> str:
    """``value`` as an error message may quote it: a string or number cut to ``limit``
    characters, anything else by its JSON type (input is never echoed at length)."""
    if isinstance(value, str):
        return repr(value if len(value) <= limit else f"{value[:limit]}...")
    if value is None or isinstance(value, bool | int | float):
        text = repr(value)
        return text if len(text) <= limit else f"{text[:limit]}..."
    return json_type(value)


def json_type(value: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def pick(obj: dict[str, Any], camel: str) -> Any:
    """``obj[camel]``, or the ProtoJSON proto-name spelling (``context_id``)."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel))


@functools.cache  # the protocol's own field names only: a few dozen
def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
