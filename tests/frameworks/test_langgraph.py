"""What only a LangGraph graph does (tests/frameworks/test_common.py has what every
framework's does), through the real JSON-RPC path on langchain-core's fake chat model:
the graph's own checkpointer as its memory and its pause, the reply as the resume value,
the framework's errors, another exception, usage, a state without messages as data."""

from __future__ import annotations

import pytest

from a2a.testing import WireClient
from tests.frameworks import langgraph_agent
from tests.frameworks.support import answer, serve, state, status_text

AGENTS = "tests.frameworks.langgraph_agent"


@pytest.fixture(autouse=True)
def served(settings):
    serve(settings, langgraph_agent)


def test_the_graph_s_own_checkpointer_is_its_memory(settings):
    settings.A2A_HANDLER = f"{AGENTS}.remembering"
    first = WireClient().send("my name is Ada")["task"]
    second = WireClient().send("memory", context_id=first["contextId"])["task"]
    assert answer(second) == [["You said: my name is Ada"]]
    assert answer(WireClient().send("memory")["task"]) == [["You said: "]]  # another context: nothing


def test_the_reply_s_text_is_the_resume_value():
    asked = WireClient().send("ask")["task"]
    assert status_text(asked) == '{"question": "Your name?"}'
    assert answer(WireClient().send("Ada", task_id=asked["id"])["task"]) == [["Hello Ada"]]


def test_the_graph_s_own_checkpointer_pauses_and_resumes_too(settings):
    settings.A2A_HANDLER = f"{AGENTS}.remembering"
    asked = WireClient().send("delete it")["task"]
    assert answer(WireClient().send("yes", task_id=asked["id"])["task"]) == [["Deleted /tmp/x"]]


def test_the_framework_s_error_fails_the_task_with_its_message(settings):
    settings.A2A_HANDLER = f"{AGENTS}.explicit"  # recursion_limit 1: the tool loop cannot finish
    failed = WireClient().send("weather")["task"]
    assert state(failed) == "failed" and status_text(failed).startswith("LangGraph: Recursion limit of 1 reached")
    settings.A2A_HANDLER = f"{AGENTS}.invalid"
    assert status_text(WireClient().send("hello")["task"]).startswith(
        "LangGraph: Expected dict, got ['not', 'an', 'update']"
    )


def test_another_exception_fails_the_task_without_its_text():
    failed = WireClient().send("break")["task"]
    assert state(failed) == "failed" and status_text(failed) == "The agent failed: ValueError"


def test_usage_goes_into_the_task_s_llm_metadata():
    llm = WireClient().send("weather")["task"]["metadata"]["llm"]
    assert llm["framework"] == "langgraph"
    assert llm["usage"] == {"inputTokens": 14, "outputTokens": 10, "totalTokens": 24}  # two model calls


def test_a_graph_without_messages_answers_its_state_as_data(settings):
    settings.A2A_HANDLER = f"{AGENTS}.counting"
    assert answer(WireClient().send("hello")["task"]) == [[{"count": 6}]]  # len("hello") + 1
