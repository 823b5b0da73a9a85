"""The site's OpenAI Agents SDK agent: the SDK's default model when ``OPENAI_API_KEY`` is
set, else a deterministic ``Model`` of the SDK's interface streaming its answer word by
word (tracing off: its export wants a key)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message
from agents.usage import Usage
from openai.types.responses import Response, ResponseCompletedEvent, ResponseTextDeltaEvent

from toolnexus_site.framework_agents import WORD_DELAY, offline_answer


def _answer(input: Any) -> Any:
    items = input if isinstance(input, list) else [{"role": "user", "content": input}]
    said = [i.get("content") for i in items if isinstance(i, dict) and i.get("role") == "user"]
    return assistant_message(offline_answer(str(said[-1]) if said else "", "OpenAI Agents SDK"))


class OfflineModel(Model):
    """Answers with the user's last message back; streamed word by word."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=[_answer(input)], usage=Usage(requests=1), response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        message = _answer(input)
        words = message.content[0].text.split(" ")
        for n, word in enumerate(words):
            await asyncio.sleep(WORD_DELAY)
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id=message.id,
                output_index=0,
                content_index=0,
                delta=word + " ",
                logprobs=[],
                sequence_number=n,
            )
        response = Response(
            id="offline",
            created_at=0,
            model="offline",
            object="response",
            output=[message],
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
        )
        yield ResponseCompletedEvent(type="response.completed", sequence_number=len(words), response=response)


if not os.environ.get("OPENAI_API_KEY"):
    set_tracing_disabled(True)
agent = Agent(
    name="openai-agents-helper",
    instructions="Answer briefly.",
    handoff_description="An OpenAI Agents SDK agent served over A2A.",
    model=None if os.environ.get("OPENAI_API_KEY") else OfflineModel(),
)
