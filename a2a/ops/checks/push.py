"""The check of the push notification settings."""

from __future__ import annotations

from a2a.ops.checks.registry import Messages, concern


@concern(
    "A2A_PUSH_NOTIFICATIONS",
    "A2A_PUSH_ALLOW_PRIVATE_URLS",
    "A2A_PUSH_MAX_ATTEMPTS",
    "A2A_PUSH_RETRY_DELAY",
    "A2A_PUSH_TIMEOUT",
    "A2A_PUSH_TOKEN_LIFETIME",
)
def check_push() -> Messages:
    """Push notifications: their settings' declarations say it all. (Unsigned pushes,
    without a signing key, are not reported: an INFO on every ``manage.py check`` of
    every project that signs nothing would be noise; docs/protocol.md says it.)"""
    return []
