"""Retention: how long tasks are kept, and the sweep that deletes them."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Retention (a2a/runtime/retention.py, docs/operations.md)"

DECLARED: dict[str, Setting] = {
    "A2A_RETENTION": Setting(
        dict,
        {},
        check_id="a2a.E130",
        doc='How long a task is kept, by state: {"completed": "30d", "failed": "7d", "canceled": "7d", '
        '"rejected": "7d", "input-required": "90d", "auth-required": "90d"} (ages as `a2a_tasks prune '
        "--older-than` takes them, or seconds; None: forever), counted from the task's last status change. "
        "A state it does not name is kept forever (the default, {}: every task). A context goes only when "
        "all its tasks have expired; a task staff kept (the admin) never does. Checked: a2a.E130.",
    ),
    "A2A_RETENTION_INTERVAL": Setting(
        float,
        3600.0,
        min=0,
        doc="Every server process (and queue worker) sweeps the expired tasks of every store in use this "
        "often (seconds, with jitter); 0: never by itself (`manage.py a2a_tasks prune` or the "
        "`a2a.runtime.worker.sweep_job` job of the Tasks framework then do).",
    ),
    "A2A_RETENTION_BATCH": Setting(
        int,
        200,
        min=1,
        doc="Tasks a sweep deletes at once (one transaction on the ORM store) before it pauses, so "
        "requests never wait long behind it.",
    ),
}
