"""An OpenAI Agents SDK agent on the SDK's own OpenAI models, through the real JSON-RPC
path and the test kit's fake model server (HTTP on loopback), on both of the SDK's model
paths: the Responses API and Chat Completions. The earlier turns of the context go in as
input items each path takes, also after a paused run is restored for an approval."""

from __future__ import annotations

import pytest

from tests.frameworks import openai_agents_http
from tests.frameworks.support import answer, state
from tests.helpers import send_wire


@pytest.fixture(params=["responses", "chat"])
def served(request, settings, fake_model) -> str:
    """One model path's agent served as the project's agent; its kind."""
    settings.A2A_HANDLER = openai_agents_http.use(request.param, fake_model)
    return str(request.param)


def test_an_approval_in_a_context_with_an_earlier_task_runs_the_tool_and_completes(served, fake_model):
    first = send_wire("hello")
    assert answer(first) == [["Hello there"]]
    asked = send_wire("delete", context_id=first["contextId"])
    assert state(asked) == "input-required" and openai_agents_http.DELETED == []
    done = send_wire("yes", task_id=asked["id"])
    assert state(done) == "completed", done["status"]
    assert answer(done) == [["The tool said: deleted /tmp/x"]]
    assert openai_agents_http.DELETED == ["/tmp/x"]
    assert done["metadata"]["llm"]["model"] == "fake-model"  # the SDK's model object's name
    # The model heard the earlier task the same way before the pause and after the
    # restored run, in that path's own form.
    before, after = (conversation(fake_model.requests[i].body) for i in (1, -1))
    said = [(i["role"], text(i.get("content"))) for i in after if i.get("role") in ("user", "assistant")]
    assert said[:3] == [("user", "hello"), ("assistant", "Hello there"), ("user", "delete")]
    assert after[: len(before)] == before


def conversation(body: dict) -> list[dict]:
    """The items (Responses) or messages (Chat Completions) a request sent the model."""
    return body["input"] if "input" in body else body["messages"]


def text(content: object) -> str:
    """A message's text, whether a string or a list of text parts."""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")
