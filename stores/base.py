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
  every transition this way and retries on a stale version, on every store that says
  it can (``supports_compare_and_swap``, see :class:`TaskStore`).
- ``locked(id)`` holds a task against every other writer, in every process, while a
  transition that lost the compare-and-swap race several times in a row reads and
  saves it (a writer saving every few milliseconds would otherwise starve a cancel
  from another process). The default holds nothing; the built-in stores hold.
- A save that cannot be done (disk full, read-only directory) raises
  :class:`StoreError`, whose message says why; the previous version stays intact.
- ``list(...)`` filters by context, state and owner, newest-updated first, with an
  opaque cursor for the next page; a filter on a context needs an owner (or
  ``all_owners=True``): a context is per owner, see :class:`TaskQuery`.
  :func:`list_all` walks every page of a query.
- ``delete(id)`` removes a task and says whether there was one.
- ``delete_contexts(contexts)`` (retention) deletes each conversation whole or not at
  all, as the store finds it at the moment of the delete (see the method).
- ``aget``/``asave``/``alist``/``adelete`` do the same without blocking the event
  loop (by default they run the sync method in a worker thread).

What a store uses beside the contract, one module each: :mod:`stores.fields` (the
fields of a task a store reads), :mod:`stores.scope` (owner, tenant, scope key),
:mod:`stores.cursors` (page tokens), :mod:`stores.timestamps`,
:mod:`stores.durability` (which saves must be durable on return) and
:mod:`stores.push_configs` (the push-config store each task store owns).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import datetime as dt
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

from stores.cursors import decode_cursor
from stores.fields import task_updated_at, task_version
from stores.push_configs import MemoryPushConfigStore, PushConfigKeeper, PushConfigStore, TaskStorePushConfigs
from stores.scope import task_context

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

_PUSH_CONFIGS_LOCK = threading.Lock()


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


class TaskStore(ABC):
    """The interface of a task store. Subclass it and implement the four sync methods.

    Capabilities are class flags, which a subclass sets to what it does (those it leaves
    unset keep the safe default, False). Nothing inspects a store's methods to guess them:

    - ``durable``: tasks survive a restart of the process (system checks, the admin).
    - ``shared``: several processes (web workers, hosts) see the same tasks (the
      start-up warnings about several server processes).
    - ``nonblocking``: the sync methods do no I/O and may run on an event loop.
    - ``supports_compare_and_swap``: ``save`` and ``asave`` take ``expected_version``
      and honour it atomically; :mod:`a2a.core.lifecycle` then saves every transition as
      a compare-and-swap. Without it, plain saves under the lifecycle's in-process lock.
    - ``keeps_push_configs``: the store has the four methods of a push-config store
      (``save_push_config``, ``get_push_config``, ``list_push_configs``,
      ``delete_push_config``, see :class:`stores.push_configs.PushConfigKeeper`) and
      :attr:`push_configs` serves them; without it, :meth:`create_push_configs` makes
      the store that keeps them (in memory, by default).
    """

    durable: bool = False
    shared: bool = False
    #: The sync methods never block (no I/O), so async callers may call them directly.
    nonblocking: bool = False
    #: ``save``/``asave`` take ``expected_version`` (a compare-and-swap).
    supports_compare_and_swap: ClassVar[bool] = False
    #: The store keeps push configs itself (the four methods of a push-config store).
    keeps_push_configs: ClassVar[bool] = False

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
        (a missing task, or one without ``_version``, counts as 0); else raise
        :class:`StaleTaskError`. Only asked of a store that sets
        ``supports_compare_and_swap``; any other is saved without ``expected_version``
        and :mod:`a2a.core.lifecycle` relies on its in-process lock alone."""

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
            yield from list_all(self, TaskQuery(state=state, page_size=MAX_PAGE_SIZE))

    def scan_older(self, state: str, before: dt.datetime) -> Iterator[Task]:
        """Every task in ``state`` whose status last changed before ``before``, in no set
        order (retention, :mod:`stores.retention`); read as it is consumed, so the caller
        may delete what it was given before asking for more. The default pages through
        :meth:`list` (newest first, skipping the newer ones); the ORM store reads an index range."""
        for task in list_all(self, TaskQuery(state=state, page_size=MAX_PAGE_SIZE)):
            when = task_updated_at(task)
            if when is not None and when < before:
                yield task

    def locked(self, task_id: str) -> contextlib.AbstractContextManager[None]:
        """Hold the task against every other writer (its saves and deletes wait), in
        this process and in the others, until the block ends; this thread's ``get`` and
        ``save`` of it inside the block work as outside it. For short blocks: one read,
        one change, one save. The default holds nothing (a store that cannot exclude
        other writers leaves it so: :mod:`a2a.core.lifecycle` then only retries)."""
        return contextlib.nullcontext()

    def delete_many(self, tasks: Collection[Task]) -> builtins.list[str]:
        """Delete each of ``tasks`` (as read) with its push configs, unless it changed
        since (its stored ``_version`` is another: a follow-up resumed it, staff kept
        it); the ids deleted. The default reads each and calls :meth:`delete` (a change
        between the two is not seen); the built-in stores compare and delete atomically.
        Call it through :func:`stores.retention.delete_tasks`, which sends the signal
        the rest of what goes with a task listens to."""
        gone = []
        for task in tasks:
            current = self.get(task["id"])
            if current is not None and task_version(current) == task_version(task) and self.delete(task["id"]):
                gone.append(task["id"])
        return gone

    def delete_contexts(self, contexts: Sequence[Collection[Task]]) -> builtins.list[Task]:
        """Delete each of ``contexts`` whole or not at all, decided at the moment of the
        delete. Each is every task of one conversation as read (one owner's tasks of one
        ``contextId``, :func:`stores.scope.task_context`; a task without a context is a
        conversation of its own), and goes, with its tasks' push configs, only when the
        store then holds exactly those tasks of it, each at the version read: a task
        created in the context since, or one resumed, keeps the whole conversation.
        Returns the tasks deleted (as given). Call it through
        :func:`stores.retention.delete_contexts` (the signal).

        The built-in stores decide and delete atomically, also across processes, and
        make creating a task in a context wait for a delete of that context (see
        docs/stores.md, "Retention"). This default is best effort: it lists the context,
        then deletes its tasks with :meth:`delete_many`, so a task created or resumed
        between the two (by another thread or process) can still split the conversation."""
        deleted: builtins.list[Task] = []
        for tasks in contexts:
            if tasks and context_versions(self, tasks) == {t["id"]: task_version(t) for t in tasks}:
                gone = set(self.delete_many(tasks))
                deleted += [t for t in tasks if t["id"] in gone]
        return deleted

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
                    if self.keeps_push_configs:
                        configs = TaskStorePushConfigs(cast(PushConfigKeeper, self))
                    else:
                        configs = self.create_push_configs()
                    self.__dict__["_push_configs"] = configs
        return configs

    def create_push_configs(self) -> PushConfigStore:
        """A new store for this task store's push configs (not asked of a store that
        sets ``keeps_push_configs``): the built-in stores keep them beside their tasks;
        the default keeps them in memory (logged: they die with the process)."""
        logger.warning(
            "task store %r keeps no push notification configs (keeps_push_configs is not set); keeping them "
            "in memory, so they are lost on restart and not shared between processes",
            self,
        )
        return MemoryPushConfigStore()

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what the store holds (connections, handles). Optional."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def context_versions(store: TaskStore, tasks: Collection[Task]) -> dict[str, int]:
    """Task id -> stored ``_version`` of every task the conversation of ``tasks`` (one
    context's, :func:`stores.scope.task_context`) holds now, read through ``store.list``;
    for tasks without a context, those of ``tasks`` still stored."""
    first = next(iter(tasks))
    key = task_context(first)
    if key is None:
        found = (store.get(t["id"]) for t in tasks)
        return {t["id"]: task_version(t) for t in found if t is not None and task_context(t) is None}
    query = TaskQuery(context_id=key[1], owner=key[0], page_size=MAX_PAGE_SIZE)
    return {t["id"]: task_version(t) for t in list_all(store, query)}


def list_all(store: TaskStore, query: TaskQuery) -> Iterator[Task]:
    """Every task ``store.list(query)`` pages through, from ``query``'s page on, in the
    list's order; the next page is read when the last one is consumed, so a caller may
    stop early, or delete what it was given before asking for more."""
    while True:
        page = store.list(query)
        yield from page.tasks
        if not page.next_page_token:
            return
        query = replace(query, page_token=page.next_page_token)
