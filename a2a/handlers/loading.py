"""Which handler fulfils a task: the dotted path of ``A2A_HANDLER`` imported once, a
class handler set up once per process, and the :func:`direct_reply` mark."""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from django.utils.module_loading import import_string

from a2a.handlers.frameworks import as_handler
from a2a.handlers.request import HandlerRequest
from a2a.handlers.results import HandlerResult

_Handler = TypeVar("_Handler")


def direct_reply(handler: _Handler) -> _Handler:
    """Mark a handler that may answer a new message with a direct Message::

        @direct_reply
        def handle(request):
            if request.text == "ping":
                return Reply("pong")  # a Message: no Task is created, stored or streamed
            request.progress("working on it")  # from here on there is a Task
            return "a long answer"

    It runs as soon as the message arrives, in the process that received it (also
    with ``A2A_EXECUTOR = "tasks"``), before any Task exists. A ``Reply`` returned
    before it did anything task-visible is the answer: a blocking ``SendMessage``
    returns the Message, a stream carries exactly that Message. Its first
    task-visible act (a status, an artifact, ``request.create()``), any other result
    or an exception creates the Task (``working``), which then goes on as any other.
    A message that continues a task, or a send with a push-notification config,
    always runs as a task. (An :class:`AgentHandler` sets ``direct_reply = True``.)"""
    handler.direct_reply = True  # type: ignore[attr-defined]
    return handler


class AgentHandler:
    """The class form of a handler: ``A2A_HANDLER`` names the class; one instance
    serves every task of the process, set up once (:meth:`setup`, in a worker thread,
    before the first task). Override :meth:`handle` (sync or ``async def``); it
    returns, raises and calls what a function handler does. :meth:`cancel` is called
    when the client cancels a task :meth:`handle` is working on."""

    #: Answer new messages directly when ``handle`` returns a Reply (see :func:`direct_reply`).
    direct_reply = False

    def setup(self) -> None:
        """Once per process, before the first task (load a model, open a client...)."""

    def handle(self, request: HandlerRequest) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.handle")

    def cancel(self, request: HandlerRequest) -> None:
        """The task was canceled while :meth:`handle` worked on it (``request.cancelled``
        is set; an async ``handle`` also gets ``CancelledError``). Runs in a worker
        thread; may be ``async def``."""


Handler = Callable[[HandlerRequest], HandlerResult | Awaitable[HandlerResult]]


@functools.cache
def load_handler(path: str) -> Handler:
    """Import the handler named by a dotted path (cached per path): a callable, an
    :class:`AgentHandler` subclass (not set up here: see :func:`handler_instance`) or
    instance, or a framework's agent (served by its adapter: :mod:`a2a.handlers.frameworks`)."""
    handler = as_handler(import_string(path))
    if not callable(handler) and not isinstance(handler, AgentHandler):
        raise TypeError(f"{path} is neither callable nor an agent of a framework this project serves")
    return handler


_instances: dict[str, Any] = {}
_instances_lock = threading.Lock()


def handler_instance(path: str) -> Any:
    """What the runner calls for ``A2A_HANDLER = path``: the function, or the one
    instance of the :class:`AgentHandler` class, set up on first use (blocking: call
    it off the event loop the first time; :func:`loaded_handler` looks without)."""
    with _instances_lock:
        if path not in _instances:
            handler: Any = load_handler(path)
            if isinstance(handler, type) and issubclass(handler, AgentHandler):
                handler = handler()
                handler.setup()
            _instances[path] = handler
        return _instances[path]


def loaded_handler(path: str) -> Any:
    """:func:`handler_instance` if it was already made, else None."""
    return _instances.get(path)


def answers_directly(path: str) -> bool:
    """Whether the handler ``path`` names is marked :func:`direct_reply` (False when it
    cannot be imported: running it says why)."""
    try:
        return bool(getattr(load_handler(path), "direct_reply", False))
    except Exception:
        return False
