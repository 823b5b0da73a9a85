"""Leases: how a crashed process's tasks are found and failed or re-run."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Leases and crashes (a2a/core/leases.py)"

DECLARED: dict[str, Setting] = {
    "A2A_LEASE_SECONDS": Setting(
        float,
        30.0,
        min=1,
        doc="A task in flight is leased to the process running it for this many seconds, renewed every third "
        "of it; a task whose lease ran out (its process died) is failed or re-run.",
    ),
    "A2A_LEASE_CHECK_INTERVAL": Setting(
        float,
        30.0,
        min=0,
        doc="Every server process looks for expired leases at start and then this often (seconds, with "
        "jitter); 0: only at start (and with `manage.py a2a_leases`).",
    ),
    "A2A_RETRY_ON_LOST_LEASE": Setting(
        bool,
        False,
        check_id="a2a.E050",
        doc="Re-run (rather than fail) a working task whose process died, at most 3 runs in all. Only for "
        "handlers that are safe to run twice (idempotent).",
    ),
    "A2A_EXPECT_WORKERS": Setting(
        int,
        1,
        min=1,
        doc="How many server processes share the task store (for the a2a.W001 check: the memory store cannot "
        "be shared); the WEB_CONCURRENCY environment variable counts too.",
    ),
}
