"""What a handler returns or raises, and how it becomes the task's artifacts, status
message and metadata."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings as django_settings

from a2a.protocol.errors import InvalidAgentResponseError
from a2a.protocol.model import (
    Artifact,
    Part,
    Task,
    message_text,
    new_id,
)

#: A status message: text, or a list of parts.
Content = str | list[Part]


class Reply:
    """Returned by a handler: answer with a direct Message rather than a result."""

    def __init__(self, content: Content) -> None:
        self.parts = as_parts(content)


class TaskOutcome(Exception):
    """Raised by a handler to end its run in :attr:`state`, with its text or parts (if
    any) as the status message, which the client reads as it is."""

    state = "failed"
    in_history = False

    def __init__(self, content: Content | None = None, *, metadata: dict[str, Any] | None = None) -> None:
        self.parts = as_parts(content) if content is not None else []
        #: Merged into the task's metadata, as a :class:`Result`'s is.
        self.metadata: dict[str, Any] = dict(metadata or {})
        #: Tasks the status message refers to (``referenceTaskIds``: a delegation's remote task).
        self.reference_task_ids: list[str] = []
        super().__init__(message_text({"parts": self.parts}))


class Interrupt(TaskOutcome):
    """Raised by a handler to pause the task until the client answers."""

    state = "input-required"
    in_history = True


class InputRequired(Interrupt):
    """The task needs more input from the client (``input-required``)."""


class AuthRequired(Interrupt):
    """The task needs the client to authenticate somewhere (``auth-required``)."""

    state = "auth-required"


class TaskFailed(TaskOutcome):
    """The task failed; the text is what the client reads (no traceback is logged)."""

    state = "failed"


class TaskRejected(TaskOutcome):
    """The agent will not do this task (``rejected``)."""

    state = "rejected"


def as_parts(content: Content) -> list[Part]:
    """``content`` (text, or a list of parts) as parts; InvalidAgentResponseError for anything else."""
    if isinstance(content, str):
        return [{"kind": "text", "text": content}]
    if isinstance(content, list) and content and all(_is_part(p) for p in content):
        return list(content)
    raise InvalidAgentResponseError(f"expected text or a list of parts, not {str(content)[:80]!r}")


HandlerResult = str | Part | Artifact | list[Any] | None


@dataclass
class Result:
    """Returned by a handler: ``result`` (anything above) as the artifacts, ``message``
    (text or parts) as the completed task's status message, and ``metadata`` merged
    into the task's metadata (e.g. the LLM handler's token usage)."""

    result: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    message: Content | None = None

    @property
    def message_parts(self) -> list[Part] | None:
        return as_parts(self.message) if self.message is not None else None


def result_message(result: Any) -> list[Part] | None:
    """The parts of the completed task's status message for what a handler returned: a
    :class:`Result`'s ``message``, or a delegated task's own final status message (a
    remote agent that answers in its status message: the answer comes across); else None."""
    if isinstance(result, Result):
        return result.message_parts
    if isinstance(result, dict) and result.get("kind") == "task":
        message = (result.get("status") or {}).get("message")
        parts = message.get("parts") if isinstance(message, dict) else None
        return list(parts) if parts and all(_is_part(p) for p in parts) else None
    return None


def with_result_metadata(change: Callable[[Task], Task | None], result: Any) -> Callable[[Task], Task | None]:
    """``change``, then the metadata of a :class:`Result` (or of a :class:`TaskOutcome`
    raised) merged into the task's (a no-op for any other result)."""
    metadata = (
        plain_json([result.metadata])[0] if isinstance(result, Result | TaskOutcome) and result.metadata else None
    )
    if not metadata:
        return change

    def merged(task: Task) -> Task | None:
        new = change(task)
        if new is not None:
            new["metadata"] = {**(new.get("metadata") or {}), **metadata}
        return new

    return merged


def failure_message(exc: BaseException) -> str:
    """What a client reads when the handler raised ``exc``: the text of an explicit
    :class:`TaskFailed` (or of this package's own errors about a handler's result);
    for anything else only the exception's type ("The agent failed: KeyError"), since
    its text may quote internals (paths, settings, SQL). With ``DEBUG = True`` also
    its text and where it was raised."""
    if isinstance(exc, (TaskOutcome, InvalidAgentResponseError)):
        return str(exc) or type(exc).__name__
    text = f"The agent failed: {type(exc).__name__}"
    if getattr(django_settings, "DEBUG", False):
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" ({Path(frames[-1].filename).name}, line {frames[-1].lineno}, in {frames[-1].name})" if frames else ""
        text = f"{text}: {str(exc)[:300]}{where}"
    return text


def _is_part(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") in ("text", "file", "data")


def to_artifacts(result: Any) -> list[Artifact]:
    """Turn what a handler returned into the task's artifacts; InvalidAgentResponseError
    for anything else."""
    if isinstance(result, Result):
        result = result.result
    if isinstance(result, Reply):
        raise InvalidAgentResponseError("a Reply is a handler's answer, not an artifact")
    if result is None or (isinstance(result, dict) and result.get("kind") == "task"):
        return []  # (a delegated task, returned: its artifacts are on the local task already)
    if isinstance(result, str):
        return [{"artifactId": new_id(), "parts": [{"kind": "text", "text": result}]}]
    items = result if isinstance(result, list) else [result]
    if items and all(_is_part(i) for i in items):
        return plain_json([{"artifactId": new_id(), "parts": list(items)}])
    artifacts = []
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("parts"), list) and all(map(_is_part, item["parts"]))):
            raise InvalidAgentResponseError(
                f"the handler returned {type(item).__name__} {str(item)[:80]!r}; expected text, parts or artifacts"
            )
        artifacts.append({**item, "artifactId": item.get("artifactId") or new_id()})
    return plain_json(artifacts)


def plain_json(artifacts: list[Artifact]) -> list[Artifact]:
    """The artifacts as plain JSON values (every store saves the same thing), or
    InvalidAgentResponseError when they hold something JSON cannot."""
    try:
        return orjson.loads(orjson.dumps(artifacts))
    except TypeError as exc:
        raise InvalidAgentResponseError(f"the handler returned something that is not JSON: {exc}") from None
