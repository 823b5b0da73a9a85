"""A compiled LangGraph graph as an A2A agent (the ``langgraph`` extra).

``A2A_HANDLER = "myproject.graphs.support"`` where ``support = builder.compile()``
serves it as it is; :class:`LangGraphHandler` is the explicit form, for options
(``config``, ``input``, ``output_key``)::

    handler = LangGraphHandler(support, config={"recursion_limit": 10})

The graph runs streamed (``astream``, modes ``messages``, ``updates`` and ``values``):
the chat models' tokens become artifact chunks, tool calls and tool messages progress,
an ``interrupt()`` pauses the task in ``input-required`` and the client's reply resumes
it (``Command(resume=...)``); :func:`ask_approval` is the interrupt of a person's
approval, resumed with True or False only.

Memory and the paused run: a graph compiled without a checkpointer runs on this
adapter's, one thread per task, its checkpoints kept on the task while it waits (so it
resumes in another process, or after a restart); the caller's earlier tasks of the
context come in as the first messages. A graph compiled with its own checkpointer keeps
one thread per caller and ``contextId`` there: that is its memory, and its paused runs."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from langchain_core.exceptions import LangChainException
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import EmptyInputError, GraphRecursionError, InvalidUpdateError
from langgraph.pregel import Pregel
from langgraph.types import Command, Durability, Interrupt, StreamMode, interrupt

from a2a.handlers.frameworks.adapter import FrameworkHandler, Outcome, Run, option
from a2a.handlers.frameworks.answer import AnswerStream, jsonable
from a2a.handlers.frameworks.awaiting import APPROVAL, Question, is_approval, reply_value
from a2a.handlers.frameworks.history import earlier_turns
from a2a.handlers.frameworks.message import pieces
from a2a.handlers.frameworks.progress import tool_called, tool_returned
from a2a.handlers.frameworks.remote import asker, remote_description
from a2a.handlers.frameworks.usage import Usage
from a2a.handlers.request import HandlerRequest
from a2a.handlers.results import Result

_MEDIA = ("image", "audio", "video")
MODES: list[StreamMode] = ["messages", "updates", "values"]
#: The steps a run may take unless the ``config`` option or the graph sets
#: ``recursion_limit``: LangGraph's own default (10,007) lets a graph looping on a tool call
#: it some 5,000 times before it fails; 25 (LangGraph's earlier default) is a dozen rounds
#: of a model and its tools.
RECURSION_LIMIT = 25


def serves(obj: Any) -> LangGraphHandler | None:
    """``obj`` as a handler when it is a compiled graph (for :func:`~a2a.handlers.frameworks.as_handler`)."""
    return LangGraphHandler(obj) if isinstance(obj, Pregel) else None


class TaskSaver(InMemorySaver):
    """The checkpointer of a graph compiled without one: in memory while a task runs,
    one thread per task; :meth:`export` and :meth:`restore` move a thread to and from
    JSON, kept on the task while the run waits for the client."""

    def export(self, thread_id: str) -> dict[str, Any]:
        """The thread's checkpoints, writes and channel values, as JSON."""
        storage = {
            ns: {cid: [_typed(c), _typed(m), parent] for cid, (c, m, parent) in saved.items()}
            for ns, saved in self.storage.get(thread_id, {}).items()
        }
        writes = [
            [ns, cid, task, idx, [tid, channel, _typed(value), path]]
            for (thread, ns, cid), inner in self.writes.items()
            if thread == thread_id
            for (task, idx), (tid, channel, value, path) in inner.items()
        ]
        blobs = [[ns, ch, ver, _typed(v)] for (thread, ns, ch, ver), v in self.blobs.items() if thread == thread_id]
        return {"storage": storage, "writes": writes, "blobs": blobs}

    def restore(self, thread_id: str, data: dict[str, Any]) -> None:
        """Put an exported thread back (as ``thread_id``)."""
        for ns, saved in data["storage"].items():
            for cid, (c, m, parent) in saved.items():
                self.storage[thread_id][ns][cid] = (_untyped(c), _untyped(m), parent)
        for ns, cid, task, idx, (tid, channel, value, path) in data["writes"]:
            self.writes[(thread_id, ns, cid)][(task, idx)] = (tid, channel, _untyped(value), path)
        for ns, ch, ver, value in data["blobs"]:
            self.blobs[(thread_id, ns, ch, ver)] = _untyped(value)


def _typed(value: tuple[str, bytes]) -> list[str]:
    return [value[0], base64.b64encode(value[1]).decode()]


def _untyped(value: list[str]) -> tuple[str, bytes]:
    return value[0], base64.b64decode(value[1])


class LangGraphHandler(FrameworkHandler):
    """A compiled LangGraph graph served as a handler. ``config``: the run's config (a
    dict, or a callable of the request; its ``configurable.thread_id`` is set here);
    ``input``: a callable of the request and the earlier messages making the graph's
    input (default ``{"messages": [...earlier, HumanMessage(...)]}``); ``output_key``: the
    state key holding the answer (default: the last AI message of ``messages``, else
    the final state as a data part)."""

    framework = "langgraph"
    label = "LangGraph"
    errors = (GraphRecursionError, InvalidUpdateError, EmptyInputError, LangChainException)

    def __init__(
        self,
        graph: Pregel[Any, Any, Any, Any],
        *,
        config: Any = None,
        input: Callable[[HandlerRequest, list[BaseMessage]], Any] | None = None,
        output_key: str | None = None,
    ) -> None:
        self.own_checkpointer = graph.checkpointer not in (None, False)
        self.saver = None if self.own_checkpointer else TaskSaver()
        self.graph = graph if self.saver is None else graph.copy({"checkpointer": self.saver})
        #: This adapter's checkpoints are needed only where the run stops (to resume a paused
        #: run, kept on the task): saved when the graph exits, not after each step. A graph's
        #: own checkpointer keeps the graph's own setting.
        self.durability: Durability | None = None if self.saver is None else "exit"
        self.config, self.input, self.output_key = config, input, output_key

    def describe(self) -> tuple[str, str, list[str]]:
        nodes = [name for name in self.graph.nodes if not name.startswith("__")]
        return self.graph.name or "graph", "", nodes

    def thread(self, request: HandlerRequest) -> str:
        """The checkpointer's thread: the task's on this adapter's checkpointer; the
        caller's context on the graph's own (each caller has a conversation of its own)."""
        if self.saver is not None:
            return request.task_id
        return "/".join((request.agent_name, request.tenant, request.caller, request.context_id or request.task_id))

    def run_config(self, request: HandlerRequest) -> RunnableConfig:
        """The run's config: the ``config`` option's, on the checkpointer's thread, with
        the :data:`RECURSION_LIMIT` unless it or the graph (``with_config``) sets one."""
        config = RunnableConfig(**(option(self.config, request) or {}))
        config["configurable"] = {**config.get("configurable", {}), "thread_id": self.thread(request)}
        if "recursion_limit" not in config and "recursion_limit" not in (self.graph.config or {}):
            config["recursion_limit"] = RECURSION_LIMIT
        return config

    async def handle(self, request: HandlerRequest) -> Result:
        try:
            return await super().handle(request)
        finally:
            if self.saver is not None:
                self.saver.delete_thread(self.thread(request))  # kept on the task when paused; never in this process

    async def start(self, request: HandlerRequest) -> GraphRun:
        config = self.run_config(request)
        earlier = [] if self.saver is None else conversation(await earlier_turns(request))
        graph_input = self.input(request, earlier) if self.input else {"messages": [*earlier, user_message(request)]}
        return GraphRun(self, request, graph_input, config)

    async def resume(self, request: HandlerRequest, paused: dict[str, Any], approved: bool | None) -> GraphRun:
        config = self.run_config(request)
        command = resume_command(request, paused, approved)
        if self.saver is not None:
            self.saver.restore(config["configurable"]["thread_id"], paused["state"])
        return GraphRun(self, request, command, config)

    def output(self, values: Any) -> Any:
        """The answer in the graph's final state."""
        if not isinstance(values, dict):
            return values
        if self.output_key is not None:
            return values.get(self.output_key)
        messages = values.get("messages")
        if isinstance(messages, list):
            answers = [m for m in messages if isinstance(m, AIMessage)]
            return answers[-1].text if answers else ""
        return values


class GraphRun(Run):
    """One run of the graph (``astream``): text to the answer, tools to progress,
    interrupts, usage."""

    def __init__(self, handler: LangGraphHandler, request: HandlerRequest, graph_input: Any, config: RunnableConfig):
        self.handler, self.request, self.graph_input, self.config = handler, request, graph_input, config
        self.interrupts: list[Interrupt] = []
        self.values: Any = None
        self.model = ""
        self.input_tokens = self.output_tokens = 0

    async def execute(self, stream: AnswerStream) -> None:
        graph, durability = self.handler.graph, self.handler.durability
        async for mode, chunk in graph.astream(self.graph_input, self.config, stream_mode=MODES, durability=durability):
            await self.on(stream, mode, chunk)

    def usage(self) -> Usage:
        """The usage of the model calls the run made."""
        return Usage(self.model, self.input_tokens, self.output_tokens)

    def outcome(self) -> Outcome:
        """The answer in the final state; interrupts ask the client, the thread's
        checkpoints kept (on this adapter's checkpointer)."""
        if not self.interrupts:
            return Outcome(self.handler.output(self.values))
        saver = self.handler.saver
        state = saver.export(self.config["configurable"]["thread_id"]) if saver is not None else None
        return Outcome(question=question(self.interrupts), state=state)

    async def on(self, stream: AnswerStream, mode: str, chunk: Any) -> None:
        if mode == "messages":
            message = chunk[0]
            if isinstance(message, AIMessage):  # (an AIMessageChunk too) a tool's message is not the answer
                stream.add(message.text)
        elif mode == "values":
            self.values = chunk
        elif mode == "updates":
            for node, update in chunk.items():
                if node == "__interrupt__":
                    self.interrupts += list(update)
                else:
                    await self.messages(stream, update.get("messages") if isinstance(update, dict) else None)

    async def messages(self, stream: AnswerStream, messages: Any) -> None:
        """A node's new messages: the model's tool calls and usage, the tools' answers."""
        for message in messages if isinstance(messages, list) else [messages] if messages else []:
            if isinstance(message, AIMessage):
                if message.usage_metadata:
                    self.input_tokens += message.usage_metadata["input_tokens"]
                    self.output_tokens += message.usage_metadata["output_tokens"]
                self.model = str(message.response_metadata.get("model_name") or self.model)
                for call in message.tool_calls:
                    stream.restart()  # the text before a tool call was not the answer
                    await tool_called(self.request, call["name"])
            elif isinstance(message, ToolMessage):
                await tool_returned(self.request, message.name or "tool", failed=message.status == "error")


def remote_agents(*names: str) -> list[BaseTool]:
    """The remote A2A agents ``names`` (entries of ``A2A_REMOTE_AGENTS``) as LangChain tools,
    one each, run by delegation from the task: ``ToolNode([*remote_agents("billing")])``."""
    return [StructuredTool.from_function(coroutine=asker(n), description=remote_description(n)) for n in names]


def ask_approval(question: str) -> bool:
    """Pause the graph (in a node, as ``interrupt()``) for a person's approval of
    ``question``: True when the reply approves (``yes``, ``{"approved": true}``), False
    when it denies; any other reply asks again. A plain ``interrupt()`` resumes with
    whatever the reply is, which a graph must not read as a yes."""
    return interrupt({APPROVAL: question}) is True


def resume_command(request: HandlerRequest, paused: dict[str, Any], approved: bool | None) -> Command[Any]:
    """The client's reply as the paused graph's resume value, one for each interrupt:
    an approval's (:func:`ask_approval`) True or False; a free question's True / False
    for yes / no, else the reply's data or text."""
    interrupts = paused.get("interrupts") or []
    value = approved if approved is not None else reply_value(request)
    values = {i["id"]: approved if is_approval(i["value"]) else value for i in interrupts}
    return Command(resume=values if len(values) > 1 else value)


def question(interrupts: list[Interrupt]) -> Question:
    return Question([], [], [{"id": i.id, "value": jsonable(i.value)} for i in interrupts])


def user_message(request: HandlerRequest) -> HumanMessage:
    """The message's parts as a LangChain human message (files as content blocks)."""
    blocks: list[str | dict[str, Any]] = []
    for piece in pieces(request.parts):
        kind = next((k for k in _MEDIA if piece.media_type.startswith(k + "/")), "file")
        if piece.text is not None:
            blocks.append({"type": "text", "text": piece.text})
        elif piece.content is not None:
            blocks.append(
                {"type": kind, "base64": base64.b64encode(piece.content).decode(), "mime_type": piece.media_type}
            )
        elif piece.uri is not None:
            blocks.append({"type": kind, "url": piece.uri, "mime_type": piece.media_type})
    if all(isinstance(b, dict) and b["type"] == "text" for b in blocks):
        return HumanMessage(content="\n".join(str(b["text"]) for b in blocks if isinstance(b, dict)))
    return HumanMessage(content=blocks)


def conversation(turns: list[dict[str, str]]) -> list[BaseMessage]:
    """Earlier turns as LangChain messages."""
    return [HumanMessage(t["content"]) if t["role"] == "user" else AIMessage(t["content"]) for t in turns]
