"""A2A 1.1 (draft) JSON: v1.0's, plus the task's ``generation`` (spec 3.2.7) and its
``timeline`` (spec 3.2.8).

Chosen by ``A2A-Version: 1.1`` only, so a v1.0 answer stays what the strict v1.0 schema
allows (its ``Task`` forbids unknown properties). The request fields of 1.1
(``currentGeneration``, ``ifGenerationMatch``) are parsed by v1.0 already: they belong to
the same proto package, and a v1.0 client never sends them; ``timelineLength`` is read
here only, so a v1.0 request reads exactly as before.

``generation`` is int64, so ProtoJSON writes it as a string (``"7"``), as it does a
timeline entry's and an artifact's ``startGeneration`` / ``endGeneration``. A Task
carries its generation; a status or artifact update carries the generation after its
mutation, which is the event's number (resumable streams, :mod:`a2a.core.replay`): an
update without one (the gap marker, a catch-up that folds several versions into one
update) carries none rather than a wrong one.
"""

from __future__ import annotations

from typing import Any

from a2a.protocol import model, timeline
from a2a.protocol.model import StreamItem, Task
from a2a.protocol.v10 import V10Dialect
from stores.fields import task_generation


class V11Dialect(V10Dialect):
    version = "1.1"

    def render_task(self, task: Task, history_length: int | None = None) -> dict[str, Any]:
        out = {**super().render_task(task, history_length), "generation": str(task_generation(task))}
        entries = [self._render_entry(e) for e in timeline.entries(task)]
        if entries:  # spec 3.2.4: none asked for, none shown
            out["timeline"] = entries
        for artifact in out.get("artifacts") or ():
            start, end = timeline.artifact_generations(task, artifact["artifactId"])
            if start is not None:
                artifact["startGeneration"] = str(start)
            if end is not None:
                artifact["endGeneration"] = str(end)
        return out

    def _render_entry(self, entry: timeline.Entry) -> dict[str, Any]:
        if "message" in entry:
            return {"message": self.render_message(entry["message"]), "generation": str(entry["g"])}
        return {"status": self.render_status(entry.get("status") or {}), "generation": str(entry["g"])}

    def render_stream_item(self, item: StreamItem) -> dict[str, Any]:
        rendered = super().render_stream_item(item)
        for key in ("statusUpdate", "artifactUpdate"):
            if key in rendered and item.seq is not None:
                rendered[key]["generation"] = str(item.seq)
        return rendered

    def parse_send(self, params: Any) -> model.SendParams:
        parsed = super().parse_send(params)
        config = params.get("configuration")
        if isinstance(config, dict):
            parsed.timeline_length = _timeline_length(config, "configuration.")
        return parsed

    def parse_get(self, params: Any) -> model.GetParams:
        parsed = super().parse_get(params)
        parsed.timeline_length = _timeline_length(params)
        return parsed

    def parse_list(self, params: Any) -> model.ListParams:
        parsed = super().parse_list(params)
        parsed.timeline_length = _timeline_length(params if params is not None else {})
        return parsed


def _timeline_length(params: dict[str, Any], path: str = "") -> int | None:
    """``timelineLength`` (historyLength's semantics, spec 3.2.4): None when unset."""
    return model.want_int(model.pick(params, "timelineLength"), path + "timelineLength", minimum=0)
