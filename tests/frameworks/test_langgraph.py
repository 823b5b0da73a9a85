"""What only a LangGraph graph does (tests/frameworks/test_common.py has what every
framework's does), through the real JSON-RPC path on langchain-core's fake chat model:
the graph's own checkpointer as its memory and its pause, the reply as the resume value,
the framework's errors, another exception, usage, a state without messages as data."""

from __future__ import annotations

import pytest

from tests.frameworks import langgraph_agent
from tests.frameworks.support import answer, serve, state, status_text
from tests.helpers import send_wire

AGENTS = "tests.frameworks.langgraph_agent"


@pytest.fixture(autouse=True)
def served(settings):
    serve(settings, langgraph_agent)


def test_the_graph_s_own_checkpointer_is_its_memory(settings):
    settings.A2A_HANDLER = f"{AGENTS}.remembering"
    first = send_wire("my name is Ada")
    second = send_wire("memory", context_id=first["contextId"])
    assert answer(second) == [["You said: my name is Ada"]]
    assert answer(send_wire("memory")) == [["You said: "]]  # another context: nothing


@pytest.mark.parametrize("reply", ["Ada", "nope"])
def test_the_reply_s_text_is_a_free_question_s_resume_value(reply):
    asked = send_wire("ask")
    assert status_text(asked) == '{"question": "Your name?"}'
    assert answer(send_wire(reply, task_id=asked["id"])) == [[f"Hello {reply}"]]


def test_an_approval_says_what_it_asks_in_its_awaiting_data():
    asked = send_wire("delete it")
    [interrupt] = asked["status"]["message"]["parts"][1]["data"]["a2a.awaiting"]["interrupts"]
    assert interrupt["value"] == {"a2a.approval": "Delete /tmp/x?"}


def test_the_graph_s_own_checkpointer_pauses_and_resumes_too(settings):
    settings.A2A_HANDLER = f"{AGENTS}.remembering"
    asked = send_wire("delete it")
    assert answer(send_wire("yes", task_id=asked["id"])) == [["Deleted /tmp/x"]]


def test_the_framework_s_error_fails_the_task_with_its_message(settings):
    settings.A2A_HANDLER = f"{AGENTS}.explicit"  # recursion_limit 1: the tool loop cannot finish
    failed = send_wire("weather")
    assert state(failed) == "failed" and status_text(failed).startswith("LangGraph: Recursion limit of 1 reached")
    settings.A2A_HANDLER = f"{AGENTS}.invalid"
    assert status_text(send_wire("hello")).startswith("LangGraph: Expected dict, got ['not', 'an', 'update']")


def test_a_graph_looping_on_a_tool_stops_at_the_default_recursion_limit_and_keeps_its_usage():
    failed = send_wire("loop")  # the model calls the tool forever
    assert state(failed) == "failed" and status_text(failed).startswith("LangGraph: Recursion limit of 25 reached")
    assert failed["metadata"]["llm"]["usage"] == {"inputTokens": 91, "outputTokens": 65, "totalTokens": 156}


def test_the_graph_s_own_recursion_limit_holds(settings):
    settings.A2A_HANDLER = f"{AGENTS}.bounded"
    assert status_text(send_wire("loop")).startswith("LangGraph: Recursion limit of 3 reached")


def test_another_exception_fails_the_task_without_its_text():
    failed = send_wire("break")
    assert state(failed) == "failed" and status_text(failed) == "The agent failed: ValueError"


def test_usage_goes_into_the_task_s_llm_metadata():
    llm = send_wire("weather")["metadata"]["llm"]
    assert llm["framework"] == "langgraph"
    assert llm["usage"] == {"inputTokens": 14, "outputTokens": 10, "totalTokens": 24}  # two model calls


def test_a_graph_without_messages_answers_its_state_as_data(settings):
    settings.A2A_HANDLER = f"{AGENTS}.counting"
    assert answer(send_wire("hello")) == [[{"count": 6}]]  # len("hello") + 1
