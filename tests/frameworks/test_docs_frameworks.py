"""docs/frameworks.md's LangGraph examples, run as written: the approval graph (only yes
or no resumes it; "nope" asks again), and the fake chat model that streams word by word
and streams its tool calls, served through the real JSON-RPC path."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from a2a.handlers import loading
from stores.memory import MemoryTaskStore
from tests.frameworks.support import answer, chunks, progress, state, status_text, stream, streamed_text
from tests.helpers import send_wire
from tests.server import ROOT
from tests.thirdparty.readme import fenced_blocks, readme_section

SECTION = readme_section((ROOT / "docs" / "frameworks.md").read_text(), "## LangGraph")
#: The graph the fake model's test serves (``A2A_HANDLER`` names it).
GRAPH: Any = None


@pytest.fixture
def myproject(tmp_path, monkeypatch, settings) -> Iterator[ModuleType]:
    """The section's ``# myproject/<module>.py`` blocks as the package ``myproject``."""
    (tmp_path / "myproject").mkdir()
    (tmp_path / "myproject" / "__init__.py").write_text("")
    for block in fenced_blocks(SECTION, "python"):
        header = re.match(r"# (myproject/\w+\.py)\n", block)
        if header:
            (tmp_path / header.group(1)).write_text(block)
    monkeypatch.syspath_prepend(str(tmp_path))
    settings.TASK_STORE = MemoryTaskStore()
    loading._instances.clear()
    loading.load_handler.cache_clear()
    yield __import__("myproject")
    for name in [m for m in sys.modules if m == "myproject" or m.startswith("myproject.")]:
        del sys.modules[name]
    loading._instances.clear()
    loading.load_handler.cache_clear()


def test_the_approval_example_refunds_on_yes_only(myproject, settings):
    settings.A2A_HANDLER = "myproject.graphs.support"
    asked = send_wire("Refund my order A1")
    assert state(asked) == "input-required" and status_text(asked) == "Refund order A1? Reply yes or no."
    for reply in ("nope", "maybe"):
        again = send_wire(reply, task_id=asked["id"])
        assert state(again) == "input-required" and status_text(again) == "Refund order A1? Reply yes or no."
    assert answer(send_wire("no", task_id=asked["id"])) == [["Order A1 was not refunded."]]
    approved = send_wire("yes", task_id=send_wire("Refund my order A1")["id"])
    assert answer(approved) == [["Refunded order A1."]]


def test_the_fake_chat_model_streams_word_by_word_and_its_tool_calls(myproject, settings):
    """The page's fake, given the page's two messages, in a graph calling a tool: the
    tool call is progress, the answer streams in chunks."""
    global GRAPH
    from myproject import fake_chat_model

    [usage] = [b for b in fenced_blocks(SECTION, "python") if b.startswith("model = ")]
    namespace = {**vars(fake_chat_model), "AIMessage": AIMessage}
    exec(usage, namespace)  # the page's own construction of the model
    GRAPH = graph_on(namespace["model"])
    settings.A2A_HANDLER = f"{__name__}.GRAPH"
    events = stream("What is the weather in Paris?")
    assert progress(events) == ["Calling weather", "weather answered"]
    assert len(chunks(events)) >= 3 and chunks(events)[-1]["lastChunk"]
    assert streamed_text(events) == "It is sunny in Paris today, with a light breeze."


def graph_on(model: Any) -> Any:
    """A model and its tool, looping until the model answers."""

    @tool
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    async def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("think", think)
    builder.add_node("tools", ToolNode([weather]))
    builder.add_edge(START, "think")
    builder.add_conditional_edges("think", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "think")
    return builder.compile()
