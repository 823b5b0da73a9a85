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
  ``flock``, the ORM store with a conditional ``UPDATE``). :mod:`a2a.lifecycle` saves
  every transition this way and retries on a stale version.
- A save that cannot be done (disk full, read-only directory) raises
  :class:`StoreError`, whose message says why; the previous version stays intact.
- ``list(...)`` filters by context and state, newest-updated first, with an opaque
  cursor for the next page.
- ``delete(id)`` removes a task and says whether there was one.
- ``aget``/``asave``/``alist``/``adelete`` do the same without blocking the event
  loop (by default they run the sync method in a worker thread).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import orjson

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
    ``owner`` (when not None) keeps only the tasks of that owner."""

    context_id: str | None = None
    state: str | None = None
    updated_after: dt.datetime | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str | None = None
    owner: str | None = None

    def __post_init__(self) -> None:
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
        and (query.owner is None or task_owner(t) == query.owner)
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

    @abstractmethod
    def get(self, task_id: str) -> Task | None:
        """The saved task, or None when unknown or corrupt. Never raises for a bad id;
        raises :class:`StoreUnavailable` when it cannot read now."""

    @abstractmethod
    def save(self, task: Task, expected_version: int | None = None) -> Task:
        """Persist ``task`` under ``task["id"]`` (replacing any previous one); return it.

        With ``expected_version``, only when the stored task's ``_version`` is that
        (a missing task, or one without ``_version``, counts as 0); else raise :class:`StaleTaskError`. A store
        whose ``save`` takes no ``expected_version`` still works: :mod:`a2a.lifecycle`
        then relies on its in-process lock alone."""

    @abstractmethod
    def list(self, query: TaskQuery | None = None) -> TaskPage:
        """One page of tasks matching ``query``, newest-updated first."""

    @abstractmethod
    def delete(self, task_id: str) -> bool:
        """Remove the task; True when there was one. The built-in stores remove its push
        notification configs too (:func:`stores.push.delete_task_push_configs`); a
        store that keeps configs itself should do the same."""

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

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what the store holds (connections, handles). Optional."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"
