"""The check of the event backend streams use across processes (``a2a.E060``, ``W060``)."""

from __future__ import annotations

from django.core.checks import Error, Warning
from django.core.exceptions import ImproperlyConfigured

from a2a.conf import a2a_settings
from a2a.core.events import resolve_event_backend
from a2a.ops.checks.registry import Messages, concern
from a2a.ops.deployment import expected_workers


@concern("A2A_EVENTS", "A2A_EVENTS_CHANNEL")
def check_events() -> Messages:
    """``A2A_EVENTS`` and ``A2A_EVENTS_CHANNEL`` name a backend that can be built
    (a2a.E060), and several server processes do not keep their events to themselves
    (a2a.W060)."""
    try:
        backend = resolve_event_backend(a2a_settings.EVENTS, a2a_settings.EVENTS_CHANNEL)
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="a2a.E060")]
    count, source = expected_workers()
    if count > 1 and not backend.remote:
        return [
            Warning(
                f"A2A_EVENTS is {a2a_settings.EVENTS!r}, which keeps a task's events inside the process that "
                f"saves them, but {source} says there are {count} server processes: a client streaming from "
                "one of them hears nothing of a task another one runs.",
                hint='Share the events: A2A_EVENTS = "redis://..." or "postgres".',
                id="a2a.W060",
            )
        ]
    return []
