"""Timestamps as A2A writes them: UTC, ISO 8601, millisecond precision, ``Z`` suffix."""

from __future__ import annotations

import datetime as dt


def now_iso() -> str:
    """The current UTC time as A2A wants it: ISO 8601, milliseconds, ``Z`` suffix."""
    return format_timestamp(dt.datetime.now(dt.UTC))


def format_timestamp(when: dt.datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC.

    ``isoformat`` writes the year with four digits always (``strftime("%Y")`` writes
    ``999`` on glibc, which sorts after ``2026``: stores compare these as text)."""
    if when.tzinfo is not dt.UTC:
        when = when.astimezone(dt.UTC)
    return when.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def parse_timestamp(value: str) -> dt.datetime:
    """Parse an ISO 8601 timestamp; a naive one is taken as UTC. Raises ValueError."""
    when = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)
