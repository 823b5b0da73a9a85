"""Tasks: where they live (the task store), what fulfils them (the handler), how they run (the
runner, the executor)."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Where Tasks live and how they run: the store, the handler, the runner"

DECLARED: dict[str, Setting] = {
    "TASK_STORE": Setting(
        object,
        "memory",
        doc='Where Tasks live: "memory", "file:<dir>", "orm", "orm:<alias>", a dotted class path, a '
        '{"BACKEND": ..., "OPTIONS": {...}} dict, or a store instance.',
    ),
    "A2A_HANDLER": Setting(
        str,
        "a2a.handlers.echo",
        check_id="a2a.E001",
        doc="Dotted path to the callable (sync or async) that fulfils each Task.",
    ),
    "A2A_WORKERS": Setting(
        int,
        8,
        min=1,
        doc="How many Tasks are fulfilled at once per process; more wait their turn (as submitted). A queue "
        "worker runs one task per job, so there the queue engine's concurrency decides (docs/deployment.md).",
    ),
    "A2A_EXECUTOR": Setting(
        object,
        "thread",
        doc='Where Tasks are fulfilled (a2a/runtime/executors.py): "thread", the runner of the process that '
        'accepted them; or "tasks" / "tasks:<alias>", a job on the queue of Django\'s Tasks framework '
        "(TASKS[<alias>]), run by worker processes (`manage.py db_worker`, RQ or Celery workers; see "
        "docs/deployment.md), each job running its task to its end. "
        "Checked: a2a.E070; a2a.W070 without a shared A2A_EVENTS.",
    ),
    "A2A_BLOCKING_TIMEOUT": Setting(
        float,
        60.0,
        min=0,
        doc="Blocking SendMessage waits at most this long (seconds), then answers with the Task as it stands;"
        " the Task goes on in the background.",
    ),
    "A2A_SHUTDOWN_GRACE": Setting(
        float,
        10.0,
        min=0,
        doc="On shutdown, in-flight Tasks get this long (seconds) to finish before they are saved as failed "
        "with a message that says so.",
    ),
}
