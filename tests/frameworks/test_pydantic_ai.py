"""What only a PydanticAI agent does (tests/frameworks/test_common.py has what every
framework's does), through the real JSON-RPC path on PydanticAI's own ``FunctionModel``:
an approval as a data part, an external tool's result, the framework's error, usage over
turns, structured output, the explicit form's deps."""

from __future__ import annotations

import pytest

from a2a.testing import WireClient
from tests.frameworks import pydantic_ai_agent
from tests.frameworks.pydantic_ai_agent import DELETED
from tests.frameworks.support import answer, serve, state, status_text
from tests.helpers import send_wire

AGENTS = "tests.frameworks.pydantic_ai_agent"


@pytest.fixture(autouse=True)
def served(settings):
    serve(settings, pydantic_ai_agent)


def test_an_approval_as_a_data_part():
    asked = send_wire("delete")
    assert state(asked) == "input-required" and "needs your approval" in status_text(asked)
    v03 = WireClient(version="0.3")
    reply = {
        "kind": "message",
        "role": "user",
        "messageId": "m-data",
        "taskId": asked["id"],
        "parts": [{"kind": "data", "data": {"approved": True}}],
    }
    done = v03.send(reply)
    assert done["status"]["state"] == "completed" and DELETED == ["/tmp/x"]


def test_an_external_tool_takes_the_reply_as_its_result():
    asked = send_wire("lookup")
    assert state(asked) == "input-required" and "waits for its result" in status_text(asked)
    done = send_wire("forty-two", task_id=asked["id"])
    assert answer(done) == [["The tool said: forty-two "]]


def test_the_framework_s_error_fails_the_task_with_its_message():
    failed = send_wire("break")
    assert state(failed) == "failed"
    assert status_text(failed) == "PydanticAI: the model broke"


def test_a_failed_run_keeps_the_usage_of_its_model_calls(settings):
    settings.A2A_HANDLER = f"{AGENTS}.limited"
    failed = send_wire("weather")
    assert state(failed) == "failed" and status_text(failed).startswith("PydanticAI: The next request would exceed")
    llm = failed["metadata"]["llm"]
    assert llm["model"] == "scripted" and llm["usage"]["outputTokens"] > 0


def test_usage_goes_into_the_task_s_llm_metadata_summed_over_turns():
    asked = send_wire("delete")
    first = asked["metadata"]["llm"]
    assert first["framework"] == "pydantic-ai" and first["model"] == "scripted"
    assert first["usage"]["totalTokens"] > 0
    done = send_wire("yes", task_id=asked["id"])
    assert done["metadata"]["llm"]["usage"]["totalTokens"] > first["usage"]["totalTokens"]


def test_structured_output_is_a_data_part(settings):
    settings.A2A_HANDLER = f"{AGENTS}.structured"
    assert answer(send_wire("forecast")) == [[{"city": "Paris", "sunny": True}]]


def test_the_explicit_form_passes_deps_per_task(settings):
    settings.A2A_HANDLER = f"{AGENTS}.explicit"
    assert answer(send_wire("who")) == [["The tool said: deps are for who "]]
