"""Token usage in the task's ``llm`` metadata, as the built-in LLM handler keeps it."""

from __future__ import annotations

from typing import Any, NamedTuple

from a2a.handlers.request import HandlerRequest


class Usage(NamedTuple):
    """What a run's model calls spent, and the model (empty: none named)."""

    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0


def usage_metadata(request: HandlerRequest, framework: str, usage: Usage) -> dict[str, Any]:
    """The task's ``llm`` metadata: the tokens summed over the task's turns, the model
    (an earlier turn's when this one names none: an approval asked again) and the framework."""
    earlier = request.metadata.get("llm") or {}
    spent = earlier.get("usage") or {}
    model = usage.model or str(earlier.get("model") or "")
    tokens_in = int(spent.get("inputTokens") or 0) + int(usage.input_tokens or 0)
    tokens_out = int(spent.get("outputTokens") or 0) + int(usage.output_tokens or 0)
    total = {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out}
    return {"llm": {"model": model, "framework": framework, "usage": total}}
