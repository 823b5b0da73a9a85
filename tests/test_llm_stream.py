"""The built-in LLM handler streams the model's answer as artifact chunks (the shared core
of the framework adapters), against the test kit's fake model streaming server-sent
events in both wire styles, through the real JSON-RPC path: the answer in at least three
chunks before ``completed`` and polled whole, the usage recorded, a tool call while
streaming, the text before a tool call replaced, a stream that fails mid-way."""

from __future__ import annotations

import pytest

from a2a.testing.fake_model import Reply, anthropic_reply, anthropic_tool_use, openai_reply, openai_tool_call
from tests.conftest import ALL_DATABASES
from tests.frameworks.support import assert_streams, chunks, state, status_text, stream, streamed_text
from tests.helpers import send_wire

pytestmark = ALL_DATABASES

ANSWER = "The answer grows one word at a time here."
USAGE = {"openai": (7, 3), "anthropic": (11, 5)}


def order_status(order: str) -> str:
    """The status of an order."""
    return f"order {order}: shipped"


@pytest.fixture(params=["openai", "anthropic"])
def style(request, settings, fake_model, use_store) -> str:
    settings.A2A_LLM_STYLE = request.param
    settings.A2A_HANDLER = "a2a.handlers.llm.handle"
    settings.A2A_LLM_TOOLS = [f"{__name__}.order_status"]
    fake_model.chunk_delay = 0.02  # the answer arrives word by word, as from a real model
    return request.param


def reply(style: str, text: str) -> Reply:
    return anthropic_reply(text) if style == "anthropic" else openai_reply(text)


def tool_call(style: str) -> Reply:
    if style == "anthropic":
        return anthropic_tool_use("order_status", {"order": "A1"}, use_id="call_1")
    return openai_tool_call("order_status", {"order": "A1"}, call_id="call_1")


def test_the_answer_streams_in_chunks_and_the_usage_is_recorded(style, fake_model):
    fake_model.queue(reply(style, ANSWER))
    assert_streams("Hello?", ANSWER)
    assert fake_model.requests[0].body["stream"] is True
    task = send_wire("Again?")
    tokens_in, tokens_out = USAGE[style]
    assert task["metadata"]["llm"]["usage"] == {
        "inputTokens": tokens_in,
        "outputTokens": tokens_out,
        "totalTokens": tokens_in + tokens_out,
    }


def test_a_tool_call_works_while_streaming(style, fake_model):
    fake_model.queue(tool_call(style), reply(style, ANSWER))
    events = stream("Where is A1?")
    assert state(events[-1]["statusUpdate"]) == "completed"
    assert len(chunks(events)) >= 4 and streamed_text(events) == ANSWER
    second = fake_model.requests[1].body["messages"]
    if style == "anthropic":
        assert second[-2]["content"][0] == {
            "type": "tool_use",
            "id": "call_1",
            "name": "order_status",
            "input": {"order": "A1"},
        }
        assert second[-1]["content"][0]["content"] == "order A1: shipped"
    else:
        assert second[-2]["tool_calls"][0]["function"] == {"name": "order_status", "arguments": '{"order": "A1"}'}
        assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "order A1: shipped"}
    rounds = send_wire("Again?")["metadata"]["llm"]["rounds"]
    assert [r.get("tools") for r in rounds] == [None]  # this turn: no tool (the queue repeats the answer)


def test_the_text_before_a_tool_call_is_replaced_by_the_answer(settings, fake_model, use_store):
    settings.A2A_HANDLER = "a2a.handlers.llm.handle"
    settings.A2A_LLM_TOOLS = [f"{__name__}.order_status"]
    fake_model.chunk_delay = 0.02
    thinking = openai_tool_call("order_status", {"order": "A1"})
    thinking.body["choices"][0]["message"]["content"] = "Let me look that up for you."
    fake_model.queue(thinking, openai_reply(ANSWER))
    events = stream("Where is A1?")
    seen, text = [], ""
    for chunk in chunks(events):  # as a streaming client rebuilds the answer, chunk by chunk
        piece = "".join(p.get("text", "") for p in chunk["artifact"]["parts"])
        text = text + piece if chunk.get("append") else piece
        seen.append(text)
    assert seen[-1] == ANSWER
    assert all(ANSWER.startswith(t) or "The answer" not in t for t in seen)  # never the thinking and the answer
    assert [[p["text"] for p in a["parts"]] for a in send_wire("Again?")["artifacts"]] == [[ANSWER]]


def test_a_stream_that_fails_midway_fails_the_task_with_the_providers_error(settings, fake_model, use_store):
    settings.A2A_HANDLER = "a2a.handlers.llm.handle"
    settings.A2A_LLM_STYLE = "anthropic"
    broken = anthropic_reply("never")
    broken.body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    fake_model.queue(broken)
    task = send_wire("Hello?")
    assert state(task) == "failed"
    assert "Overloaded (overloaded_error)" in status_text(task)
