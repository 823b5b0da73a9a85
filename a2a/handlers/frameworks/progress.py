"""A run's tool calls as the task's progress: a ``working`` status per call and per result."""

from __future__ import annotations

from a2a.handlers.request import HandlerRequest
from a2a.protocol.model import data_part, text_part


async def tool_called(request: HandlerRequest, tool: str) -> None:
    """A ``working`` status: the agent calls ``tool`` (its name only: arguments may hold secrets)."""
    await request.aprogress([text_part(f"Calling {tool}"), data_part({"tool": tool, "phase": "call"})])


async def tool_returned(request: HandlerRequest, tool: str, *, failed: bool = False) -> None:
    """A ``working`` status: ``tool`` answered (or failed, and the model is told)."""
    phase = "failed" if failed else "result"
    words = f"{tool} {phase if failed else 'answered'}"
    await request.aprogress([text_part(words), data_part({"tool": tool, "phase": phase})])
