"""The handler API: how the project's own code fulfils a Task.

Point ``A2A_HANDLER`` at a callable (a plain function or an ``async def``)::

    # myproject/agent.py
    from a2a.handlers import HandlerRequest

    def handle(request: HandlerRequest) -> str:
        return f"You said {request.text!r}"

It receives a :class:`HandlerRequest` and returns the result:

- a ``str``: one artifact with one text part;
- a part dict (``{"kind": "text", "text": ...}``, ``{"kind": "data", "data": ...}``,
  ``{"kind": "file", "file": {...}}``) or a list of parts: one artifact holding them;
- an artifact dict (``{"parts": [...], "name": ...}``) or a list of artifacts;
- ``None``: completed with no artifact.

Raising fails the task, with the exception's text as the status message. A sync
handler runs in a worker thread and may use the ORM; it should check
``request.cancelled`` now and then in long loops. An async handler runs on the
runner's event loop and is cancelled (``CancelledError``) when the task is.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.utils.module_loading import import_string

from ..protocol.errors import InvalidAgentResponseError
from ..protocol.model import Artifact, Message, Part, Task, message_text, new_id


@dataclass
class HandlerRequest:
    """What a handler gets: the message to answer and the task it belongs to."""

    message: Message
    task_id: str
    context_id: str
    history: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def text(self) -> str:
        """The message's text parts, joined by newlines."""
        return message_text(self.message)

    @property
    def parts(self) -> list[Part]:
        return list(self.message.get("parts", ()))

    @classmethod
    def for_task(cls, task: Task, cancelled: threading.Event | None = None) -> HandlerRequest:
        history = list(task.get("history") or ())
        message = next((m for m in reversed(history) if m.get("role") == "user"), None) or {"parts": []}
        return cls(
            message=message,
            task_id=task["id"],
            context_id=task.get("contextId", ""),
            history=history,
            metadata=dict(task.get("metadata") or {}),
            cancelled=cancelled or threading.Event(),
        )


HandlerResult = str | Part | Artifact | list[Any] | None
Handler = Callable[[HandlerRequest], HandlerResult | Awaitable[HandlerResult]]


@functools.cache
def load_handler(path: str) -> Handler:
    """Import the handler named by a dotted path (cached per path)."""
    handler = import_string(path)
    if not callable(handler):
        raise TypeError(f"{path} is not callable")
    return handler


def _is_part(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") in ("text", "file", "data")


def to_artifacts(result: Any) -> list[Artifact]:
    """Turn what a handler returned into the task's artifacts; InvalidAgentResponseError
    for anything else."""
    if result is None:
        return []
    if isinstance(result, str):
        return [{"artifactId": new_id(), "parts": [{"kind": "text", "text": result}]}]
    items = result if isinstance(result, list) else [result]
    if items and all(_is_part(i) for i in items):
        return _plain_json([{"artifactId": new_id(), "parts": list(items)}])
    artifacts = []
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("parts"), list) and all(map(_is_part, item["parts"]))):
            raise InvalidAgentResponseError(
                f"the handler returned {type(item).__name__} {str(item)[:80]!r}; expected text, parts or artifacts"
            )
        artifacts.append({**item, "artifactId": item.get("artifactId") or new_id()})
    return _plain_json(artifacts)


def _plain_json(artifacts: list[Artifact]) -> list[Artifact]:
    """The artifacts as plain JSON values (every store saves the same thing), or
    InvalidAgentResponseError when they hold something JSON cannot."""
    try:
        return orjson.loads(orjson.dumps(artifacts))
    except TypeError as exc:
        raise InvalidAgentResponseError(f"the handler returned something that is not JSON: {exc}") from None


def echo(request: HandlerRequest) -> str:
    """The default handler: answers with the text it was sent. Needs no network."""
    return f"echo: {request.text}"


def upper(request: HandlerRequest) -> str:
    """Answers with the text in capitals (the benchmarks' trivial handler)."""
    return request.text.upper()
