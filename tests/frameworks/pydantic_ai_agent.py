"""The PydanticAI agent the framework tests serve, on PydanticAI's own ``FunctionModel`` (no network, no key)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, CallDeferred, RunContext
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.usage import UsageLimits

from a2a.handlers.frameworks.pydantic_ai import PydanticAIHandler, remote_agents

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
    if prompt in ("weather", "delete", "lookup", "who", "billing"):
        args = {
            "weather": '{"city": "Paris"}',
            "delete": '{"path": "/tmp/x"}',
            "lookup": '{"key": "k"}',
            "billing": '{"request": "What do I owe?"}',
        }
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


agent = Agent(
    FunctionModel(stream_function=scripted, model_name="scripted"),
    name="helper",
    deps_type=str,
    toolsets=[remote_agents("billing")],
)


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
limited = PydanticAIHandler(agent, usage_limits=UsageLimits(request_limit=1))  # a tool's answer needs a second


class Forecast(BaseModel):
    city: str
    sunny: bool


async def forecasting(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    yield {0: DeltaToolCall(name=info.output_tools[0].name, json_args='{"city": "Paris", "sunny": true}')}


structured = Agent(FunctionModel(stream_function=forecasting), output_type=Forecast)


#: The prompt that asks for a tool needing approval (``delete``: /tmp/x).
APPROVAL = "delete"
#: The handler as ``A2A_HANDLER`` names it.
HANDLER = f"{__name__}.agent"

#: What it asks for that approval, and its answer after a yes and after a no.
QUESTION = 'delete({"path": "/tmp/x"}) needs your approval: reply yes or no.'
ANSWERS = {"yes": "The tool said: deleted /tmp/x", "no": "The tool said: The user denied this tool call."}
#: The card's skill for it (the settings list none).
SKILL = {"id": "helper", "name": "helper", "tags": ["weather", "delete", "lookup", "who", "billing"]}
