"""The LangGraph graphs the framework tests serve, on langchain-core's fake chat model (no network, no key)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypedDict

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

from a2a.handlers.frameworks.langgraph import LangGraphHandler, ask_approval, remote_agents

DELETED: list[str] = []
SLOW_WORDS: list[str] = []


class ScriptedChatModel(GenericFakeChatModel):
    """langchain-core's fake chat model, whose next message is chosen from the
    conversation (:func:`reply`), streamed word by word a few milliseconds apart (as over
    a network), tool calls included (the generic fake streams text only), 7 tokens in and
    5 out per call. Async, as a node awaits a real model: a cancel stops it."""

    messages: Iterator[AIMessage] = iter(())

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for piece in pieces(reply(messages)):
            await asyncio.sleep(0.01)
            if piece.content and str(piece.content).startswith("w"):
                SLOW_WORDS.append(str(piece.content))
            chunk = ChatGenerationChunk(message=piece)
            if run_manager is not None:
                await run_manager.on_llm_new_token(str(piece.content), chunk=chunk)
            yield chunk


def pieces(message: AIMessage) -> list[AIMessageChunk]:
    """``message`` as a model streams it: its words (400 of them for "slow"), its tool
    calls, its usage."""
    words = [f"w{n} " for n in range(400)] if message.content == "slow" else re.split(r"(\s)", str(message.content))
    found = [AIMessageChunk(content=word) for word in words if word]
    for n, call in enumerate(message.tool_calls):
        called = {"name": call["name"], "args": json.dumps(call["args"]), "id": call["id"], "index": n}
        found.append(AIMessageChunk(content="", tool_call_chunks=[called]))
    usage = {"input_tokens": 7, "output_tokens": 5, "total_tokens": 12}
    return [*found, AIMessageChunk(content="", usage_metadata=usage)]


def reply(messages: list[BaseMessage]) -> AIMessage:
    """The model: answers what a tool returned, else calls the tool the prompt names."""
    last = messages[-1]
    if any(isinstance(m, HumanMessage) and m.content == "loop" for m in messages):
        return AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": f"c{len(messages)}"}])
    if last.type == "tool":
        return AIMessage(f"The tool said: {last.content}")
    prompt = str(last.content)
    if prompt == "weather":
        return AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}])
    if prompt == "billing":
        return AIMessage("", tool_calls=[{"name": "billing", "args": {"request": "What do I owe?"}, "id": "c2"}])
    if prompt == "memory":
        said = [str(m.content) for m in messages[:-1] if isinstance(m, HumanMessage)]
        return AIMessage("You said: " + " | ".join(said))
    if prompt == "break":
        raise ValueError("not the framework's")
    if prompt == "slow":
        return AIMessage("slow")
    return AIMessage("The answer is forty two")


model = ScriptedChatModel()


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


async def think(state: MessagesState) -> dict[str, Any]:
    return {"messages": [await model.ainvoke(state["messages"])]}


def approve(state: MessagesState) -> dict[str, Any] | None:
    """Deleting needs a person's approval (:func:`ask_approval`); "ask" is a free question (``interrupt()``)."""
    if str(state["messages"][-1].content).startswith("delete"):
        if ask_approval("Delete /tmp/x?"):
            DELETED.append("/tmp/x")
            return {"messages": [AIMessage("Deleted /tmp/x")]}
        return {"messages": [AIMessage("Kept /tmp/x")]}
    if str(state["messages"][-1].content) == "ask":
        return {"messages": [AIMessage(f"Hello {interrupt({'question': 'Your name?'})}")]}
    return None


def route(state: MessagesState) -> str:
    content = str(state["messages"][-1].content)
    return "approve" if content.startswith("delete") or content == "ask" else "think"


def build(checkpointer: Any = None) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("think", think)
    builder.add_node("tools", ToolNode([weather, *remote_agents("billing")]))
    builder.add_node("approve", approve)
    builder.add_conditional_edges(START, route, {"approve": "approve", "think": "think"})
    builder.add_conditional_edges("think", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "think")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=checkpointer)


graph = build()
remembering = build(InMemorySaver())  # the graph's own checkpointer: its memory, one thread per caller and context
explicit = LangGraphHandler(graph, config={"recursion_limit": 1})
bounded = graph.with_config(recursion_limit=3)  # the graph's own limit


def invalid_graph_node(state: MessagesState) -> Any:
    return ["not", "an", "update"]


def _invalid() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("bad", invalid_graph_node)
    builder.add_edge(START, "bad")
    return builder.compile()


invalid = _invalid()


#: The prompt that asks for a tool needing approval (``delete``: /tmp/x).
APPROVAL = "delete it"
#: The handler as ``A2A_HANDLER`` names it.
HANDLER = f"{__name__}.graph"


class Counted(TypedDict):
    count: int


def _counting() -> Any:
    builder = StateGraph(Counted)
    builder.add_node("count", lambda s: {"count": s["count"] + 1})
    builder.add_edge(START, "count")
    return LangGraphHandler(builder.compile(), input=lambda request, earlier: {"count": len(request.text)})


counting = _counting()

#: What it asks for that approval, and its answer after a yes and after a no.
QUESTION = "Delete /tmp/x? Reply yes or no."
ANSWERS = {"yes": "Deleted /tmp/x", "no": "Kept /tmp/x"}
#: The card's skill for it (the settings list none).
SKILL = {"id": "langgraph", "name": "LangGraph", "tags": ["think", "tools", "approve"]}
