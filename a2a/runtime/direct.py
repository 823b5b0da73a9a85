"""A direct answer: a :func:`~a2a.handlers.direct_reply` handler run before its task exists.

The caller of :meth:`a2a.runtime.runner.Runner.answer` waits on :attr:`DirectReply.answer`:
the handler's Message when it replies before doing anything task-visible (no task is
ever saved), else the task the moment it is created (``working``), the run going on as
for any task. Whatever happens to the run, the caller is answered exactly once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable

from a2a.handlers import HandlerRequest, Reply
from a2a.protocol.errors import InternalError
from a2a.protocol.model import Message, agent_message
from stores.base import Task, TaskStore

SHUTTING_DOWN = "The server is shutting down; send the message again."


class DirectReply:
    """The run of a direct handler on ``task``, not saved yet; ``on_created`` hears the
    task once it is saved (from then on it is a task like any other)."""

    def __init__(self, task: Task, on_created: Callable[[Task], None]) -> None:
        self.task = task
        #: What the caller is answered: the direct Message, or the task once created.
        self.answer: concurrent.futures.Future[Task | Message] = concurrent.futures.Future()
        self._on_created = on_created
        self._request: HandlerRequest | None = None

    def defer(self, request: HandlerRequest) -> None:
        """``request`` (the handler's) saves the task on the handler's first
        task-visible act, which answers the caller with it."""
        self._request = request
        request.defer(self.task, self._created)

    def replied(self, result: object) -> bool:
        """Whether ``result`` is the answer itself: a Reply before anything
        task-visible. The caller then has the Message, and no task is ever created."""
        request = self._request
        if request is None or not request.pending or not isinstance(result, Reply):
            return False
        message = agent_message(result.parts)
        message["contextId"] = request.context_id
        self._settle(message)
        return True

    async def create(self, store: TaskStore) -> None:
        """The run's outcome is a task's: save the task before it (a no-op when the
        handler's updates did), even when the handler never got a request."""
        request = self._request
        if request is None:  # the handler could not even be loaded
            request = HandlerRequest.for_task(self.task, store=store)
            self.defer(request)
        await asyncio.to_thread(request.create)

    def fail(self, error: BaseException) -> None:
        """The run failed before answering: the caller hears ``error``."""
        self._settle(error=error)

    def ended(self, job: concurrent.futures.Future[None]) -> None:
        """The run's job ended (or never ran): a caller not answered yet is told the
        server is going away, never left waiting."""
        self._settle(error=InternalError(SHUTTING_DOWN))

    def _created(self, task: Task) -> None:
        self._on_created(task)
        self._settle(task)

    def _settle(self, answer: Task | Message | None = None, *, error: BaseException | None = None) -> None:
        """Answer the caller once: the first of racing threads wins."""
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            if error is not None:
                self.answer.set_exception(error)
            elif answer is not None:
                self.answer.set_result(answer)
