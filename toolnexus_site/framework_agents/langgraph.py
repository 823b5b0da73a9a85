"""The site's LangGraph graph: one chat-model node over ``MessagesState``, on
langchain-core's ``FakeListChatModel`` (it streams its answer a character at a time) answering
deterministically; put your own chat model in :func:`respond` for a real one."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import END, START, MessagesState, StateGraph

from toolnexus_site.framework_agents import WORD_DELAY, offline_answer


async def respond(state: MessagesState) -> dict[str, Any]:
    """The model's turn: the last message back, streamed (``astream`` sees each token)."""
    answer = offline_answer(str(state["messages"][-1].content), "LangGraph")
    model = FakeListChatModel(responses=[answer], sleep=WORD_DELAY / 4)  # it streams a character at a time
    return {"messages": [await model.ainvoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("respond", respond)
builder.add_edge(START, "respond")
builder.add_edge("respond", END)
graph = builder.compile(name="langgraph-helper")
