"""The site's PydanticAI agent: ``PYDANTIC_AI_MODEL`` (e.g. ``openai:gpt-4o-mini``, with
its provider's extra and key) when set, else PydanticAI's own ``FunctionModel`` streaming
a deterministic answer."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolnexus_site.framework_agents import WORD_DELAY, offline_answer


async def offline(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    """The last user prompt back, word by word."""
    prompts = [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    ]
    for word in offline_answer(prompts[-1] if prompts else "", "PydanticAI").split(" "):
        await asyncio.sleep(WORD_DELAY)
        yield word + " "


model: Model | str = os.environ.get("PYDANTIC_AI_MODEL") or FunctionModel(stream_function=offline, model_name="offline")
agent = Agent(model, name="pydantic-ai-helper", description="A PydanticAI agent served over A2A.")
