"""The check of the handler and how the runner runs it (``a2a.E001``)."""

from __future__ import annotations

from django.core.checks import Error

from a2a.agents import Agent
from a2a.handlers import load_handler
from a2a.handlers.frameworks import unusable_handler
from a2a.ops.checks.registry import Messages, concern, settings_of


@concern(
    "A2A_HANDLER",
    "A2A_WORKERS",
    "A2A_BLOCKING_TIMEOUT",
    "A2A_SHUTDOWN_GRACE",
    "A2A_STREAM_KEEPALIVE",
    "A2A_STREAM_REPLAY_EVENTS",
    "A2A_STREAM_REPLAY_MAX_AGE",
    "A2A_DIRECT_ASGI",
)
def check_handler(agent: Agent | None = None) -> Messages:
    """``a2a.E001``: ``A2A_HANDLER`` names no callable; and how the runner runs it."""
    handler = settings_of(agent).HANDLER
    try:
        load_handler(handler)
    except Exception as exc:
        message, hint = unusable_handler(handler, exc)
        return [Error(message, hint=hint, id="a2a.E001")]
    return []
