"""Operations: stale tasks, health checks."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Operations"

DECLARED: dict[str, Setting] = {
    "A2A_STALE_AFTER": Setting(
        float,
        3600.0,
        min=1,
        doc='A submitted or working task not updated for this many seconds is stale: the admin\'s "fail stale"'
        " action and `manage.py a2a_tasks fail-stale` (its default --older-than) save it as failed.",
    ),
    "A2A_HEALTH_TIMEOUT": Setting(
        float,
        5.0,
        min=0.1,
        doc="Seconds each check of /healthz (the store, the runner, ...) may take before it fails.",
    ),
}
