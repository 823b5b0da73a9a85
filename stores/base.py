"""The task-store interface every backend implements.

A Task is a JSON-ready ``dict`` in the stored shape the toolnexus family writes (the
A2A v0.3 wire shape): ``{"id", "contextId", "status": {"state", "timestamp", ...},
"artifacts", "history", "metadata", "kind": "task"}`` with lowercase states. The
store does not interpret it beyond ``id``, ``contextId``, ``status.state`` and
``status.timestamp``.

The contract, from the seeds and then some:

- ``get(id)`` returns the saved task, or ``None`` for an unknown id *and* for a
  corrupt record (logged, never raised). A read that fails for now (out of file
  descriptors, a database that is restarting) raises :class:`StoreUnavailable`:
  the task may well be there, so a caller never takes that for "missing".
- ``save(task)`` persists by ``task["id"]`` and returns the task (last writer wins).
  ``save(task, expected_version=n)`` is a compare-and-swap: it saves only when the
  stored task's ``_version`` is ``n`` (0: there is no such task yet, or it has no
  ``_version``), and raises :class:`StaleTaskError` otherwise, atomically, also
  across processes (the memory store under its lock, the file store under a per-task
  ``flock``, the ORM store with a conditional ``UPDATE``). :mod:`a2a.core.lifecycle` saves
  every transition this way and retries on a stale version.
- A save that cannot be done (disk full, read-only directory) raises
  :class:`StoreError`, whose message says why; the previous version stays intact.
- ``list(...)`` filters by context, state and owner, newest-updated first, with an
  opaque cursor for the next page; a filter on a context needs an owner (or
  ``all_owners=True``): a context is per owner, see :class:`TaskQuery`.
- ``delete(id)`` removes a task and says whether there was one.
- ``aget``/``asave``/``alist``/``adelete`` do the same without blocking the event
  loop (by default they run the sync method in a worker thread).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import contextvars
import datetime as dt
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from django.core.checks import CheckMessage

logger = logging.getLogger(__name__)

Task = dict[str, Any]

#: The states a stored task can be in (A2A v0.3 spelling, as stored).
STATES = (
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "completed",
    "canceled",
    "failed",
    "rejected",
    "unknown",
)
TERMINAL_STATES = frozenset({"completed", "canceled", "failed", "rejected"})

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


def now_iso() -> str:
    """The current UTC time as A2A wants it: ISO 8601, milliseconds, ``Z`` suffix."""
    return format_timestamp(dt.datetime.now(dt.UTC))


def format_timestamp(when: dt.datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC."""
    when = when.astimezone(dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def parse_timestamp(value: str) -> dt.datetime:
    """Parse an ISO 8601 timestamp; a naive one is taken as UTC. Raises ValueError."""
    when = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


class StaleTaskError(Exception):
    """A compare-and-swap save found another version than the one it was based on."""

    def __init__(self, task_id: str, expected: int, found: int | None) -> None:
        self.task_id, self.expected, self.found = task_id, expected, found
        stored = "no stored task" if found is None else f"version {found}"
        super().__init__(f"task {task_id!r} changed meanwhile: expected version {expected}, found {stored}")


class StoreError(Exception):
    """A store could not do what it was asked (a full disk, a read-only directory, ...).

    The message is fit for a client ("could not save the task: No space left on
    device"); the cause is chained."""


class StoreUnavailable(StoreError):
    """A store could not read right now (too many open files, an I/O error, a database
    that is restarting): nothing is known about the task, which may well be there.

    Never "missing": a caller that decides something from a task's absence (cancel a
    handler, fail a lease) leaves the task as it is and tries again later. A client is
    answered with an internal error saying so, not "task not found"."""


def task_version(task: Task | None) -> int:
    """The task's ``_version`` (0 for None or a task saved without one)."""
    version = task.get("_version", 0) if isinstance(task, dict) else 0
    return version if isinstance(version, int) and not isinstance(version, bool) else 0


def task_state(task: Task) -> str:
    status = task.get("status")
    return status.get("state", "unknown") if isinstance(status, dict) else "unknown"


def task_owner(task: Task) -> str:
    """Who the task belongs to: its ``_owner`` ("" for an agent without authentication)."""
    owner = task.get("_owner", "")
    return owner if isinstance(owner, str) else ""


def task_tenant(task: Task) -> str:
    """The tenant the task was created under: its ``_tenant`` ("" without one)."""
    tenant = task.get("_tenant", "")
    return tenant if isinstance(tenant, str) else ""


#: Between the tenant and the owner in a scope key (a tenant never contains it).
SCOPE_SEPARATOR = "\x1f"


def scope_key(tenant: str, owner: str) -> str:
    """The key the stores scope tasks by (``TaskQuery.owner``): the owner, preceded by
    the tenant and :data:`SCOPE_SEPARATOR` when there is a tenant. Without tenants it
    is the owner itself, so tasks saved before tenants existed keep their key."""
    return f"{tenant}{SCOPE_SEPARATOR}{owner}" if tenant else owner


def task_scope(task: Task) -> str:
    """The scope key of a task (:func:`scope_key` of its tenant and owner): what the
    stores index and filter as its owner."""
    tenant = task.get("_tenant")
    return scope_key(tenant, task_owner(task)) if tenant and isinstance(tenant, str) else task_owner(task)


def task_updated(task: Task) -> str:
    """The task's last status change as an ISO string ("" when it has none)."""
    status = task.get("status")
    ts = status.get("timestamp") if isinstance(status, dict) else None
    return ts if isinstance(ts, str) else ""


def check_task(task: Any) -> str:
    """Return the id of a savable task, or raise ValueError saying what is wrong."""
    if not isinstance(task, dict):
        raise ValueError(f"a task must be a dict, not {type(task).__name__}")
    task_id = task.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise ValueError("a task needs a non-empty string 'id'")
    return task_id


@dataclass(frozen=True)
class TaskQuery:
    """What ``list`` selects: all filters optional; ``page_token`` from a previous page.
    ``owner`` (when not None) keeps only the tasks of that owner: a scope key
    (:func:`scope_key`), the tenant folded in before the caller when there is one.

    A context belongs to its owner: callers who send the same ``contextId`` each have
    their own conversation in it. So a query by ``context_id`` must say whose context
    it reads: ``owner`` (the caller, "" without authentication), or ``all_owners=True``
    for staff tools (the admin, ``manage.py a2a_tasks``); without either it raises
    ValueError, so no caller can forget the owner."""

    context_id: str | None = None
    state: str | None = None
    updated_after: dt.datetime | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str | None = None
    owner: str | None = None
    all_owners: bool = False

    def __post_init__(self) -> None:
        if self.owner is not None and self.all_owners:
            raise ValueError("a query is either for one owner or for all owners, not both")
        if self.context_id is not None and self.owner is None and not self.all_owners:
            raise ValueError(
                "a query by context needs the owner whose context it is (owner=...), "
                "or all_owners=True (staff): contexts are per owner"
            )
        if not 1 <= self.page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page size must be between 1 and {MAX_PAGE_SIZE}")
        if self.state is not None and self.state not in STATES:
            raise ValueError(f"unknown state {self.state!r}; expected one of {', '.join(STATES)}")
        if self.page_token:
            decode_cursor(self.page_token)  # raises ValueError when it is not ours


@dataclass
class TaskPage:
    """One page of ``list``: the tasks, the token of the next page ("" on the last)."""

    tasks: list[Task]
    next_page_token: str = ""
    total_size: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def encode_cursor(updated: str, task_id: str, total: int | None = None) -> str:
    """An opaque page token pointing just past the task (updated, id); ``total``, when
    given, is the listing's total size, for the next pages to answer without counting."""
    values: list[str | int] = [updated, task_id] if total is None else [updated, task_id, total]
    return base64.urlsafe_b64encode(orjson.dumps(values)).decode().rstrip("=")


def _cursor_values(token: str) -> list:
    try:
        values = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError("invalid page token") from None
    if (
        not isinstance(values, list)
        or len(values) not in (2, 3)
        or not all(isinstance(v, str) for v in values[:2])
        or (len(values) == 3 and (not isinstance(values[2], int) or isinstance(values[2], bool) or values[2] < 0))
    ):
        raise ValueError("invalid page token")
    return values


def decode_cursor(token: str) -> tuple[str, str]:
    """Inverse of :func:`encode_cursor`; raises ValueError for a token we did not make."""
    updated, task_id = _cursor_values(token)[:2]
    return updated, task_id


def cursor_total(token: str) -> int | None:
    """The total size a page token carries (None when it carries none)."""
    values = _cursor_values(token)
    return values[2] if len(values) == 3 else None


def page_in_memory(tasks: list[Task], query: TaskQuery) -> TaskPage:
    """Filter, order (newest-updated first, then id) and cut one page from ``tasks``.

    Used by the stores that hold no index of their own (memory, file).
    """
    after = format_timestamp(query.updated_after) if query.updated_after else None
    selected = [
        t
        for t in tasks
        if (query.context_id is None or t.get("contextId") == query.context_id)
        and (query.state is None or task_state(t) == query.state)
        and (after is None or task_updated(t) > after)
        and (query.owner is None or task_scope(t) == query.owner)
    ]
    selected.sort(key=lambda t: (task_updated(t), t["id"]), reverse=True)
    total = len(selected)
    if query.page_token:
        cursor = decode_cursor(query.page_token)
        selected = [t for t in selected if (task_updated(t), t["id"]) < cursor]
    page = selected[: query.page_size]
    more = len(selected) > query.page_size
    token = encode_cursor(task_updated(page[-1]), page[-1]["id"]) if more else ""
    return TaskPage(tasks=page, next_page_token=token, total_size=total)


_PUSH_CONFIGS_LOCK = threading.Lock()

_NOT_AN_ACKNOWLEDGEMENT: contextvars.ContextVar[bool] = contextvars.ContextVar("not_an_acknowledgement", default=False)


@contextlib.contextmanager
def not_an_acknowledgement() -> Iterator[None]:
    """The saves made inside are answers to no one (a lease renewal: nothing a client can
    see changes, and losing it only makes the lease look older). A store may then commit
    them lazily (the ORM store on PostgreSQL: ``synchronous_commit`` off for that
    transaction) where a later durable commit makes them durable too; every other save
    stays durable before it returns. See docs/stores.md, "What is durable when"."""
    token = _NOT_AN_ACKNOWLEDGEMENT.set(True)
    try:
        yield
    finally:
        _NOT_AN_ACKNOWLEDGEMENT.reset(token)


def acknowledged() -> bool:
    """False inside :func:`not_an_acknowledgement`: whether a save must be durable before
    it returns (as every save is, but a lease renewal's)."""
    return not _NOT_AN_ACKNOWLEDGEMENT.get()


class TaskStore(ABC):
    """The interface of a task store. Subclass it and implement the four sync methods.

    Capability flags, read by system checks and the admin:

    - ``durable``: tasks survive a restart of the process.
    - ``shared``: several processes (web workers, hosts) see the same tasks.
    - ``nonblocking``: the sync methods do no I/O and may run on an event loop.
    """

    durable: bool = False
    shared: bool = False
    #: The sync methods never block (no I/O), so async callers may call them directly.
    nonblocking: bool = False

    def check(self, *, databases: Collection[str] | None = None) -> list[CheckMessage]:
        """System-check messages about this store (``manage.py check``, and the server's
        start-up, which stops on an error). ``databases``: the database aliases the check
        may query, None for none (``manage.py check``, ``migrate``)."""
        return []

    @abstractmethod
    def get(self, task_id: str) -> Task | None:
        """The saved task, or None when unknown or corrupt. Never raises for a bad id;
        raises :class:`StoreUnavailable` when it cannot read now."""

    @abstractmethod
    def save(self, task: Task, expected_version: int | None = None) -> Task:
        """Persist ``task`` under ``task["id"]`` (replacing any previous one); return it.

        With ``expected_version``, only when the stored task's ``_version`` is that
        (a missing task, or one without ``_version``, counts as 0); else raise :class:`StaleTaskError`. A store
        whose ``save`` takes no ``expected_version`` still works: :mod:`a2a.core.lifecycle`
        then relies on its in-process lock alone."""

    @abstractmethod
    def list(self, query: TaskQuery | None = None) -> TaskPage:
        """One page of tasks matching ``query``, newest-updated first."""

    @abstractmethod
    def delete(self, task_id: str) -> bool:
        """Remove the task; True when there was one. The built-in stores remove its push
        notification configs too (``self.push_configs.delete_task_push_configs(task_id)``);
        a store that keeps configs itself should do the same."""

    def scan(self, states: Collection[str] = ()) -> Iterator[Task]:
        """Every task (in one of ``states`` when given), in no set order: for the lease
        reaper and maintenance. The default pages through :meth:`list` one state at a
        time; a store that reads everything at once more cheaply overrides it."""
        for state in states or (None,):
            token: str | None = None
            while True:
                page = self.list(TaskQuery(state=state, page_size=MAX_PAGE_SIZE, page_token=token))
                yield from page.tasks
                token = page.next_page_token
                if not token:
                    break

    async def aget(self, task_id: str) -> Task | None:
        return await asyncio.to_thread(self.get, task_id)

    async def asave(self, task: Task, expected_version: int | None = None) -> Task:
        if expected_version is None:
            return await asyncio.to_thread(self.save, task)
        return await asyncio.to_thread(self.save, task, expected_version)

    async def alist(self, query: TaskQuery | None = None) -> TaskPage:
        return await asyncio.to_thread(self.list, query)

    async def adelete(self, task_id: str) -> bool:
        return await asyncio.to_thread(self.delete, task_id)

    @property
    def push_configs(self) -> PushConfigStore:
        """This store's push notification configs, created with it on first use
        (:meth:`create_push_configs`) and deleted with their tasks."""
        configs = self.__dict__.get("_push_configs")
        if configs is None:
            with _PUSH_CONFIGS_LOCK:
                configs = self.__dict__.get("_push_configs")
                if configs is None:
                    if all(callable(getattr(self, name, None)) for name in PUSH_CONFIG_METHODS):
                        configs = TaskStorePushConfigs(self)  # it keeps them itself
                    else:
                        configs = self.create_push_configs()
                    self.__dict__["_push_configs"] = configs
        return configs

    def create_push_configs(self) -> PushConfigStore:
        """A new store for this task store's push configs: the built-in stores keep
        them beside their tasks. A store with the four methods
        (``save_push_config``, ``get_push_config``, ``list_push_configs``,
        ``delete_push_config``) serves them itself; for any other the default keeps
        them in memory (logged: they die with the process)."""
        logger.warning(
            "task store %r keeps no push notification configs (it lacks %s); keeping them in memory, "
            "so they are lost on restart and not shared between processes",
            self,
            ", ".join(PUSH_CONFIG_METHODS),
        )
        return MemoryPushConfigStore()

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what the store holds (connections, handles). Optional."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


# --- Push notification configs: each task store owns a store of them ---------------------
#
# A config is a JSON-ready ``dict`` keyed by ``(config["taskId"], config["id"])``; the
# store does not interpret the rest (``url``, ``token``, ``authentication``, and the
# ``dialect`` and ``createdAt`` that ``a2a.push`` keeps with it). One task may have any
# number of configs; saving a config with an id the task already has replaces it. A
# task store creates its config store (:meth:`TaskStore.create_push_configs`) and
# deletes a task's configs with the task.

PushConfig = dict[str, Any]

#: The methods a custom task store provides to keep push configs itself.
PUSH_CONFIG_METHODS = ("save_push_config", "get_push_config", "list_push_configs", "delete_push_config")


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
