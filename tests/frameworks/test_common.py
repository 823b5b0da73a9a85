"""What every framework's agent does the same way, through the real JSON-RPC path on
each framework's own test model: the answer streamed in chunks and polled whole, tool
calls as progress, memory per context (another context has none, another caller in the
same context neither), a tool needing a person's approval (``input-required``, then yes
or no; asked again after anything else), the run resumed after a restart on the durable
stores, cancel mid-stream, and usage in the ``llm`` metadata."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from a2a.handlers.frameworks.answer import AnswerStream
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
    chunks,
    serve,
    state,
    status_text,
    stream,
    streamed_text,
)
from tests.helpers import send_wire

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


def test_an_answer_whole_before_its_first_chunk_is_one_last_chunk_carried_by_the_completion(served, monkeypatch):
    """No chunk saved before the answer is whole (a fast model): the completion carries
    the artifact, which a streaming client still reads as one last chunk before the
    final status, and a poller as the same single-part artifact."""
    monkeypatch.setattr(AnswerStream, "interval", 60.0)
    events = stream("hello")
    parts = chunks(events)
    assert len(parts) == 1 and parts[0]["lastChunk"] and not parts[0].get("append")
    assert parts[0]["artifact"]["name"] == "answer"
    assert streamed_text(events).strip() == "The answer is forty two"
    assert [i for i, e in enumerate(events) if "artifactUpdate" in e] == [len(events) - 2]
    assert state(events[-1]["statusUpdate"]) == "completed"
    task = WireClient().result("GetTask", {"id": events[0]["task"]["id"]})
    assert [a["artifactId"] for a in task["artifacts"]] == [parts[0]["artifact"]["artifactId"]]
    assert texts(task) == [["The answer is forty two"]]


def test_a_tool_call_and_its_result_are_progress(served):
    assert_tool_progress()


def test_a_second_task_of_the_context_remembers_the_first_and_another_context_does_not(served):
    first = send_wire("my name is Ada")
    assert texts(send_wire("memory", context_id=first["contextId"])) == [["You said: my name is Ada"]]
    assert texts(send_wire("memory")) == [["You said:"]]


@pytest.mark.django_db(transaction=True)
def test_memory_does_not_cross_callers_in_one_context(served, settings):
    """Two authenticated callers sending the same ``contextId``: each one's agent hears
    only that caller's earlier tasks (a context is per owner), never the other's."""
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    callers = {name: {"Authorization": f"Bearer {token(name)}"} for name in ("alice", "bob")}
    client = WireClient()
    first = client.send("I am alice", headers=callers["alice"])["task"]
    context = first["contextId"]
    client.send("I am bob", context_id=context, headers=callers["bob"])
    remembered = {
        name: client.send("memory", context_id=context, headers=headers)["task"] for name, headers in callers.items()
    }
    assert texts(remembered["alice"]) == [["You said: I am alice"]]
    assert texts(remembered["bob"]) == [["You said: I am bob"]]
    assert {task["contextId"] for task in remembered.values()} == {context}


def token(username: str) -> str:
    return str(Token.objects.create(user=User.objects.create_user(username)).key)


@pytest.mark.parametrize(("reply", "deleted"), [("yes", ["/tmp/x"]), ("No.", [])])
def test_a_tool_needing_approval_pauses_for_a_person(served, reply, deleted):
    asked = send_wire(served.APPROVAL)
    assert state(asked) == "input-required" and served.DELETED == []
    assert status_text(asked) == served.QUESTION
    assert not [key for key in asked if key.startswith("_")]  # the paused run stays on the server
    done = send_wire(reply, task_id=asked["id"])
    assert state(done) == "completed" and deleted == served.DELETED
    assert texts(done) == [[served.ANSWERS["yes" if deleted else "no"]]]


@pytest.mark.parametrize("served", ["openai-agents", "pydantic-ai"], indirect=True)
def test_a_tool_s_arguments_in_the_awaiting_data_are_an_object(served):
    """The same shape whatever the framework's own (a JSON string for the Agents SDK)."""
    asked = send_wire(served.APPROVAL)
    [approval] = asked["status"]["message"]["parts"][1]["data"]["a2a.awaiting"]["approvals"]
    assert approval["tool"] == "delete" and approval["args"] == {"path": "/tmp/x"}


@pytest.mark.parametrize(("replies", "deleted"), [(["nope", "maybe later", "yes"], ["/tmp/x"]), (["nope", "no"], [])])
def test_a_reply_that_is_neither_yes_nor_no_asks_again(served, replies, deleted):
    asked = send_wire(served.APPROVAL)
    for reply in replies[:-1]:
        again = send_wire(reply, task_id=asked["id"])
        assert state(again) == "input-required" and status_text(again) == served.QUESTION and served.DELETED == []
        assert again["metadata"]["llm"] == asked["metadata"]["llm"]  # asking again spends nothing, names the model
    assert state(send_wire(replies[-1], task_id=asked["id"])) == "completed" and deleted == served.DELETED


@ALL_DATABASES
@pytest.mark.parametrize("kind", DURABLE)
def test_the_run_resumes_after_a_restart(served, settings, tmp_path, kind):
    assert_resumes_after_restart(settings, tmp_path, kind, served.APPROVAL, "approve")
    assert served.DELETED == ["/tmp/x"]


def test_cancel_stops_the_run_where_it_stands(served, settings):
    assert_cancel_stops(settings, served.SLOW_WORDS)


def test_usage_is_in_the_task_s_llm_metadata(served, request):
    llm = send_wire("weather")["metadata"]["llm"]
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
    task = send_wire("billing")
    assert state(task) == "completed" and texts(task) == [["The tool said: You owe 42 EUR."]]
    [delegation] = task["metadata"]["a2a.delegations"]  # the remote task, recorded on the local one
    assert delegation["agent"] == "billing" and delegation["state"] == "completed"
    asked = [r.body["params"]["message"]["parts"][0]["text"] for r in fake_agent.requests if "params" in r.body]
    assert asked == ["What do I owe?"]


def test_a_remote_agent_that_fails_is_an_error_the_model_reads(served, settings, fake_agent):
    settings.A2A_REMOTE_AGENTS = {"billing": {"URL": fake_agent.url, "RETRIES": 1, "TIMEOUT": 5}}
    fake_agent.script([failed("card declined")])
    [[answer]] = texts(send_wire("billing"))
    assert answer.startswith("The tool said: Error:") and "card declined" in answer
