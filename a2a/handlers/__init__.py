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
- ``Result(any of the above, metadata={...})``: also merge ``metadata`` into the
  task's metadata (e.g. token usage).

- :class:`Reply` (``return Reply("hi")``): a direct Message instead of a task result
  (a blocking ``SendMessage`` answers with the Message).

Raising fails the task, with the exception's text as the status message, except:

- ``raise InputRequired("Which city?")``: the task waits in ``input-required``; the
  client's next message with this ``taskId`` calls the handler again, with the whole
  conversation in ``request.history``;
- ``raise AuthRequired("...")``: likewise, in ``auth-required``.

While it works, a handler can report progress (``request.progress("half way")``)
and emit artifacts or chunks of one (``request.artifact([...], append=True)``);
each is saved at once, so streams, pollers and push subscribers see it. Async
handlers use ``await request.aprogress(...)`` / ``await request.aartifact(...)``.
``request.context_tasks(n)`` (``acontext_tasks``) gives the earlier tasks of the
context, the conversation so far: the task owner's own only (a context is per owner).

A sync handler runs in a worker thread and may use the ORM; it should check
``request.cancelled`` now and then in long loops. An async handler runs on the
runner's event loop and is cancelled (``CancelledError``) when the task is.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.utils.module_loading import import_string

from a2a.core import lifecycle
from a2a.core.events import TaskEvent, with_chunk
from a2a.protocol.errors import InvalidAgentResponseError
from a2a.protocol.model import Artifact, Message, Part, Task, agent_message, message_text, new_id, set_status
from stores.backends import get_task_store
from stores.base import MAX_PAGE_SIZE, TaskQuery, TaskStore, scope_key, task_owner, task_tenant, task_updated


@dataclass
class HandlerRequest:
    """What a handler gets: the message to answer and the task it belongs to."""

    message: Message
    task_id: str
    context_id: str
    history: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    cancelled: threading.Event = field(default_factory=threading.Event)
    store: TaskStore | None = field(default=None, repr=False)
    #: Who the task belongs to ("" without authentication): the context is theirs.
    owner: str = ""
    #: The tenant the task was created under ("" for none): the context is the owner's in it.
    tenant: str = ""

    def progress(self, text: str) -> None:
        """Save a ``working`` status update carrying ``text`` as the agent's message."""

        def change(task: Task) -> Task | None:
            if lifecycle.is_terminal(task):
                return None
            return set_status(task, "working", agent_message(text, task=task))

        lifecycle.transition_sync(self._store(), self.task_id, change)

    def artifact(
        self,
        parts: list[Part] | str,
        *,
        artifact_id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        append: bool = False,
        last_chunk: bool = False,
    ) -> str:
        """Add an artifact now, or with ``append=True`` add ``parts`` to the artifact
        ``artifact_id``; returns the artifact's id."""
        chunk: Artifact = {"artifactId": artifact_id or new_id(), "parts": _parts(parts)}
        if name:
            chunk["name"] = name
        if description:
            chunk["description"] = description
        chunk = _plain_json([chunk])[0]

        def change(task: Task) -> Task | None:
            if lifecycle.is_terminal(task):
                return None
            task["artifacts"] = with_chunk(task.get("artifacts"), chunk, append)  # as subscribers rebuild it
            return task

        def event(task: Task) -> TaskEvent:
            return TaskEvent(task, kind="artifact", artifact=chunk, append=append, last_chunk=last_chunk)

        lifecycle.transition_sync(self._store(), self.task_id, change, event)
        return chunk["artifactId"]

    async def aprogress(self, text: str) -> None:
        """:meth:`progress` for async handlers."""
        await asyncio.to_thread(self.progress, text)

    async def aartifact(self, parts: list[Part] | str, **kwargs: Any) -> str:
        """:meth:`artifact` for async handlers."""
        return await asyncio.to_thread(functools.partial(self.artifact, parts, **kwargs))

    def context_tasks(self, limit: int = 10) -> list[Task]:
        """The latest ``limit`` other tasks of this context, oldest first: the earlier
        conversation. Only the task owner's own tasks: another caller who sends the same
        ``contextId`` has a conversation of its own there, which this one never sees."""
        query = self._context_query(limit)
        return self._earlier(self._store().list(query).tasks, limit) if query else []

    async def acontext_tasks(self, limit: int = 10) -> list[Task]:
        """:meth:`context_tasks` for async handlers."""
        query = self._context_query(limit)
        return self._earlier((await self._store().alist(query)).tasks, limit) if query else []

    def _context_query(self, limit: int) -> TaskQuery | None:
        if limit <= 0 or not self.context_id:
            return None
        owner = scope_key(self.tenant, self.owner)
        return TaskQuery(context_id=self.context_id, owner=owner, page_size=min(limit + 1, MAX_PAGE_SIZE))

    def _earlier(self, tasks: list[Task], limit: int) -> list[Task]:
        earlier = [t for t in tasks if t["id"] != self.task_id][:limit]
        return sorted(earlier, key=lambda t: (task_updated(t), t["id"]))

    def _store(self) -> TaskStore:
        return self.store or get_task_store()

    @property
    def text(self) -> str:
        """The message's text parts, joined by newlines."""
        return message_text(self.message)

    @property
    def parts(self) -> list[Part]:
        return list(self.message.get("parts", ()))

    @classmethod
    def for_task(
        cls, task: Task, cancelled: threading.Event | None = None, store: TaskStore | None = None
    ) -> HandlerRequest:
        history = list(task.get("history") or ())
        message = next((m for m in reversed(history) if m.get("role") == "user"), None) or {"parts": []}
        return cls(
            message=message,
            task_id=task["id"],
            context_id=task.get("contextId", ""),
            history=history,
            metadata=dict(task.get("metadata") or {}),
            cancelled=cancelled or threading.Event(),
            store=store,
            owner=task_owner(task),
            tenant=task_tenant(task),
        )


class Reply:
    """Returned by a handler: answer with a direct Message rather than a result."""

    def __init__(self, content: str | list[Part]) -> None:
        self.parts = _parts(content)


class Interrupt(Exception):
    """Raised by a handler to pause the task until the client answers."""

    state = "input-required"

    def __init__(self, content: str | list[Part]) -> None:
        self.parts = _parts(content)
        super().__init__(message_text({"parts": self.parts}))


class InputRequired(Interrupt):
    """The task needs more input from the client (``input-required``)."""


class AuthRequired(Interrupt):
    """The task needs the client to authenticate somewhere (``auth-required``)."""

    state = "auth-required"


def _parts(content: str | list[Part]) -> list[Part]:
    if isinstance(content, str):
        return [{"kind": "text", "text": content}]
    if isinstance(content, list) and content and all(_is_part(p) for p in content):
        return list(content)
    raise InvalidAgentResponseError(f"expected text or a list of parts, not {str(content)[:80]!r}")


HandlerResult = str | Part | Artifact | list[Any] | None
Handler = Callable[[HandlerRequest], HandlerResult | Awaitable[HandlerResult]]


@dataclass
class Result:
    """Returned by a handler: ``result`` (anything above) plus ``metadata`` merged into
    the task's metadata when it completes (e.g. the LLM handler's token usage)."""

    result: Any
    metadata: dict[str, Any] = field(default_factory=dict)


def with_result_metadata(change: Callable[[Task], Task | None], result: Any) -> Callable[[Task], Task | None]:
    """``change``, then the :class:`Result`'s metadata merged into the task's (a no-op
    for any other result)."""
    metadata = _plain_json([result.metadata])[0] if isinstance(result, Result) and result.metadata else None
    if not metadata:
        return change

    def merged(task: Task) -> Task | None:
        new = change(task)
        if new is not None:
            new["metadata"] = {**(new.get("metadata") or {}), **metadata}
        return new

    return merged


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
    if isinstance(result, Result):
        result = result.result
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
