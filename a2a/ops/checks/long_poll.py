"""The check of the A2A 1.1 draft's setting: the long-poll's timeout."""

from __future__ import annotations

from a2a.ops.checks.registry import Messages, concern


@concern("A2A_LONG_POLL_TIMEOUT")
def check_long_poll() -> Messages:
    """A value that does not fit ``A2A_LONG_POLL_TIMEOUT`` (a number of seconds, 0 or more)."""
    return []
