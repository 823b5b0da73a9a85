"""The system check of the A2A 1.1 draft's setting (the long-poll's timeout), apart from
a2a/ops/checks.py for its size; a2a/apps.py imports it to register it."""

from __future__ import annotations

from a2a.ops.checks import Messages, concern


@concern("A2A_LONG_POLL_TIMEOUT")
def check_long_poll() -> Messages:
    """A value that does not fit ``A2A_LONG_POLL_TIMEOUT`` (a number of seconds, 0 or more)."""
    return []
