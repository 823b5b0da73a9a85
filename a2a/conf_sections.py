"""The last sections of :data:`a2a.conf.SECTIONS` (agents, remote agents, files, the A2A
1.1 draft), declared here to keep a2a/conf.py within the module size limit; read them
through :mod:`a2a.conf`."""

from __future__ import annotations

from a2a.setting import Setting

LATER_SECTIONS: dict[str, dict[str, Setting]] = {
    "Agents (a2a/agents.py, docs/agents.md)": {
        "A2A_AGENTS": Setting(
            dict,
            {},
            check_id="a2a.E110",
            doc='More agents served by this project, by name: {"billing": {"AGENT_NAME": "Billing", "HANDLER": '
            '"billing.agent.handle", "SKILLS_DIR": "billing/skills", "LISTED": True, ...}}: '
            "each option is a per-agent setting without its A2A_ prefix (every one: docs/agents.md); an agent "
            "reads the settings it does not name from the project. The single-agent settings are the default "
            "agent's. Each agent's tasks live in TASK_STORE, apart from the other agents'. Checked: a2a.E110.",
        ),
    },
    "Remote agents (a2a.client, docs/client.md)": {
        "A2A_REMOTE_AGENTS": Setting(
            dict,
            {},
            check_id="a2a.E100",
            doc='Other A2A agents this project calls by name: {"billing": {"URL": card or base URL, "AUTH": '
            '{"TYPE": "bearer" | "api_key" | "headers" | "oauth2", ...}, "TIMEOUT": 30, "VERIFY_SIGNATURE": False, '
            '"SIGNATURE_KEYS": PEM or JWKS, "FORWARD_CALLER_CREDENTIALS": False, ...}} (every key: docs/client.md). '
            "Checked: a2a.E100; `manage.py a2a_agents` checks each.",
        ),
    },
    "Files (a2a/core/files.py, docs/files.md)": {
        "A2A_FILES_STORAGE": Setting(
            str,
            "default",
            check_id="a2a.E120",
            doc="The STORAGES alias offloaded file parts are written to (Django's file system storage by default; "
            "django-storages' S3 or GCS backends work unchanged). Checked: a2a.E120.",
        ),
        "A2A_FILES_OFFLOAD_BYTES": Setting(
            int,
            1024 * 1024,
            min=0,
            doc="A file part (inbound, or in a handler's artifacts) whose content is over this many bytes is "
            "written to A2A_FILES_STORAGE and kept as a `uri` part (v1.0 `url`) that serves it to the task's "
            "owner only. None keeps every file part inline.",
        ),
        "A2A_FILES_MAX_PART_BYTES": Setting(
            int,
            None,
            min=1,
            doc="Bytes of one file part's content; over it the message is refused (-32600, HTTP 413). None: "
            "no limit but A2A_MAX_BODY_BYTES.",
        ),
        "A2A_FILES_MAX_TASK_BYTES": Setting(
            int,
            None,
            min=1,
            doc="Bytes of the file parts one task's messages carry in all; over it the message is refused "
            "(-32600, HTTP 413). None: no limit.",
        ),
        "A2A_FILES_ORPHAN_GRACE": Setting(
            float,
            3600.0,
            min=60,
            doc="Seconds a stored file no task references is left alone (it may be one being written, its "
            "task about to be saved); older, `manage.py a2a_repair` and the periodic orphan sweep remove it "
            "(a crash between the write and the save, a refused message's files).",
        ),
        "A2A_FILES_ORPHAN_INTERVAL": Setting(
            float,
            600.0,
            min=0,
            doc="Every server process (and queue worker) looks for stored files no task references this often "
            "(seconds, with jitter), a bounded number of task directories at a time; 0: never by itself "
            "(`manage.py a2a_repair` does).",
        ),
    },
    "A2A 1.1 draft: task generation (docs/protocol.md)": {
        "A2A_LONG_POLL_TIMEOUT": Setting(
            float,
            30.0,
            min=0,
            doc="A GetTask with currentGeneration (a long-poll) is held at most this long (seconds) for the task "
            "to move past it, then answered with the task as it stands. A held request waits on the event bus: "
            "no thread, no reads of the store.",
        ),
    },
}
