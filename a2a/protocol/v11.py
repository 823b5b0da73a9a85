"""A2A 1.1 (draft) JSON: v1.0's, plus the task's ``generation`` (spec 3.2.7).

Chosen by ``A2A-Version: 1.1`` only, so a v1.0 answer stays what the strict v1.0 schema
allows (its ``Task`` forbids unknown properties). The request fields of 1.1
(``currentGeneration``, ``ifGenerationMatch``) are parsed by v1.0 already: they belong to
the same proto package, and a v1.0 client never sends them.

``generation`` is int64, so ProtoJSON writes it as a string (``"7"``). A Task carries
its generation; a status or artifact update carries the generation after its mutation,
which is the event's number (resumable streams, :mod:`a2a.core.replay`): an update
without one (the gap marker, a catch-up that folds several versions into one update)
carries none rather than a wrong one.
"""

from __future__ import annotations

from typing import Any

from a2a.protocol.model import StreamItem, Task
from a2a.protocol.v10 import V10Dialect
from stores.fields import task_generation


class V11Dialect(V10Dialect):
    version = "1.1"

    def render_task(self, task: Task, history_length: int | None = None) -> dict[str, Any]:
        return {**super().render_task(task, history_length), "generation": str(task_generation(task))}

    def render_stream_item(self, item: StreamItem) -> dict[str, Any]:
        rendered = super().render_stream_item(item)
        for key in ("statusUpdate", "artifactUpdate"):
            if key in rendered and item.seq is not None:
                rendered[key]["generation"] = str(item.seq)
        return rendered
