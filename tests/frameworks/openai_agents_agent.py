"""The OpenAI Agents SDK agent the framework tests serve, on a fake ``Model`` of the SDK's
interface (no network, no key)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, function_tool, set_tracing_disabled
from agents.exceptions import ModelBehaviorError
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage
from openai.types.responses import Response, ResponseCompletedEvent, ResponseTextDeltaEvent, ResponseUsage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pydantic import BaseModel

from a2a.handlers.frameworks.openai_agents import OpenAIAgentsHandler, remote_agents

set_tracing_disabled(True)  # no trace export (it would want an API key)
DELETED: list[str] = []
SLOW_WORDS: list[str] = []


def decide(items: list[Any]) -> list[Any]:
    """The model: answers what a tool returned, else calls the tool the prompt names."""
    last = items[-1]
    if last.get("type") == "function_call_output":
        return [assistant_message(f"The tool said: {last['output']}")]
    prompt = last.get("content")
    if prompt in ("weather", "delete", "billing"):
        args = {"weather": {"city": "Paris"}, "delete": {"path": "/tmp/x"}, "billing": {"request": "What do I owe?"}}[
            prompt
        ]
        return [function_call(prompt, args, call_id=f"call-{prompt}")]
    if prompt == "memory":
        said = [str(i["content"]) for i in items[:-1] if i.get("role") == "user"]
        return [assistant_message("You said: " + " | ".join(said))]
    if prompt == "break":
        raise ModelBehaviorError("the model broke")
    if prompt == "forecast":
        return [assistant_message('{"city": "Paris", "sunny": true}')]
    return [assistant_message("The answer is forty two")]


class FakeModel(Model):
    """The SDK's ``Model`` interface, answering :func:`decide`; streamed word by word, a
    few milliseconds apart (as over a network: ``delay`` seconds), 7 tokens in and 5 out per call."""

    delay = 0.01

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        usage = Usage(requests=1, input_tokens=7, output_tokens=5, total_tokens=12)
        return ModelResponse(output=decide(_items(input)), usage=usage, response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        output = decide(_items(input))
        n = 0
        for item in output:
            if item.type != "message":
                continue
            text = item.content[0].text
            words = [f"w{i} " for i in range(400)] if _items(input)[-1].get("content") == "slow" else text.split(" ")
            for word in words:
                await asyncio.sleep(self.delay)
                if word.startswith("w"):
                    SLOW_WORDS.append(word)
                yield ResponseTextDeltaEvent(
                    type="response.output_text.delta",
                    item_id=item.id,
                    output_index=0,
                    content_index=0,
                    delta=word if word.endswith(" ") else word + " ",
                    logprobs=[],
                    sequence_number=n,
                )
                n += 1
        usage = ResponseUsage(
            input_tokens=7,
            output_tokens=5,
            total_tokens=12,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )
        response = Response(
            id="r",
            created_at=0,
            model="fake",
            object="response",
            output=output,
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
            usage=usage,
        )
        yield ResponseCompletedEvent(type="response.completed", sequence_number=n, response=response)


def _items(input: Any) -> list[Any]:
    return input if isinstance(input, list) else [{"role": "user", "content": input}]


@function_tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@function_tool(needs_approval=True)
def delete(path: str) -> str:
    """Delete a file (a person approves first)."""
    DELETED.append(path)
    return f"deleted {path}"


agent = Agent(
    name="helper", instructions="Help.", model=FakeModel(), tools=[weather, delete, *remote_agents("billing")]
)


class Forecast(BaseModel):
    city: str
    sunny: bool


forecaster = Agent(name="forecaster", model=FakeModel(), output_type=Forecast)
explicit = OpenAIAgentsHandler(agent, max_turns=1)


#: The prompt that asks for a tool needing approval (``delete``: /tmp/x).
APPROVAL = "delete"
#: The handler as ``A2A_HANDLER`` names it.
HANDLER = f"{__name__}.agent"

#: What it asks for that approval, and its answer after a yes and after a no.
QUESTION = 'delete({"path": "/tmp/x"}) needs your approval: reply yes or no.'
ANSWERS = {"yes": "The tool said: deleted /tmp/x", "no": "The tool said: The user denied this tool call."}
#: The card's skill for it (the settings list none).
SKILL = {"id": "helper", "name": "helper", "tags": ["weather", "delete", "billing"]}
