"""The task generation (A2A 1.1 draft, spec 3.2.7) as the client reads it.

A 1.1 agent numbers its task's events: each Task and update carries the task's
generation after it, one more per event. The client keeps a parsed task's in
:data:`stores.fields.GENERATION` (and an update's in ``StreamItem.seq``); :class:`Order` follows one stream's
numbers: a gap means events were missed (the clients then read the task again and hand it
on as a snapshot), an event at or below a snapshot's number is already in it (dropped),
and a 0, or one number twice in a row, means the agent does not implement generations
(from then on the stream is taken as it comes). Pure: no I/O.
"""

from __future__ import annotations

from typing import Literal

from a2a.protocol.model import StreamItem, Task
from stores.fields import GENERATION

Verdict = Literal["new", "old", "gap"]


def generation_of(item: Task | StreamItem | None) -> int | None:
    """The generation a task or stream item carries; None when the agent sent none."""
    if isinstance(item, StreamItem):
        return item.seq if item.kind != "task" else generation_of(item.task)
    value = item.get(GENERATION) if isinstance(item, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Order:
    """One stream's generations, as they arrive (see the module doc)."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.trusted = True
        self._snapshot = False  # whether ``last`` came from a task read again (events up to it are in it)

    def see(self, item: StreamItem) -> Verdict:
        """``"new"``: hand ``item`` on; ``"old"``: already in the last snapshot, drop it;
        ``"gap"``: hand it on, then read the task again (:meth:`fetched`)."""
        number = generation_of(item)
        if not self.trusted or number is None:
            return "new"
        if number == 0 or (number == self.last and not self._snapshot and item.kind != "task"):
            self.trusted = False  # spec 3.2.7: the agent does not implement generations
            return "new"
        last = self.last
        if last is not None and number <= last:
            return "old" if self._snapshot or item.kind == "task" else "new"
        self.last, self._snapshot = number, item.kind == "task"
        return "gap" if last is not None and number > last + 1 and item.kind != "task" else "new"

    def fetched(self, task: Task) -> None:
        """The task read again after a gap: the events up to its generation are in it."""
        number = generation_of(task)
        if self.trusted and number is not None and number >= (self.last or 0):
            self.last, self._snapshot = number, True
