"""The conversation before the client's message, which each adapter turns into its
framework's message history."""

from __future__ import annotations

from a2a.handlers.request import HandlerRequest
from a2a.handlers.tools import task_turns


async def earlier_turns(request: HandlerRequest) -> list[dict[str, str]]:
    """The conversation before this message, as ``{"role": "user" | "assistant",
    "content": ...}`` turns: the caller's own earlier tasks of the context
    (``A2A_LLM_CONTEXT_TASKS`` of them; another caller's never), then this task's
    messages before the current one."""
    turns: list[dict[str, str]] = []
    for task in await request.acontext_tasks(request.agent.settings.LLM_CONTEXT_TASKS):
        turns += task_turns(task)
    history = request.history
    before = history[:-1] if history and history[-1] is request.message else history
    return turns + task_turns({"history": before})
