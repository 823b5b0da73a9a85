"""A PydanticAI agent served as an A2A agent, through the real JSON-RPC path, on
PydanticAI's own ``FunctionModel`` (no network, no key): the answer streamed in chunks,
tools as progress, memory per context, approvals (also after a restart, on the durable
stores), external tools, cancel, failures, structured output and usage."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, CallDeferred, RunContext
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from a2a.handlers import loading
from a2a.handlers.frameworks.pydantic_ai import PydanticAIHandler
from a2a.runtime import runner
from a2a.testing import WireClient
from stores.memory import MemoryTaskStore
from tests.conftest import ALL_DATABASES, STORE_KINDS, make_store
from tests.frameworks.support import (
    answer,
    chunks,
    progress,
    send,
    state,
    status_text,
    stream,
    streamed_text,
    wait_for,
)

HERE = __name__
DELETED: list[str] = []
SLOW_WORDS: list[str] = []


def _prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    ]


async def _words(text: str) -> AsyncIterator[str]:
    """``text`` word by word, as a model streams it over the network (a few milliseconds
    apart: words that come while a chunk is being saved go out together in the next)."""
    for word in text.split(" "):
        await asyncio.sleep(0.01)
        yield word + " "


async def scripted(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """The model: answers what a tool returned, else calls the tool the prompt names."""
    returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)] if messages else []
    if returned:
        async for word in _words(f"The tool said: {returned[0].content}"):
            yield word
        return
    prompt = _prompts(messages)[-1]
    if prompt in ("weather", "delete", "lookup", "who"):
        args = {"weather": '{"city": "Paris"}', "delete": '{"path": "/tmp/x"}', "lookup": '{"key": "k"}'}
        yield {0: DeltaToolCall(name=prompt, json_args=args.get(prompt, "{}"), tool_call_id=f"call-{prompt}")}
    elif prompt == "memory":
        async for word in _words("You said: " + " | ".join(_prompts(messages)[:-1])):
            yield word
    elif prompt == "slow":
        for n in range(400):
            await asyncio.sleep(0.02)
            SLOW_WORDS.append(f"w{n}")
            yield f"w{n} "
    elif prompt == "break":
        raise UnexpectedModelBehavior("the model broke")
    else:
        async for word in _words("The answer is forty two"):
            yield word


agent = Agent(FunctionModel(stream_function=scripted, model_name="scripted"), name="helper", deps_type=str)


@agent.tool_plain
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@agent.tool_plain(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (a person approves first)."""
    DELETED.append(path)
    return f"deleted {path}"


@agent.tool_plain
def lookup(key: str) -> str:
    """A value only the client knows (an external tool)."""
    raise CallDeferred


@agent.tool
def who(ctx: RunContext[str]) -> str:
    """Who is asking (the run's deps)."""
    return f"deps are {ctx.deps}"


explicit = PydanticAIHandler(agent, deps=lambda request: f"for {request.text}")


class Forecast(BaseModel):
    city: str
    sunny: bool


async def forecasting(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    yield {0: DeltaToolCall(name=info.output_tools[0].name, json_args='{"city": "Paris", "sunny": true}')}


structured = Agent(FunctionModel(stream_function=forecasting), output_type=Forecast)


@pytest.fixture(autouse=True)
def served(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = f"{HERE}.agent"
    DELETED.clear()


def test_the_answer_streams_in_chunks_and_a_poller_reads_the_same_artifact():
    events = stream("hello")
    parts = chunks(events)
    assert len(parts) >= 4  # at least three growing chunks, then the whole answer
    assert all(c["append"] for c in parts[1:-1]) and parts[-1]["lastChunk"] and not parts[-1].get("append")
    assert state(events[-1]["statusUpdate"]) == "completed"
    assert streamed_text(events).strip() == "The answer is forty two"
    task = WireClient().result("GetTask", {"id": events[0]["task"]["id"]})
    assert answer(task) == [["The answer is forty two "]]
    assert answer(send("hello")) == [["The answer is forty two "]]


def test_a_tool_call_and_its_result_are_progress():
    events = stream("weather")
    assert progress(events) == ["Calling weather", "weather answered"]
    assert streamed_text(events).strip() == "The tool said: sunny in Paris"


def test_a_second_task_of_the_context_remembers_the_first():
    first = send("my name is Ada")
    second = send("memory", context_id=first["contextId"])
    assert answer(second) == [["You said: my name is Ada "]]
    assert answer(send("memory")) == [["You said:  "]]  # another context: nothing


def test_a_tool_needing_approval_asks_and_yes_runs_it():
    asked = send("delete")
    assert state(asked) == "input-required"
    assert 'delete({"path": "/tmp/x"}) needs your approval' in status_text(asked)
    assert DELETED == []
    done = send("Yes!", task_id=asked["id"])
    assert state(done) == "completed" and DELETED == ["/tmp/x"]
    assert answer(done) == [["The tool said: deleted /tmp/x "]]


def test_no_denies_and_the_model_is_told():
    asked = send("delete")
    done = send("DENY", task_id=asked["id"])
    assert state(done) == "completed" and DELETED == []
    assert answer(done) == [["The tool said: The user denied this tool call. "]]


def test_an_approval_as_a_data_part_and_a_reply_that_is_neither_asks_again():
    asked = send("delete")
    again = send("maybe later", task_id=asked["id"])
    assert state(again) == "input-required" and "needs your approval" in status_text(again)
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
    asked = send("lookup")
    assert state(asked) == "input-required" and "waits for its result" in status_text(asked)
    done = send("forty-two", task_id=asked["id"])
    assert answer(done) == [["The tool said: forty-two "]]


@ALL_DATABASES
@pytest.mark.parametrize("kind", [k for k in STORE_KINDS if k != "memory"])
def test_the_approval_resumes_after_a_restart(settings, tmp_path, kind):
    settings.TASK_STORE = make_store(kind, tmp_path)
    asked = send("delete")
    assert state(asked) == "input-required"
    # The restart: no runner, no handler, no store object survives; only what was saved.
    runner._runner.shutdown(grace=5)
    runner._runner = None
    loading._instances.clear()
    loading.load_handler.cache_clear()
    settings.TASK_STORE = make_store(kind, tmp_path)
    done = send("approve", task_id=asked["id"])
    assert state(done) == "completed" and DELETED == ["/tmp/x"]


def test_cancel_stops_the_run_where_it_stands(settings):
    store = settings.TASK_STORE
    SLOW_WORDS.clear()
    task = WireClient().send("slow", blocking=False)["task"]
    wait_for(store, task["id"], lambda t: t.get("artifacts"))
    canceled = WireClient().result("CancelTask", {"id": task["id"]})
    assert state(canceled) == "canceled"
    time.sleep(0.2)
    words = len(SLOW_WORDS)
    time.sleep(0.3)
    assert len(SLOW_WORDS) == words < 400  # the model is no longer asked for words
    assert state(WireClient().result("GetTask", {"id": task["id"]})) == "canceled"


def test_the_framework_s_error_fails_the_task_with_its_message():
    failed = send("break")
    assert state(failed) == "failed"
    assert status_text(failed) == "PydanticAI: the model broke"


def test_usage_goes_into_the_task_s_llm_metadata_summed_over_turns():
    asked = send("delete")
    first = asked["metadata"]["llm"]
    assert first["framework"] == "pydantic-ai" and first["model"] == "scripted"
    assert first["usage"]["totalTokens"] > 0
    done = send("yes", task_id=asked["id"])
    assert done["metadata"]["llm"]["usage"]["totalTokens"] > first["usage"]["totalTokens"]


def test_structured_output_is_a_data_part(settings):
    settings.A2A_HANDLER = f"{HERE}.structured"
    assert answer(send("forecast")) == [[{"city": "Paris", "sunny": True}]]


def test_the_explicit_form_passes_deps_per_task(settings):
    settings.A2A_HANDLER = f"{HERE}.explicit"
    assert answer(send("who")) == [["The tool said: deps are for who "]]
