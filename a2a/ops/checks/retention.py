"""The check of the retention policy (``a2a.E130``)."""

from __future__ import annotations

from django.core.checks import Error

from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern
from stores.retention import Policy


@concern("A2A_RETENTION", "A2A_RETENTION_INTERVAL", "A2A_RETENTION_BATCH")
def check_retention() -> Messages:
    """``a2a.E130``: ``A2A_RETENTION`` names a state a policy cannot name, or an age
    that is not one (a sweep would otherwise fail in every process, every interval)."""
    try:
        Policy.from_setting(a2a_settings.RETENTION)
    except ValueError as exc:
        return [
            Error(
                f"A2A_RETENTION {exc}.",
                hint='e.g. A2A_RETENTION = {"completed": "30d", "failed": "7d", "input-required": "90d"}',
                id="a2a.E130",
            )
        ]
    return []
