"""What every framework's agent does the same way, through the real JSON-RPC path on
each framework's own test model: the answer streamed in chunks and polled whole, tool
calls as progress, memory per context (another context has none), a tool needing a
person's approval (``input-required``, then yes or no), the run resumed after a
restart on the durable stores, cancel mid-stream, and usage in the ``llm`` metadata."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from a2a.testing import WireClient
from a2a.testing.fake_agent import artifact, completed, failed
from tests.conftest import ALL_DATABASES
from tests.frameworks.support import (
    DURABLE,
    answer,
    assert_cancel_stops,
    assert_resumes_after_restart,
    assert_streams,
    assert_tool_progress,
    serve,
    state,
    status_text,
)

FRAMEWORKS = {
    "pydantic-ai": "pydantic_ai_agent",
    "langgraph": "langgraph_agent",
    "openai-agents": "openai_agents_agent",
}


@pytest.fixture(params=sorted(FRAMEWORKS))
def served(request, settings) -> ModuleType:
    """The module of one framework's test agent, served as the project's agent."""
    return serve(settings, importlib.import_module(f"tests.frameworks.{FRAMEWORKS[request.param]}"))


def texts(task: dict) -> list[list[str]]:
    return [[str(t).strip() for t in artifact] for artifact in answer(task)]


def test_the_answer_streams_in_chunks_and_a_poller_reads_the_same_artifact(served):
    assert_streams("hello", "The answer is forty two")


def test_a_tool_call_and_its_result_are_progress(served):
    assert_tool_progress()


def test_a_second_task_of_the_context_remembers_the_first_and_another_context_does_not(served):
    first = WireClient().send("my name is Ada")["task"]
    assert texts(WireClient().send("memory", context_id=first["contextId"])["task"]) == [["You said: my name is Ada"]]
    assert texts(WireClient().send("memory")["task"]) == [["You said:"]]


@pytest.mark.parametrize(("reply", "deleted"), [("yes", ["/tmp/x"]), ("No.", [])])
def test_a_tool_needing_approval_pauses_for_a_person(served, reply, deleted):
    asked = WireClient().send(served.APPROVAL)["task"]
    assert state(asked) == "input-required" and served.DELETED == []
    assert status_text(asked) == served.QUESTION
    assert not [key for key in asked if key.startswith("_")]  # the paused run stays on the server
    done = WireClient().send(reply, task_id=asked["id"])["task"]
    assert state(done) == "completed" and deleted == served.DELETED
    assert texts(done) == [[served.ANSWERS["yes" if deleted else "no"]]]


@ALL_DATABASES
@pytest.mark.parametrize("kind", DURABLE)
def test_the_run_resumes_after_a_restart(served, settings, tmp_path, kind):
    assert_resumes_after_restart(settings, tmp_path, kind, served.APPROVAL, "approve")
    assert served.DELETED == ["/tmp/x"]


def test_cancel_stops_the_run_where_it_stands(served, settings):
    assert_cancel_stops(settings, served.SLOW_WORDS)


def test_usage_is_in_the_task_s_llm_metadata(served, request):
    llm = WireClient().send("weather")["task"]["metadata"]["llm"]
    assert llm["framework"] == request.node.callspec.params["served"]
    assert llm["usage"]["totalTokens"] > 0


def test_the_card_describes_the_agent_unless_the_settings_do(served, settings):
    settings.A2A_SKILLS = []
    [skill] = WireClient().request("GET", "/.well-known/agent-card.json").json()["skills"]
    assert {key: skill[key] for key in served.SKILL} == served.SKILL and skill["description"]
    settings.A2A_SKILLS = [{"id": "mine", "name": "Mine", "description": "Set in the settings."}]
    assert [s["id"] for s in WireClient().request("GET", "/.well-known/agent-card.json").json()["skills"]] == ["mine"]


def test_a_remote_a2a_agent_is_a_tool_run_by_delegation(served, settings, fake_agent):
    settings.A2A_REMOTE_AGENTS = {"billing": {"URL": fake_agent.url, "RETRIES": 1, "TIMEOUT": 5}}
    fake_agent.script([artifact("You owe 42 EUR."), completed()])
    task = WireClient().send("billing")["task"]
    assert state(task) == "completed" and texts(task) == [["The tool said: You owe 42 EUR."]]
    [delegation] = task["metadata"]["a2a.delegations"]  # the remote task, recorded on the local one
    assert delegation["agent"] == "billing" and delegation["state"] == "completed"
    asked = [r.body["params"]["message"]["parts"][0]["text"] for r in fake_agent.requests if "params" in r.body]
    assert asked == ["What do I owe?"]


def test_a_remote_agent_that_fails_is_an_error_the_model_reads(served, settings, fake_agent):
    settings.A2A_REMOTE_AGENTS = {"billing": {"URL": fake_agent.url, "RETRIES": 1, "TIMEOUT": 5}}
    fake_agent.script([failed("card declined")])
    [[answer]] = texts(WireClient().send("billing")["task"])
    assert answer.startswith("The tool said: Error:") and "card declined" in answer
