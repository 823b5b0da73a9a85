"""Which JSON media type an answer carries: the one the request's ``Accept`` prefers
among those a route offers, else the route's default.

- The HTTP+JSON binding answers ``application/a2a+json`` in v1.0 (spec 1.0.1, section
  11.1: it SHOULD) and ``application/json`` in v0.3; JSON-RPC answers
  ``application/json`` (section 9.1). Each gives the other type to a client that asks
  for it by name.
- An Agent Card is ``application/json``, or ``application/a2a-agent-card+json`` (the
  type an AI Catalog entry names its card with, which the draft says a card SHOULD be
  served with) to a client that asks for that.

A request with no ``Accept``, ``*/*`` or types offered with the same quality gets the
default, so a client that asks nothing sees what it always saw; one that accepts none
of the types gets the default too (a JSON document, never a 406).
"""

from __future__ import annotations

from collections.abc import Sequence

JSON = "application/json"
A2A_JSON = "application/a2a+json"
AGENT_CARD_JSON = "application/a2a-agent-card+json"


def _ranges(accept: str) -> list[tuple[str, float]]:
    """The media ranges of an ``Accept`` header with their quality (RFC 9110 section 12.5.1)."""
    ranges = []
    for part in accept.split(","):
        media, *params = part.split(";")
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = min(1.0, max(0.0, float(value.strip())))
                except ValueError:
                    quality = 0.0  # a quality no one can read accepts nothing
        if media.strip():
            ranges.append((media.strip().lower(), quality))
    return ranges


def _quality(ranges: list[tuple[str, float]], media_type: str) -> tuple[float, int]:
    """How much ``ranges`` want ``media_type`` and how precisely: the quality of the most
    specific range that matches it (the type itself 2, ``application/*`` 1, ``*/*`` 0)."""
    family = media_type.split("/", 1)[0] + "/*"
    best = (-1, 0.0)
    for media, quality in ranges:
        precision = {media_type: 2, family: 1, "*/*": 0}.get(media, -1)
        if precision > best[0]:
            best = (precision, quality)
    return (best[1], best[0]) if best[0] >= 0 else (0.0, -1)


def preferred(accept: str | None, offered: Sequence[str]) -> str:
    """The type of ``offered`` (the default first) that ``accept`` prefers: the highest
    quality, then the one it names rather than covers with a wildcard, then the default."""
    if not accept or not accept.strip():
        return offered[0]
    ranges = _ranges(accept)
    ranked = [(*_quality(ranges, media_type), -index) for index, media_type in enumerate(offered)]
    best = max(range(len(offered)), key=lambda index: ranked[index])
    return offered[best] if ranked[best][0] > 0 else offered[0]
