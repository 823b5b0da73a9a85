"""File parts: where they are offloaded, their limits, the orphan sweep."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Files (a2a/core/files.py, docs/files.md)"

DECLARED: dict[str, Setting] = {
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
}
