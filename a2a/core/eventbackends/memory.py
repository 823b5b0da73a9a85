"""The default event backend (``A2A_EVENTS = "memory"``): events stay in the process
that published them, where the bus delivers them. Enough for one process, or for
several when no client streams from one process a task another one runs."""

from __future__ import annotations

from a2a.core.events import EventBackend


class MemoryEventBackend(EventBackend):
    remote = False

    def __repr__(self) -> str:
        return "<MemoryEventBackend>"
