"""The handler API: how the project's own code fulfils a Task.

Point ``A2A_HANDLER`` at a callable (a plain function or an ``async def``), or at an
:class:`AgentHandler` subclass::

    # myproject/agent.py
    from a2a.handlers import HandlerRequest

    def handle(request: HandlerRequest) -> str:
        return f"You said {request.text!r}"

It receives a :class:`HandlerRequest` and returns the result:

- a ``str``: one artifact with one text part;
- a part dict (``{"kind": "text", "text": ...}``, ``{"kind": "data", "data": ...}``,
  ``{"kind": "file", "file": {...}}``) or a list of parts: one artifact holding them;
- an artifact dict (``{"parts": [...], "name": ...}``) or a list of artifacts;
- ``None``: completed with no artifact;
- ``Result(any of the above, message=..., metadata={...})``: also a status message,
  and ``metadata`` merged into the task's metadata (e.g. token usage);
- :class:`Reply` (``return Reply("hi")``): a direct Message instead of a task result.
  With :func:`direct_reply` on the handler, no Task is created for it at all.

Every state an agent may set is one call on the request, saved at once (each with an
optional status message of text or parts; ``a``-prefixed for async handlers):
``progress()`` (working), ``input_required()``, ``auth_required()``, ``complete()``,
``fail()``, ``reject()``, ``cancel()``; or raised: :class:`InputRequired`,
:class:`AuthRequired`, :class:`TaskFailed`, :class:`TaskRejected`. Any other
exception fails the task: it is logged with its traceback, and the client reads
"The agent failed: KeyError" (more with ``DEBUG``). ``request.cancelled`` is true
once the task was canceled (``wait_cancelled(timeout)``, ``await acancelled()``).

``request.delegate("billing", text)`` (``await request.adelegate(...)``) runs a task on
a remote agent of ``A2A_REMOTE_AGENTS`` and brings it into this one
(:mod:`a2a.handlers.delegation`); :class:`DelegationFailed` when it fails.

``A2A_HANDLER`` may also name an agent built with a framework (a PydanticAI ``Agent``, a
compiled LangGraph graph, an OpenAI Agents SDK ``Agent``): :mod:`a2a.handlers.frameworks`
serves it (docs/frameworks.md).

docs/handlers.md shows each in a few lines.
"""

from __future__ import annotations

from a2a.handlers.delegation import DelegationFailed
from a2a.handlers.loading import (
    AgentHandler,
    Handler,
    answers_directly,
    direct_reply,
    handler_instance,
    load_handler,
    loaded_handler,
)
from a2a.handlers.request import Cancellation, HandlerRequest, call_record
from a2a.handlers.results import (
    AuthRequired,
    Content,
    HandlerResult,
    InputRequired,
    Interrupt,
    Reply,
    Result,
    TaskFailed,
    TaskOutcome,
    TaskRejected,
    failure_message,
    result_message,
    to_artifacts,
    with_result_metadata,
)

__all__ = [
    "AgentHandler",
    "AuthRequired",
    "Cancellation",
    "Content",
    "DelegationFailed",
    "Handler",
    "HandlerRequest",
    "HandlerResult",
    "InputRequired",
    "Interrupt",
    "Reply",
    "Result",
    "TaskFailed",
    "TaskOutcome",
    "TaskRejected",
    "answers_directly",
    "call_record",
    "direct_reply",
    "echo",
    "failure_message",
    "handler_instance",
    "load_handler",
    "loaded_handler",
    "result_message",
    "to_artifacts",
    "upper",
    "with_result_metadata",
]


def echo(request: HandlerRequest) -> str:
    """The default handler: answers with the text it was sent. Needs no network."""
    return f"echo: {request.text}"


def upper(request: HandlerRequest) -> str:
    """Answers with the text in capitals (the benchmarks' trivial handler)."""
    return request.text.upper()
