"""The test kit for agent authors (and this project's own suite), loaded by pytest as the
plugin ``a2a.testing.plugin``: a wire-level client to the project's ASGI app or a live
server (and its operations over every binding and version), a fake model server for
the LLM handler, a scripted fake remote agent (and the JSON-RPC answers of one), and assertions on tasks and event
sequences. docs/testing.md shows a first test."""

from a2a.testing.agent import AgentUnderTest, Turn
from a2a.testing.assertions import (
    artifact_text,
    assert_events,
    assert_task_state,
    event_kinds,
    short_state,
    state_of,
    task_of,
)
from a2a.testing.binding import Binding, WireError
from a2a.testing.client import WireClient, message, result_of, v03_message, v10_message
from a2a.testing.envelopes import rpc_error, rpc_result, sse_event
from a2a.testing.fake_agent import FakeAgent, Step, fake_agent
from a2a.testing.fake_model import (
    FakeModel,
    Reply,
    anthropic_reply,
    anthropic_tool_use,
    fake_model,
    openai_reply,
    openai_tool_call,
)

__all__ = [
    "AgentUnderTest",
    "Binding",
    "FakeAgent",
    "FakeModel",
    "Reply",
    "Step",
    "Turn",
    "WireClient",
    "WireError",
    "anthropic_reply",
    "anthropic_tool_use",
    "artifact_text",
    "assert_events",
    "assert_task_state",
    "event_kinds",
    "fake_agent",
    "fake_model",
    "message",
    "openai_reply",
    "openai_tool_call",
    "result_of",
    "rpc_error",
    "rpc_result",
    "short_state",
    "sse_event",
    "state_of",
    "task_of",
    "v03_message",
    "v10_message",
]
