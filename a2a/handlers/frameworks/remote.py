"""Remote A2A agents (entries of ``A2A_REMOTE_AGENTS``) as a framework's tools: each
call a delegation from the task the framework runs. Each adapter module's
``remote_agents`` wraps :func:`asker` in its framework's tool type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from a2a.handlers.request import HandlerRequest
from a2a.handlers.tools import RemoteTool, ToolCall, run_call, tool_name
from a2a.protocol.model import Message, Task

_running: ContextVar[HandlerRequest | None] = ContextVar("a2a_framework_request", default=None)


@contextmanager
def running(request: HandlerRequest) -> Iterator[None]:
    """While the framework runs ``request``'s task: its remote agents' tools delegate from it."""
    token = _running.set(request)
    try:
        yield
    finally:
        _running.reset(token)


def remote_description(agent: str) -> str:
    return f"Ask the remote A2A agent {agent!r}; the argument is what to ask, in plain words."


def asker(agent: str) -> Callable[[str], Awaitable[str]]:
    """The function a framework calls as the tool of the remote agent ``agent``: a
    delegation from the running task, as the LLM handler's remote tools run (the remote
    task recorded on the local one, a cancel relayed); its answer, or the error the
    model reads."""

    async def ask(request: str) -> str:
        """What to ask the agent, in plain words."""
        running_request = _running.get()
        if running_request is None:
            return "Error: a remote agent's tool runs only in a task this project serves."

        async def delegate(name: str, message: Message) -> Task:
            return await running_request.adelegate(name, message, surface=False, artifacts=False)

        remote = RemoteTool(agent, agent, None, remote_description(agent))
        answer = await run_call(ToolCall("", agent, {"request": request}), {agent: remote}, delegate)
        return f"Error: {answer.text}" if answer.is_error else answer.text

    ask.__name__ = tool_name(agent)
    return ask
