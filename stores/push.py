"""Where push notification configs live: beside the tasks, in the same backend family.

A config is a JSON-ready ``dict`` keyed by ``(config["taskId"], config["id"])``; the
store does not interpret the rest (``url``, ``token``, ``authentication``, and the
``dialect`` and ``createdAt`` that :mod:`a2a.push` keeps with it). One task may have
any number of configs; saving a config with an id the task already has replaces it.

Which backend serves the configs follows the configured task store
(:func:`get_push_config_store`):

- a task store that itself has the four methods below (``save_push_config``,
  ``get_push_config``, ``list_push_configs``, ``delete_push_config``) serves them;
- ``MemoryTaskStore`` -> :class:`MemoryPushConfigStore`;
- ``FileTaskStore`` -> :class:`FilePushConfigStore`: one JSON file per config under
  ``<task dir>/.push-configs/<task>/``, written atomically (the task listing skips
  dot-names);
- ``OrmTaskStore`` -> :class:`OrmPushConfigStore`: the ``stores.PushConfigRecord``
  table on the task store's database alias;
- anything else -> in memory, with a logged warning (configs then die with the process).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import threading
import weakref
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import orjson

from stores.base import TaskStore, now_iso, parse_timestamp
from stores.file import MAX_STEM, FileTaskStore, atomic_write, file_stem, fsync_directory
from stores.memory import MemoryTaskStore
from stores.orm import OrmTaskStore

logger = logging.getLogger(__name__)

PushConfig = dict[str, Any]

#: The methods a custom task store provides to keep push configs itself.
METHODS = ("save_push_config", "get_push_config", "list_push_configs", "delete_push_config")
#: The file store's subdirectory (dot-prefixed: the task listing ignores it).
FILE_SUBDIRECTORY = ".push-configs"


def check_config(config: Any) -> tuple[str, str]:
    """The ``(task id, config id)`` of a savable config, or ValueError saying what is wrong."""
    if not isinstance(config, dict):
        raise ValueError(f"a push config must be a dict, not {type(config).__name__}")
    task_id, config_id = config.get("taskId"), config.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise ValueError("a push config needs a non-empty string 'taskId'")
    if not isinstance(config_id, str) or not config_id:
        raise ValueError("a push config needs a non-empty string 'id'")
    return task_id, config_id


def config_order(config: PushConfig) -> tuple[str, str]:
    """The sort key of a task's configs: oldest first, then by id."""
    created = config.get("createdAt")
    return (created if isinstance(created, str) else "", config["id"])


class PushConfigStore(ABC):
    """The interface: four sync methods and their async twins, plus
    :meth:`delete_task_push_configs`.

    ``list_push_configs`` returns a task's configs oldest first (by ``createdAt``, then
    id); ``get_push_config`` returns None for an unknown or unreadable config, never
    raising for a bad id; ``delete_push_config`` says whether there was one.
    """

    #: The sync methods do no I/O and may run on an event loop.
    nonblocking: bool = False

    @abstractmethod
    def save_push_config(self, config: PushConfig) -> PushConfig: ...

    @abstractmethod
    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None: ...

    @abstractmethod
    def list_push_configs(self, task_id: str) -> list[PushConfig]: ...

    @abstractmethod
    def delete_push_config(self, task_id: str, config_id: str) -> bool: ...

    def delete_task_push_configs(self, task_id: str) -> int:
        """Delete every config of the task (its task store calls this when it deletes
        the task); how many there were. Override it with a single operation."""
        return sum(self.delete_push_config(task_id, c["id"]) for c in self.list_push_configs(task_id))

    async def _run(self, method: Any, *args: Any) -> Any:
        return method(*args) if self.nonblocking else await asyncio.to_thread(method, *args)

    async def asave_push_config(self, config: PushConfig) -> PushConfig:
        return await self._run(self.save_push_config, config)

    async def aget_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        return await self._run(self.get_push_config, task_id, config_id)

    async def alist_push_configs(self, task_id: str) -> list[PushConfig]:
        return await self._run(self.list_push_configs, task_id)

    async def adelete_push_config(self, task_id: str, config_id: str) -> bool:
        return await self._run(self.delete_push_config, task_id, config_id)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class MemoryPushConfigStore(PushConfigStore):
    """Configs in a dict of this process, kept serialized (callers get copies)."""

    nonblocking = True

    def __init__(self) -> None:
        self._configs: dict[str, dict[str, bytes]] = {}
        self._lock = threading.Lock()

    def save_push_config(self, config: PushConfig) -> PushConfig:
        task_id, config_id = check_config(config)
        raw = orjson.dumps(config)
        with self._lock:
            self._configs.setdefault(task_id, {})[config_id] = raw
        return config

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        raw = self._configs.get(task_id, {}).get(config_id) if isinstance(task_id, str) else None
        return orjson.loads(raw) if raw is not None else None

    def list_push_configs(self, task_id: str) -> list[PushConfig]:
        with self._lock:
            raws = list(self._configs.get(task_id, {}).values())
        return sorted((orjson.loads(r) for r in raws), key=config_order)

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        with self._lock:
            configs = self._configs.get(task_id)
            if not configs or configs.pop(config_id, None) is None:
                return False
            if not configs:
                del self._configs[task_id]
            return True

    def delete_task_push_configs(self, task_id: str) -> int:
        with self._lock:
            return len(self._configs.pop(task_id, {})) if isinstance(task_id, str) else 0

    def has_configs(self, task_id: str) -> bool:
        """Whether the task has any config (cheap: lets the push listener skip a task)."""
        return bool(self._configs.get(task_id))


def _unique_stem(value: str) -> str:
    """A file-name stem for an id: the id itself when it is already a safe name, else
    its sanitized form suffixed with a hash (so ``a.b`` and ``a_b`` never share a file)."""
    stem = file_stem(value)
    if stem == value:
        return stem
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{stem[: MAX_STEM - 33]}-{digest}"


class FilePushConfigStore(PushConfigStore):
    """One JSON file per config: ``<directory>/<task>/<config>.json``, written like the
    file task store writes tasks (temp file, fsync, ``os.replace``, fsync the
    directory). One file per config, so two configs saved at once on one task, from
    two threads or two processes, both survive. A file only answers for the
    ``(taskId, id)`` it holds."""

    #: :meth:`has_configs` is one ``stat``: cheap enough for the publisher's thread.
    cheap_has_configs = True

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.fsync = fsync

    def _task_dir(self, task_id: str) -> Path:
        return self.directory / _unique_stem(task_id)

    def has_configs(self, task_id: str) -> bool:
        """Whether the task may have configs: its directory exists (a config is saved
        into it only after it is made). False lets a saved task skip push delivery."""
        return isinstance(task_id, str) and bool(task_id) and self._task_dir(task_id).is_dir()

    def path(self, task_id: str, config_id: str) -> Path:
        return self._task_dir(task_id) / f"{_unique_stem(config_id)}.json"

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
            fsync_directory(directory.parent)
        atomic_write(self.path(task_id, config_id), orjson.dumps(config), fsync=self.fsync)
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
            fsync_directory(self._task_dir(task_id))
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
            fsync_directory(self.directory)
        return deleted

    def __repr__(self) -> str:
        return f"<FilePushConfigStore {str(self.directory)!r}>"


class OrmPushConfigStore(PushConfigStore):
    """Configs as rows of :class:`stores.models.PushConfigRecord` in database ``using``."""

    def __init__(self, using: str = "default") -> None:
        self.using = using

    @property
    def objects(self):
        """The table on a healthy connection: the push deliverer's threads would keep a
        connection the database dropped (a restart) for good otherwise."""
        from stores.models import PushConfigRecord
        from stores.orm import refresh_connection

        refresh_connection(self.using)
        return PushConfigRecord.objects.using(self.using)

    def save_push_config(self, config: PushConfig) -> PushConfig:
        from django.db import IntegrityError, transaction

        task_id, config_id = check_config(config)
        rows = self.objects.filter(task_id=task_id, config_id=config_id)
        if rows.update(config=config):
            return config
        try:
            created = parse_timestamp(config.get("createdAt") or now_iso())
        except ValueError:
            created = parse_timestamp(now_iso())
        try:
            with transaction.atomic(using=self.using):
                self.objects.create(task_id=task_id, config_id=config_id, config=config, created_at=created)
        except IntegrityError:  # created meanwhile by another writer
            rows.update(config=config)
        return config

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        if not isinstance(task_id, str) or not isinstance(config_id, str):
            return None
        rows = list(self.objects.filter(task_id=task_id, config_id=config_id).values_list("config", flat=True)[:1])
        return self._valid(rows[0], task_id) if rows else None

    def list_push_configs(self, task_id: str) -> list[PushConfig]:
        if not isinstance(task_id, str):
            return []
        rows = self.objects.filter(task_id=task_id).order_by("created_at", "config_id").values_list("config", flat=True)
        return [c for c in (self._valid(r, task_id) for r in rows) if c is not None]

    def _valid(self, config: Any, task_id: str) -> PushConfig | None:
        try:
            found = check_config(config)
        except ValueError:
            found = None
        if found is None or found[0] != task_id:
            logger.warning("push config row of task %r in database %r is corrupt", task_id, self.using)
            return None
        return config

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        deleted, _ = self.objects.filter(task_id=task_id, config_id=config_id).delete()
        return bool(deleted)

    def delete_task_push_configs(self, task_id: str) -> int:
        if not isinstance(task_id, str):
            return 0
        deleted, _ = self.objects.filter(task_id=task_id).delete()
        return deleted

    def __repr__(self) -> str:
        return f"<OrmPushConfigStore using={self.using!r}>"


class TaskStorePushConfigs(PushConfigStore):
    """A custom task store that keeps push configs itself (it has :data:`METHODS`)."""

    def __init__(self, task_store: TaskStore) -> None:
        self.task_store = task_store
        self.nonblocking = bool(getattr(task_store, "nonblocking", False))

    def save_push_config(self, config: PushConfig) -> PushConfig:
        return self.task_store.save_push_config(config)  # type: ignore[attr-defined]

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        return self.task_store.get_push_config(task_id, config_id)  # type: ignore[attr-defined]

    def list_push_configs(self, task_id: str) -> list[PushConfig]:
        return self.task_store.list_push_configs(task_id)  # type: ignore[attr-defined]

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return self.task_store.delete_push_config(task_id, config_id)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"<TaskStorePushConfigs {self.task_store!r}>"


def push_config_store_for(task_store: TaskStore) -> PushConfigStore:
    """A new push-config store beside ``task_store`` (see the module doc)."""
    if all(callable(getattr(task_store, name, None)) for name in METHODS):
        return TaskStorePushConfigs(task_store)
    if isinstance(task_store, MemoryTaskStore):
        return MemoryPushConfigStore()
    if isinstance(task_store, FileTaskStore):
        return FilePushConfigStore(task_store.directory / FILE_SUBDIRECTORY, fsync=task_store.fsync)
    if isinstance(task_store, OrmTaskStore):
        return OrmPushConfigStore(using=task_store.using)
    logger.warning(
        "task store %r keeps no push notification configs (it lacks %s); keeping them in memory, "
        "so they are lost on restart and not shared between processes",
        task_store,
        ", ".join(METHODS),
    )
    return MemoryPushConfigStore()


def delete_task_push_configs(task_store: TaskStore, task_id: str) -> int:
    """Delete every push config of ``task_id`` beside ``task_store``: the built-in task
    stores call this from ``delete``, so a deleted task leaves no configs behind. A
    store that keeps configs itself (:data:`METHODS`) and calls this has them deleted
    one by one through its ``delete_push_config``."""
    return get_push_config_store(task_store).delete_task_push_configs(task_id)


_stores: weakref.WeakKeyDictionary[TaskStore, PushConfigStore] = weakref.WeakKeyDictionary()
_unhashable: dict[int, tuple[TaskStore, PushConfigStore]] = {}
_stores_lock = threading.Lock()


def get_push_config_store(task_store: TaskStore | None = None) -> PushConfigStore:
    """The push-config store beside ``task_store`` (default: the project's task store),
    one per task store instance."""
    if task_store is None:
        from stores.backends import get_task_store

        task_store = get_task_store()
    with _stores_lock:
        try:
            store = _stores.get(task_store)
        except TypeError:  # an unhashable store object: key it by identity, for good
            store = _unhashable.get(id(task_store), (None, None))[1]
            if store is None:
                store = push_config_store_for(task_store)
                _unhashable[id(task_store)] = (task_store, store)
            return store
        if store is None:
            store = _stores[task_store] = push_config_store_for(task_store)
        return store
