"""What only an OpenAI Agents SDK agent does (tests/frameworks/test_common.py has what
every framework's does), through the real JSON-RPC path on a fake ``Model`` of the SDK's
interface: the framework's errors, usage per turn, structured output."""

from __future__ import annotations

import pytest

from tests.frameworks import openai_agents_agent
from tests.frameworks.support import answer, serve, state, status_text
from tests.helpers import send_wire

AGENTS = "tests.frameworks.openai_agents_agent"


@pytest.fixture(autouse=True)
def served(settings):
    serve(settings, openai_agents_agent)


def test_the_framework_s_error_fails_the_task_with_its_message(settings):
    failed = send_wire("break")
    assert state(failed) == "failed" and status_text(failed) == "OpenAI Agents: the model broke"
    settings.A2A_HANDLER = f"{AGENTS}.explicit"  # max_turns 1: the tool's answer needs a second
    failed = send_wire("weather")
    assert status_text(failed) == "OpenAI Agents: Max turns (1) exceeded"
    assert failed["metadata"]["llm"]["usage"] == {"inputTokens": 7, "outputTokens": 5, "totalTokens": 12}


def test_usage_goes_into_the_task_s_llm_metadata_per_turn():
    asked = send_wire("delete")
    assert asked["metadata"]["llm"]["framework"] == "openai-agents"
    assert asked["metadata"]["llm"]["model"] == "FakeModel"  # a Model object without a `model` name: its class
    assert asked["metadata"]["llm"]["usage"]["totalTokens"] == 12
    done = send_wire("yes", task_id=asked["id"])
    assert done["metadata"]["llm"]["usage"] == {"inputTokens": 14, "outputTokens": 10, "totalTokens": 24}


def test_structured_output_is_a_data_part(settings):
    settings.A2A_HANDLER = f"{AGENTS}.forecaster"
    assert answer(send_wire("forecast")) == [[{"city": "Paris", "sunny": True}]]
