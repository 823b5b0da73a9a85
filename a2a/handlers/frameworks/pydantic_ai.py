"""A PydanticAI agent as an A2A agent (the ``pydantic-ai`` extra).

``A2A_HANDLER = "myproject.agents.support"`` where ``support = pydantic_ai.Agent(...)``
serves it as it is; :class:`PydanticAIHandler` is the explicit form, for options
(``deps``, ``model``, ``model_settings``, ``usage_limits``)::

    handler = PydanticAIHandler(support, deps=lambda request: Deps(user=request.caller))

The run streams (``run`` with an ``event_stream_handler``): text deltas become artifact chunks, tool calls
progress; a deferred tool (``requires_approval=True``, ``ApprovalRequired``, an external
tool's ``CallDeferred``) pauses the task in ``input-required`` with the run's messages
kept on the task, and the client's reply is the approval or the tool's result."""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any

from pydantic_ai import (
    AudioUrl,
    BinaryContent,
    DeferredToolRequests,
    DeferredToolResults,
    DocumentUrl,
    FunctionToolset,
    ImageUrl,
    ModelMessagesTypeAdapter,
    Tool,
    ToolDenied,
    VideoUrl,
    capture_run_messages,
)
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.exceptions import AgentRunError, UserError
from pydantic_ai.messages import (
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    RetryPromptPart,
    TextPart,
    TextPartDelta,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import RunContext

from a2a.handlers.frameworks.adapter import FrameworkHandler, Outcome, Run, options
from a2a.handlers.frameworks.answer import AnswerStream
from a2a.handlers.frameworks.awaiting import Question, arguments, reply_value
from a2a.handlers.frameworks.history import earlier_turns
from a2a.handlers.frameworks.message import pieces
from a2a.handlers.frameworks.progress import tool_called, tool_returned
from a2a.handlers.frameworks.remote import asker, remote_description
from a2a.handlers.frameworks.usage import Usage
from a2a.handlers.request import HandlerRequest

_URLS = {"image": ImageUrl, "audio": AudioUrl, "video": VideoUrl}


def serves(obj: Any) -> PydanticAIHandler | None:
    """``obj`` as a handler when it is a PydanticAI agent (for :func:`~a2a.handlers.frameworks.as_handler`)."""
    return PydanticAIHandler(obj) if isinstance(obj, AbstractAgent) else None


class PydanticAIHandler(FrameworkHandler):
    """A PydanticAI agent served as a handler. Each option is a value or a callable of
    the :class:`~a2a.handlers.HandlerRequest` (made per task): ``deps`` (the run's
    dependencies), ``model``, ``model_settings``, ``usage_limits``."""

    framework = "pydantic-ai"
    label = "PydanticAI"
    errors = (AgentRunError, UserError)

    def __init__(
        self,
        agent: AbstractAgent[Any, Any],
        *,
        deps: Any = None,
        model: Any = None,
        model_settings: Any = None,
        usage_limits: Any = None,
    ) -> None:
        self.agent = agent
        self.options = {"deps": deps, "model": model, "model_settings": model_settings, "usage_limits": usage_limits}

    def describe(self) -> tuple[str, str, list[str]]:
        tools = [name for toolset in self.agent.toolsets for name in getattr(toolset, "tools", {})]
        description = self.agent.description if isinstance(self.agent.description, str) else ""
        return self.agent.name or "agent", description, tools

    async def start(self, request: HandlerRequest) -> AgentRun:
        history = conversation(await earlier_turns(request))
        return AgentRun(self, request, user_prompt(request), history, None)

    async def resume(self, request: HandlerRequest, paused: dict[str, Any], approved: bool | None) -> AgentRun:
        """The client's reply as the paused run's deferred tool results."""
        results = DeferredToolResults()
        for call in paused["approvals"]:
            results.approvals[call["id"]] = True if approved else ToolDenied("The user denied this tool call.")
        for call in paused["calls"]:
            results.calls[call["id"]] = reply_value(request)
        history = ModelMessagesTypeAdapter.validate_python(paused["state"])
        return AgentRun(self, request, None, history, results)


class AgentRun(Run):
    """One run of the agent (``run`` with an ``event_stream_handler``)."""

    def __init__(
        self,
        handler: PydanticAIHandler,
        request: HandlerRequest,
        prompt: str | list[UserContent] | None,
        history: list[ModelMessage],
        results: DeferredToolResults | None,
    ) -> None:
        self.agent, self.request = handler.agent, request
        self.prompt, self.history, self.results = prompt, history, results
        self.options = options(handler.options, request)
        self.messages: list[ModelMessage] = []  # the run's messages, the history first
        self.result: AgentRunResult[Any] | None = None

    async def execute(self, stream: AnswerStream) -> None:
        """The run, its events mapped as they come (the handler of ``run``'s event streams,
        in the run's own task: ``run_stream_events`` would pass them through a channel
        and a task group, for the same events)."""

        async def follow(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
            async for event in events:
                await on_event(self.request, stream, event)

        output_type: Any = [self.agent.output_type, DeferredToolRequests]
        with capture_run_messages() as self.messages:
            self.result = await self.agent.run(
                self.prompt,
                message_history=self.history or None,
                deferred_tool_results=self.results,
                output_type=output_type,
                event_stream_handler=follow,
                **self.options,
            )

    def usage(self) -> Usage:
        """The run's usage; a failed run's: the usage of the model's responses it got."""
        if self.result is not None:
            usage = self.result.usage
            return Usage(self.result.response.model_name or "", usage.input_tokens, usage.output_tokens)
        responses = [m for m in self.messages[len(self.history) :] if isinstance(m, ModelResponse)]
        model = next((r.model_name for r in reversed(responses) if r.model_name), "")
        tokens = [sum(getattr(r.usage, kind) for r in responses) for kind in ("input_tokens", "output_tokens")]
        return Usage(model or "", tokens[0], tokens[1])

    def outcome(self) -> Outcome:
        """The output; deferred tool calls ask the client, the run's messages kept."""
        assert self.result is not None  # (executed)
        if isinstance(self.result.output, DeferredToolRequests):
            state = ModelMessagesTypeAdapter.dump_python(self.result.all_messages(), mode="json")
            return Outcome(question=question(self.result.output), state=state)
        return Outcome(self.result.output)


async def on_event(request: HandlerRequest, stream: AnswerStream, event: Any) -> None:
    """One event of the run: text to the answer, a tool call or result as progress."""
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        stream.add(event.part.content)
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        stream.add(event.delta.content_delta)
    elif isinstance(event, FunctionToolCallEvent):
        stream.restart()  # text before a tool call was the model thinking aloud, not the answer
        await tool_called(request, event.part.tool_name)
    elif isinstance(event, FunctionToolResultEvent):
        await tool_returned(request, event.part.tool_name, failed=isinstance(event.part, RetryPromptPart))


def remote_agents(*names: str) -> FunctionToolset[Any]:
    """The remote A2A agents ``names`` (entries of ``A2A_REMOTE_AGENTS``) as a toolset, one
    tool each, run by delegation from the task: ``Agent(..., toolsets=[remote_agents("billing")])``."""
    return FunctionToolset([Tool(asker(n), description=remote_description(n)) for n in names])


def question(requests: DeferredToolRequests) -> Question:
    """What the paused run asks the client."""

    def calls(parts: list[Any]) -> list[dict[str, Any]]:
        return [{"id": p.tool_call_id, "tool": p.tool_name, "args": arguments(p.args)} for p in parts]

    return Question(calls(requests.approvals), calls(requests.calls))


def user_prompt(request: HandlerRequest) -> str | list[UserContent]:
    """The message's parts as PydanticAI's user content: text, files as binary content or URLs."""
    found: list[UserContent] = []
    for piece in pieces(request.parts):
        if piece.text is not None:
            found.append(piece.text)
        elif piece.content is not None:
            found.append(BinaryContent(data=piece.content, media_type=piece.media_type))
        elif piece.uri is not None:
            kind = _URLS.get(piece.media_type.split("/")[0], DocumentUrl)
            found.append(kind(url=piece.uri, media_type=piece.media_type))
    if all(isinstance(item, str) for item in found):
        return "\n".join(str(item) for item in found)
    return found


def conversation(turns: list[dict[str, str]]) -> list[ModelMessage]:
    """Earlier turns as PydanticAI's message history."""
    history: list[ModelMessage] = []
    for turn in turns:
        if turn["role"] == "user":
            history.append(ModelRequest(parts=[UserPromptPart(content=turn["content"])]))
        else:
            history.append(ModelResponse(parts=[TextPart(content=turn["content"])]))
    return history
