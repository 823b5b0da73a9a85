"""Push notification configs: the interface of their store, and the two stores every
task store can fall back on.

A config is a JSON-ready ``dict`` keyed by ``(config["taskId"], config["id"])``; the
store does not interpret the rest (``url``, ``token``, ``authentication``, and the
``dialect`` and ``createdAt`` that ``a2a.push`` keeps with it). One task may have any
number of configs; saving a config with an id the task already has replaces it. Each
task store owns one config store (``TaskStore.push_configs``, made by its
``create_push_configs()``) and deletes a task's configs with the task.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

import orjson

PushConfig = dict[str, Any]


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
    :meth:`delete_task_push_configs` and :meth:`has_configs`.

    ``list_push_configs`` returns a task's configs oldest first (by ``createdAt``, then
    id); ``get_push_config`` returns None for an unknown or unreadable config, never
    raising for a bad id; ``delete_push_config`` says whether there was one.
    """

    #: The sync methods do no I/O and may run on an event loop.
    nonblocking: bool = False
    #: :meth:`has_configs` is cheap enough to call on the thread that publishes a saved
    #: task (a dict lookup, a ``stat``): push delivery then skips a version no config
    #: can want without handing it to its thread. Off by default: never asked.
    cheap_has_configs: ClassVar[bool] = False

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

    def has_configs(self, task_id: str) -> bool:
        """Whether the task may have configs: False only when it surely has none (push
        delivery then skips the saved version). Asked only when :attr:`cheap_has_configs`;
        the default (True: "look them up") is always right."""
        return True

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
    cheap_has_configs = True

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
        """Whether the task has any config (a dict lookup)."""
        return bool(self._configs.get(task_id))


class PushConfigKeeper(Protocol):
    """A task store that keeps push configs itself (``keeps_push_configs = True``):
    the four methods of :class:`PushConfigStore`, on the task store."""

    nonblocking: bool

    def save_push_config(self, config: PushConfig) -> PushConfig: ...

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None: ...

    def list_push_configs(self, task_id: str) -> list[PushConfig]: ...

    def delete_push_config(self, task_id: str, config_id: str) -> bool: ...


class TaskStorePushConfigs(PushConfigStore):
    """The configs of a task store that keeps them itself (a :class:`PushConfigKeeper`)."""

    def __init__(self, task_store: PushConfigKeeper) -> None:
        self.task_store = task_store
        self.nonblocking = task_store.nonblocking

    def save_push_config(self, config: PushConfig) -> PushConfig:
        return self.task_store.save_push_config(config)

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        return self.task_store.get_push_config(task_id, config_id)

    def list_push_configs(self, task_id: str) -> list[PushConfig]:
        return self.task_store.list_push_configs(task_id)

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return self.task_store.delete_push_config(task_id, config_id)

    def __repr__(self) -> str:
        return f"<TaskStorePushConfigs {self.task_store!r}>"
