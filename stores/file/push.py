"""The file store's push notification configs: one JSON file per config, beside the tasks."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import orjson

from stores.file import fsio
from stores.file.syscalls import Syscalls, backend_named
from stores.file.taskfile import unique_stem
from stores.push_configs import PushConfig, PushConfigStore, check_config, config_order

logger = logging.getLogger(__name__)

#: The subdirectory of a file store's push configs (dot-prefixed: the task listing ignores it).
FILE_SUBDIRECTORY = ".push-configs"


class FilePushConfigStore(PushConfigStore):
    """One JSON file per config: ``<directory>/<task>/<config>.json``, written like the
    file task store writes tasks (temp file, fsync, ``os.replace``, fsync the
    directory). One file per config, so two configs saved at once on one task, from
    two threads or two processes, both survive. A file only answers for the
    ``(taskId, id)`` it holds."""

    #: :meth:`has_configs` is one ``stat``: cheap enough for the publisher's thread.
    cheap_has_configs = True

    def __init__(
        self, directory: str | os.PathLike[str], *, fsync: bool = True, syscalls: Syscalls | str | None = None
    ) -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        #: Writes each config (:func:`stores.file.syscalls.backend_named`: the file store's).
        self.syscalls = backend_named(syscalls)

    def _task_dir(self, task_id: str) -> Path:
        return self.directory / unique_stem(task_id)

    def has_configs(self, task_id: str) -> bool:
        """Whether the task may have configs: its directory exists (a config is saved
        into it only after it is made). False lets a saved task skip push delivery."""
        return isinstance(task_id, str) and bool(task_id) and self._task_dir(task_id).is_dir()

    def path(self, task_id: str, config_id: str) -> Path:
        return self._task_dir(task_id) / f"{unique_stem(config_id)}.json"

    def _read(self, path: Path, task_id: str, config_id: str | None = None) -> PushConfig | None:
        try:
            config = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, orjson.JSONDecodeError) as exc:
            logger.warning("push config file %s is unreadable: %s", path, exc)
            return None
        try:
            found = check_config(config)
        except ValueError:
            logger.warning("push config file %s does not hold a push config", path)
            return None
        if found[0] != task_id or (config_id is not None and found[1] != config_id):
            return None
        return config

    def save_push_config(self, config: PushConfig) -> PushConfig:
        task_id, config_id = check_config(config)
        directory = self._task_dir(task_id)
        created = not directory.is_dir()
        directory.mkdir(parents=True, exist_ok=True)
        if created and self.fsync:
            fsio.fsync_directory(directory.parent)
        fsio.atomic_write(self.path(task_id, config_id), orjson.dumps(config), self.syscalls, fsync=self.fsync)
        return config

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        if not isinstance(task_id, str) or not task_id or not isinstance(config_id, str) or not config_id:
            return None
        return self._read(self.path(task_id, config_id), task_id, config_id)

    def list_push_configs(self, task_id: str) -> list[PushConfig]:
        if not isinstance(task_id, str) or not task_id:
            return []
        try:
            with os.scandir(self._task_dir(task_id)) as entries:
                paths = [Path(e.path) for e in entries if e.name.endswith(".json") and not e.name.startswith(".")]
        except (FileNotFoundError, NotADirectoryError):
            return []
        configs = [c for c in (self._read(p, task_id) for p in paths) if c is not None]
        return sorted(configs, key=config_order)

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        if self.get_push_config(task_id, config_id) is None:
            return False
        try:
            os.unlink(self.path(task_id, config_id))
        except FileNotFoundError:
            return False
        if self.fsync:
            fsio.fsync_directory(self._task_dir(task_id))
        return True

    def delete_task_push_configs(self, task_id: str) -> int:
        """Remove the task's directory: its config files, then the directory itself."""
        if not isinstance(task_id, str) or not task_id:
            return 0
        directory = self._task_dir(task_id)
        deleted = 0
        try:
            with os.scandir(directory) as entries:
                names = [e.name for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            return 0
        for name in names:
            path = directory / name
            # Count only this task's configs (a file answers for the ids it holds).
            counted = name.endswith(".json") and self._read(path, task_id) is not None
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                deleted += counted
        with contextlib.suppress(OSError):  # gone already, or a config saved meanwhile
            directory.rmdir()
        if self.fsync:
            fsio.fsync_directory(self.directory)
        return deleted

    def __repr__(self) -> str:
        return f"<FilePushConfigStore {str(self.directory)!r}>"
