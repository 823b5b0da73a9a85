"""A compiled LangGraph graph served as an A2A agent, through the real JSON-RPC path, on
langchain-core's fake chat model (no network, no key): the answer streamed in chunks,
tools as progress, memory per context (the task's checkpointer, or the graph's own),
``interrupt()`` as input-required (also after a restart, on the durable stores),
cancel, failures and usage."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

from a2a.handlers import loading
from a2a.handlers.frameworks.langgraph import LangGraphHandler
from a2a.runtime import runner
from a2a.testing import WireClient
from stores.memory import MemoryTaskStore
from tests.conftest import ALL_DATABASES, STORE_KINDS, make_store
from tests.frameworks.support import answer, chunks, progress, send, state, status_text, stream, streamed_text, wait_for

HERE = __name__
DELETED: list[str] = []
SLOW_WORDS: list[str] = []


class ScriptedChatModel(GenericFakeChatModel):
    """langchain-core's fake chat model, whose next message is chosen from the
    conversation (:func:`reply`), streamed word by word, tool calls included (the
    generic fake streams text only)."""

    messages: Iterator[AIMessage] = iter(())

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = reply(messages)
        pieces: list[AIMessageChunk] = [AIMessageChunk(content=w) for w in re.split(r"(\s)", str(message.content)) if w]
        for n, call in enumerate(message.tool_calls):
            args = json.dumps(call["args"])
            pieces.append(
                AIMessageChunk(
                    content="", tool_call_chunks=[{"name": call["name"], "args": args, "id": call["id"], "index": n}]
                )
            )
        pieces.append(
            AIMessageChunk(content="", usage_metadata={"input_tokens": 7, "output_tokens": 5, "total_tokens": 12})
        )
        for piece in pieces:
            if piece.content == "slow":
                for n in range(400):
                    time.sleep(0.02)
                    SLOW_WORDS.append(str(n))
                    self._emit(ChatGenerationChunk(message=AIMessageChunk(content=f"w{n} ")), run_manager)
                    yield ChatGenerationChunk(message=AIMessageChunk(content=f"w{n} "))
                continue
            time.sleep(0.01)  # as a model streams over the network
            chunk = ChatGenerationChunk(message=piece)
            self._emit(chunk, run_manager)
            yield chunk

    @staticmethod
    def _emit(chunk: ChatGenerationChunk, run_manager: CallbackManagerForLLMRun | None) -> None:
        if run_manager is not None:
            run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)


def reply(messages: list[BaseMessage]) -> AIMessage:
    """The model: answers what a tool returned, else calls the tool the prompt names."""
    last = messages[-1]
    if last.type == "tool":
        return AIMessage(f"The tool said: {last.content}")
    prompt = str(last.content)
    if prompt == "weather":
        return AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}])
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


def think(state: MessagesState) -> dict[str, Any]:
    return {"messages": [model.invoke(state["messages"])]}


def approve(state: MessagesState) -> dict[str, Any] | None:
    """Deleting needs a person's approval: ``interrupt()``."""
    if str(state["messages"][-1].content).startswith("delete"):
        if interrupt("Delete /tmp/x? Reply yes or no.") is True:
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
    builder.add_node("tools", ToolNode([weather]))
    builder.add_node("approve", approve)
    builder.add_conditional_edges(START, route, {"approve": "approve", "think": "think"})
    builder.add_conditional_edges("think", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "think")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=checkpointer)


graph = build()
remembering = build(InMemorySaver())  # the graph's own checkpointer: its memory, one thread per caller and context
explicit = LangGraphHandler(graph, config={"recursion_limit": 1})


def invalid_graph_node(state: MessagesState) -> Any:
    return ["not", "an", "update"]


def _invalid() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("bad", invalid_graph_node)
    builder.add_edge(START, "bad")
    return builder.compile()


invalid = _invalid()


@pytest.fixture(autouse=True)
def served(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = f"{HERE}.graph"
    DELETED.clear()


def test_the_answer_streams_in_chunks_and_a_poller_reads_the_same_artifact():
    events = stream("hello")
    parts = chunks(events)
    assert len(parts) >= 4 and parts[-1]["lastChunk"] and all(c["append"] for c in parts[1:-1])
    assert streamed_text(events) == "The answer is forty two"
    task = WireClient().result("GetTask", {"id": events[0]["task"]["id"]})
    assert answer(task) == [["The answer is forty two"]]
    assert state(task) == "completed"


def test_a_tool_call_and_its_result_are_progress():
    events = stream("weather")
    assert progress(events) == ["Calling weather", "weather answered"]
    assert streamed_text(events) == "The tool said: sunny in Paris"


@pytest.mark.parametrize("handler", ["graph", "remembering"])
def test_a_second_task_of_the_context_remembers_the_first(settings, handler):
    settings.A2A_HANDLER = f"{HERE}.{handler}"
    first = send("my name is Ada")
    second = send("memory", context_id=first["contextId"])
    assert answer(second) == [["You said: my name is Ada"]]
    assert answer(send("memory")) == [["You said: "]]  # another context: nothing


def test_an_interrupt_asks_and_yes_resumes_the_graph():
    asked = send("delete it")
    assert state(asked) == "input-required"
    assert status_text(asked) == "Delete /tmp/x? Reply yes or no."
    done = send("YES", task_id=asked["id"])
    assert state(done) == "completed" and DELETED == ["/tmp/x"]
    assert answer(done) == [["Deleted /tmp/x"]]


def test_no_denies():
    asked = send("delete it")
    done = send("no", task_id=asked["id"])
    assert answer(done) == [["Kept /tmp/x"]] and DELETED == []


def test_the_reply_s_text_is_the_resume_value():
    asked = send("ask")
    assert status_text(asked) == '{"question": "Your name?"}'
    assert answer(send("Ada", task_id=asked["id"])) == [["Hello Ada"]]


def test_the_graph_s_own_checkpointer_pauses_and_resumes_too(settings):
    settings.A2A_HANDLER = f"{HERE}.remembering"
    asked = send("delete it")
    assert answer(send("yes", task_id=asked["id"])) == [["Deleted /tmp/x"]]


@ALL_DATABASES
@pytest.mark.parametrize("kind", [k for k in STORE_KINDS if k != "memory"])
def test_the_interrupt_resumes_after_a_restart(settings, tmp_path, kind):
    settings.TASK_STORE = make_store(kind, tmp_path)
    asked = send("delete it")
    assert state(asked) == "input-required"
    runner._runner.shutdown(grace=5)
    runner._runner = None
    loading._instances.clear()
    loading.load_handler.cache_clear()  # a new adapter, a new (empty) checkpointer
    settings.TASK_STORE = make_store(kind, tmp_path)
    done = send("approve", task_id=asked["id"])
    assert state(done) == "completed" and DELETED == ["/tmp/x"]


def test_cancel_stops_the_run(settings):
    store = settings.TASK_STORE
    SLOW_WORDS.clear()
    task = WireClient().send("slow", blocking=False)["task"]
    wait_for(store, task["id"], lambda t: t.get("artifacts"))
    assert state(WireClient().result("CancelTask", {"id": task["id"]})) == "canceled"
    time.sleep(0.3)
    assert state(WireClient().result("GetTask", {"id": task["id"]})) == "canceled"
    assert len(SLOW_WORDS) < 400


def test_the_framework_s_error_fails_the_task_with_its_message(settings):
    settings.A2A_HANDLER = f"{HERE}.explicit"  # recursion_limit 1: the tool loop cannot finish
    failed = send("weather")
    assert state(failed) == "failed" and status_text(failed).startswith("LangGraph: Recursion limit of 1 reached")
    settings.A2A_HANDLER = f"{HERE}.invalid"
    assert status_text(send("hello")).startswith("LangGraph: Expected dict, got ['not', 'an', 'update']")


def test_another_exception_fails_the_task_without_its_text():
    failed = send("break")
    assert state(failed) == "failed" and status_text(failed) == "The agent failed: ValueError"


def test_usage_goes_into_the_task_s_llm_metadata():
    llm = send("weather")["metadata"]["llm"]
    assert llm["framework"] == "langgraph"
    assert llm["usage"] == {"inputTokens": 14, "outputTokens": 10, "totalTokens": 24}  # two model calls


def test_a_graph_without_messages_answers_its_state_as_data(settings):
    settings.A2A_HANDLER = f"{HERE}.counting"
    assert answer(send("hello")) == [[{"count": 6}]]  # len("hello") + 1


class Counted(TypedDict):
    count: int


def _counting() -> Any:
    builder = StateGraph(Counted)
    builder.add_node("count", lambda s: {"count": s["count"] + 1})
    builder.add_edge(START, "count")
    return LangGraphHandler(builder.compile(), input=lambda request, earlier: {"count": len(request.text)})


counting = _counting()
