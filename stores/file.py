"""The file store: one ``<id>.json`` per task in a directory, written atomically.

The files are in the toolnexus ``FileTaskStore`` layout and shape, so a directory
written by a toolnexus server reads back here and ours reads back there.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
from pathlib import Path

import orjson

from .base import Task, TaskPage, TaskQuery, TaskStore, check_task, page_in_memory

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
#: Longest file-name stem we write; most filesystems cap a name at 255 bytes.
MAX_STEM = 200
TEMP_PREFIX = ".tmp-"


def file_stem(task_id: str) -> str:
    """The file-name stem for a task id: toolnexus's ``sanitize`` (anything outside
    ``[a-zA-Z0-9_-]`` becomes ``_``), so ``../x``, ``/etc/passwd`` or a NUL byte can
    never leave the directory; an over-long id is cut and suffixed with its hash."""
    stem = _UNSAFE.sub("_", task_id)
    if len(stem) > MAX_STEM:
        digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()
        stem = f"{stem[: MAX_STEM - 65]}-{digest}"
    return stem


def atomic_write(target: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write ``data`` to ``target`` atomically: a temp file in the same directory,
    flushed and fsynced, ``os.replace``d over the target, then the directory fsynced.
    A reader sees the old file or the new one, never a partial one; with ``fsync``
    the new one survives power loss."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TEMP_PREFIX, suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        fsync_directory(target.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileTaskStore(TaskStore):
    """Tasks as JSON files under ``directory`` (created if missing).

    ``save`` writes a temp file in the same directory, flushes and fsyncs it, moves it
    over the target with ``os.replace`` and fsyncs the directory: a reader sees the old
    file or the new one, never a partial one, and a saved task survives power loss.
    ``fsync=False`` skips the two fsyncs (atomic still, durable only to a process
    crash), e.g. for throwaway test directories.
    """

    durable = True
    shared = True  # on one host; across hosts only on a filesystem with atomic rename

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, task_id: str) -> Path:
        """Where the task with this id lives."""
        return self.directory / f"{file_stem(task_id)}.json"

    def get(self, task_id: str) -> Task | None:
        if not isinstance(task_id, str) or not task_id:
            return None
        return self._read(self.path(task_id), task_id)

    def _read(self, path: Path, task_id: str | None = None) -> Task | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("task file %s is unreadable: %s", path, exc)
            return None
        try:
            task = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            logger.warning("task file %s is corrupt: %s", path, exc)
            return None
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            logger.warning("task file %s does not hold a task", path)
            return None
        # Two ids can share a file name after sanitizing ("a.b", "a_b"): a file only
        # answers for the id it holds.
        if task_id is not None and task["id"] != task_id:
            return None
        return task

    def save(self, task: Task) -> Task:
        atomic_write(self.path(check_task(task)), orjson.dumps(task), fsync=self.fsync)
        return task

    def _task_files(self) -> list[Path]:
        with os.scandir(self.directory) as entries:
            return [
                Path(e.path) for e in entries if e.name.endswith(".json") and not e.name.startswith(".") and e.is_file()
            ]

    def list(self, query: TaskQuery | None = None) -> TaskPage:
        tasks = [t for t in map(self._read, self._task_files()) if t is not None]
        return page_in_memory(tasks, query or TaskQuery())

    def delete(self, task_id: str) -> bool:
        if self.get(task_id) is None:
            return False
        try:
            os.unlink(self.path(task_id))
        except FileNotFoundError:
            return False
        return True

    def __repr__(self) -> str:
        return f"<FileTaskStore {str(self.directory)!r}>"
