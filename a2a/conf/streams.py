"""Streams: keep-alives, the events kept for reconnecting clients, and how a task's events reach other processes."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Streams, and events across processes (a2a/core/eventbackends, docs/events.md)"

DECLARED: dict[str, Setting] = {
    "A2A_STREAM_KEEPALIVE": Setting(
        float,
        15.0,
        min=0,
        doc="Streams send an SSE comment this often (seconds) while nothing happens, so proxies keep them open.",
    ),
    "A2A_STREAM_REPLAY_EVENTS": Setting(
        int,
        100,
        min=0,
        doc="Stream events each task keeps for clients that reconnect (docs/extensions/resumable-streams.md): "
        "the last this many, saved with the task. A client resuming from an older one gets the gap marker "
        "and the whole task. 0 keeps none.",
    ),
    "A2A_STREAM_REPLAY_MAX_AGE": Setting(
        float,
        3600.0,
        min=0,
        doc="Seconds a kept stream event stays replayable (A2A_STREAM_REPLAY_EVENTS): an older one is dropped "
        "at the task's next save and not replayed.",
    ),
    "A2A_EVENTS": Setting(
        object,
        "memory",
        doc='How a task\'s events reach streams and subscribers in other processes: "memory" (in this process '
        'only), a Redis URL ("redis://127.0.0.1:6379/0": pub/sub), "postgres" / "postgres:<alias>" / a '
        '"postgresql://" URL (LISTEN/NOTIFY), or a dotted EventBackend path.',
    ),
    "A2A_EVENTS_CHANNEL": Setting(
        object,
        "a2a_events",
        doc="The Redis channel / PostgreSQL LISTEN channel the processes of one deployment share (at most 63 bytes).",
    ),
}
