"""An OpenAI Agents SDK agent as an A2A agent (the ``openai-agents`` extra).

``A2A_HANDLER = "myproject.agents.support"`` where ``support = agents.Agent(...)``
serves it as it is; :class:`OpenAIAgentsHandler` is the explicit form, for options
(``context``, ``run_config``, ``max_turns``)::

    handler = OpenAIAgentsHandler(support, run_config=RunConfig(model="gpt-5-mini"))

The run streams (``Runner.run_streamed``): the model's text deltas become artifact
chunks, tool calls and their outputs progress; a tool with ``needs_approval`` pauses the
task in ``input-required`` with the run's state (``RunState.to_json()``) kept on the
task, and the client's reply approves or rejects it (``state.approve`` / ``reject``)."""

from __future__ import annotations

import base64
from typing import Any, cast

from agents import Agent, FunctionTool, RunConfig, Runner, RunResultStreaming, RunState, function_tool
from agents.exceptions import AgentsException
from agents.items import ToolApprovalItem, TResponseInputItem
from agents.models import get_default_model
from agents.models.fake_id import FAKE_RESPONSES_ID
from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent

from a2a.handlers.frameworks.adapter import FrameworkHandler, Outcome, Run, options
from a2a.handlers.frameworks.answer import AnswerStream
from a2a.handlers.frameworks.awaiting import Question, arguments
from a2a.handlers.frameworks.history import earlier_turns
from a2a.handlers.frameworks.message import pieces
from a2a.handlers.frameworks.progress import tool_called, tool_returned
from a2a.handlers.frameworks.remote import asker, remote_description
from a2a.handlers.frameworks.usage import Usage
from a2a.handlers.request import HandlerRequest


def serves(obj: Any) -> OpenAIAgentsHandler | None:
    """``obj`` as a handler when it is an Agents SDK agent (for :func:`~a2a.handlers.frameworks.as_handler`)."""
    return OpenAIAgentsHandler(obj) if isinstance(obj, Agent) else None


class OpenAIAgentsHandler(FrameworkHandler):
    """An OpenAI Agents SDK agent served as a handler. Each option is a value or a
    callable of the :class:`~a2a.handlers.HandlerRequest` (made per task): ``context``
    (the run's context object), ``run_config`` (a ``RunConfig``), ``max_turns``."""

    framework = "openai-agents"
    label = "OpenAI Agents"
    errors = (AgentsException,)

    def __init__(
        self, agent: Agent[Any], *, context: Any = None, run_config: Any = None, max_turns: Any = None
    ) -> None:
        self.agent = agent
        self.options = {"context": context, "run_config": run_config, "max_turns": max_turns}

    def describe(self) -> tuple[str, str, list[str]]:
        instructions = self.agent.instructions if isinstance(self.agent.instructions, str) else ""
        tools = [str(getattr(tool, "name", "")) for tool in self.agent.tools if getattr(tool, "name", "")]
        return self.agent.name, self.agent.handoff_description or instructions, tools

    async def start(self, request: HandlerRequest) -> AgentRun:
        items = [*conversation(await earlier_turns(request)), user_item(request)]
        return AgentRun(self, request, items, (0, 0))

    async def resume(self, request: HandlerRequest, paused: dict[str, Any], approved: bool | None) -> AgentRun:
        """The paused run's state, each tool call waiting on approval approved or rejected."""
        state = await RunState.from_json(self.agent, paused["state"]["run"])
        for item in state.get_interruptions():
            if approved:
                state.approve(item)
            else:
                state.reject(item, rejection_message="The user denied this tool call.")
        spent = paused["state"]["usage"]
        return AgentRun(self, request, state, (spent[0], spent[1]))

    def model(self, options: dict[str, Any]) -> str:
        """The model's name: the run config's model, else the agent's (a string, or a
        ``Model`` object's ``model``), else the SDK's default."""
        config = options.get("run_config")
        for model in (config.model if isinstance(config, RunConfig) else None, self.agent.model):
            if isinstance(model, str):
                return model
            if model is not None:
                name = getattr(model, "model", None)
                return name if isinstance(name, str) else type(model).__name__
        return get_default_model()


class AgentRun(Run):
    """One run of the agent (``Runner.run_streamed``). ``spent``: the tokens the resumed
    state counted already (reported on its turn)."""

    def __init__(
        self,
        handler: OpenAIAgentsHandler,
        request: HandlerRequest,
        run_input: list[TResponseInputItem] | RunState[Any],
        spent: tuple[int, int],
    ) -> None:
        self.handler, self.request, self.run_input, self.spent = handler, request, run_input, spent
        self.options = options(handler.options, request)
        self.result: RunResultStreaming | None = None

    async def execute(self, stream: AnswerStream) -> None:
        self.result = Runner.run_streamed(self.handler.agent, self.run_input, **self.options)
        try:
            await follow(self.request, stream, self.result)
        except AgentsException:
            raise  # the run ended with it
        except BaseException:
            self.result.cancel()  # the SDK's run goes on in a task of its own: stop it where it stands
            raise

    def tokens(self) -> tuple[int, int]:
        """The tokens the run's state counts (the resumed state's among them)."""
        if self.result is None:
            return self.spent
        usage = self.result.context_wrapper.usage
        return usage.input_tokens, usage.output_tokens

    def usage(self) -> Usage:
        """This run's usage (a failed one's too: the tokens its model calls spent)."""
        tokens = self.tokens()
        return Usage(self.handler.model(self.options), tokens[0] - self.spent[0], tokens[1] - self.spent[1])

    def outcome(self) -> Outcome:
        """The final output; tool calls waiting on approval ask the client, the run's
        state (``RunState.to_json()``) and its tokens kept."""
        assert self.result is not None  # (executed)
        if not self.result.interruptions:
            return Outcome(self.result.final_output)
        state = {"run": self.result.to_state().to_json(), "usage": list(self.tokens())}
        return Outcome(question=question(self.result.interruptions), state=state)


async def follow(request: HandlerRequest, stream: AnswerStream, result: RunResultStreaming) -> None:
    """The run's events: text deltas to the answer, tool calls and outputs as progress."""
    names: dict[str, str] = {}
    async for event in result.stream_events():
        if isinstance(event, RawResponsesStreamEvent) and event.data.type == "response.output_text.delta":
            stream.add(event.data.delta)
        elif isinstance(event, RunItemStreamEvent) and event.name == "tool_called":
            raw = event.item.raw_item
            name = str(getattr(raw, "name", None) or "tool")
            names[str(getattr(raw, "call_id", ""))] = name
            stream.restart()  # text before a tool call was not the answer
            await tool_called(request, name)
        elif isinstance(event, RunItemStreamEvent) and event.name == "tool_output":
            raw = event.item.raw_item
            call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
            await tool_returned(request, names.get(str(call_id), "tool"))


def remote_agents(*names: str) -> list[FunctionTool]:
    """The remote A2A agents ``names`` (entries of ``A2A_REMOTE_AGENTS``) as function tools,
    one each, run by delegation from the task: ``Agent(..., tools=[*remote_agents("billing")])``."""
    return [function_tool(asker(n), description_override=remote_description(n)) for n in names]


def question(interruptions: list[ToolApprovalItem]) -> Question:
    """What the paused run asks the client: approve each tool call."""
    approvals = []
    for item in interruptions:
        raw = item.raw_item
        args = raw.get("arguments") if isinstance(raw, dict) else getattr(raw, "arguments", None)
        call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
        approvals.append({"id": str(call_id or ""), "tool": item.tool_name or "tool", "args": arguments(args)})
    return Question(approvals, [])


def user_item(request: HandlerRequest) -> TResponseInputItem:
    """The message's parts as the Responses API's user input (files as input images or files)."""
    content: list[dict[str, Any]] = []
    for piece in pieces(request.parts):
        if piece.text is not None:
            content.append({"type": "input_text", "text": piece.text})
            continue
        url = piece.uri
        if piece.content is not None:
            url = f"data:{piece.media_type};base64,{base64.b64encode(piece.content).decode()}"
        if piece.media_type.startswith("image/"):
            content.append({"type": "input_image", "image_url": url, "detail": "auto"})
        elif piece.content is not None:
            content.append({"type": "input_file", "file_data": url, "filename": piece.name or "file"})
        else:
            content.append({"type": "input_file", "file_url": url})
    if all(c["type"] == "input_text" for c in content):
        return cast(TResponseInputItem, {"role": "user", "content": "\n".join(c["text"] for c in content)})
    return cast(TResponseInputItem, {"role": "user", "content": content})


def conversation(turns: list[dict[str, str]]) -> list[TResponseInputItem]:
    """Earlier turns as the Responses API's input items: the model's turns as the output
    messages the SDK makes itself for a model that gives no item id (``FAKE_RESPONSES_ID``,
    dropped before a request), the one shape of an assistant message every model path
    takes also after ``RunState`` rewrote it (a paused run restored): the Chat Completions
    converter refuses the ``{role, content}`` form as ``RunState`` leaves it."""
    return [
        cast(TResponseInputItem, {"role": "user", "content": t["content"]})
        if t["role"] == "user"
        else cast(TResponseInputItem, assistant_item(t["content"]))
        for t in turns
    ]


def assistant_item(text: str) -> dict[str, Any]:
    """An earlier answer as a Responses output message."""
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "id": FAKE_RESPONSES_ID, "role": "assistant", "status": "completed", "content": content}
