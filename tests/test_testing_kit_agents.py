"""The test kit's ``a2a_agent`` fixture: an author's agent built with a framework (the
suite's test agents, each on its framework's own test model: PydanticAI's
``FunctionModel``, a langchain-core fake chat model, a ``Model`` of the OpenAI Agents
SDK) or the built-in LLM handler on the kit's fake model, served and asked through the
real A2A path, each turn read as a client reads it: the answer growing, the tools'
progress, an approval asked and given, the usage."""

from __future__ import annotations

import importlib

import pytest

from a2a.testing import AgentUnderTest, Turn
from a2a.testing.fake_model import openai_reply

AGENTS = ["pydantic_ai_agent", "langgraph_agent", "openai_agents_agent"]


@pytest.fixture(params=AGENTS)
def module(request):
    return importlib.import_module(f"tests.frameworks.{request.param}")


def test_a_framework_agent_answers_streamed_through_the_real_path(a2a_agent, module):
    agent: AgentUnderTest = a2a_agent(module.HANDLER)
    turn = agent.ask("hello")
    assert turn.state == "completed"
    assert turn.answer.strip() == "The answer is forty two"
    assert len(turn.streamed) >= 4 and turn.streamed[-1] == turn.answer  # it grew, then was whole
    assert turn.usage["inputTokens"] > 0 and turn.usage["outputTokens"] > 0


def test_its_tools_show_as_progress_and_an_approval_is_asked_then_given(a2a_agent, module):
    agent = a2a_agent(module.HANDLER)
    assert agent.ask("weather").progress == ["Calling weather", "weather answered"]
    asked: Turn = agent.ask(module.APPROVAL)
    assert asked.state == "input-required" and asked.question == module.QUESTION
    done = agent.reply(asked, "yes")
    assert done.state == "completed" and done.answer.strip() == module.ANSWERS["yes"]
    assert done.task["id"] == asked.task["id"] and len(agent.turns) == 3


def test_the_built_in_handler_on_the_fake_model(a2a_agent, fake_model):
    fake_model.chunk_delay = 0.02
    fake_model.queue(openai_reply("Paris is the capital of France."))
    turn = a2a_agent("a2a.handlers.llm.handle").ask("Capital of France?")
    assert turn.answer == "Paris is the capital of France." and len(turn.streamed) >= 4
    assert turn.usage == {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}
