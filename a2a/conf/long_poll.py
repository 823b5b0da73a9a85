"""The A2A 1.1 draft's long-polling GetTask."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "A2A 1.1 draft: task generation (docs/protocol.md)"

DECLARED: dict[str, Setting] = {
    "A2A_LONG_POLL_TIMEOUT": Setting(
        float,
        30.0,
        min=0,
        doc="A GetTask with currentGeneration (a long-poll) is held at most this long (seconds) for the task "
        "to move past it, then answered with the task as it stands. A held request waits on the event bus: "
        "no thread, no reads of the store.",
    ),
}
