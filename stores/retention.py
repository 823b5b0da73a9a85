"""Retention: which stored tasks have expired, and deleting them in short batches.

A :class:`Policy` gives each state an age (``{"completed": 30d, "failed": 7d}``): a task
in that state whose status has not changed for longer has expired. A task in a state
the policy does not name, and a task staff chose to keep (:data:`KEEP`), never expires.

:func:`sweep` finds the expired tasks of a store (``TaskStore.scan_older``: an indexed
range on the ORM store, the listing index on the others) and deletes them a batch at a
time, a generator, so its caller yields between batches. Policy sweeps delete a
*context* (one owner's conversation) whole or not at all: while any task of it has not
expired (it is in flight, waiting for input, recent, kept), every task of it stays, so
a handler reading the earlier conversation (``HandlerRequest.context_tasks``) and a task
referring to an earlier one in its conversation never find a hole. The sweep reads each
context to decide that it has expired, but the store decides again at the moment of the
delete (``TaskStore.delete_contexts``: one transaction per batch on the ORM store, the
context's lock and its tasks' on the file store, the store's lock in memory): a
follow-up stored in the context meanwhile, or a task of it resumed, keeps it whole.

Everything that goes with a task goes through :func:`delete_tasks` (and
:func:`delete_contexts`, its whole-conversation form): the store deletes
the task with its push configs, then :data:`tasks_deleted` is sent, the one hook for
the rest (stored files, say): a receiver gets ``store``, ``tasks`` (the deleted
tasks as last read) and ``moved_to`` (the store a moved task's copy lives in, else
None). Below the ``a2a`` app: no setting is read here
(``a2a.runtime.retention`` reads ``A2A_RETENTION`` and runs the sweeps).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.dispatch import Signal

from stores import fields
from stores.base import MAX_PAGE_SIZE, StaleTaskError, Task, TaskQuery, TaskStore, list_all
from stores.fields import task_state, task_updated_at, task_version
from stores.scope import task_scope

#: The private field of a task staff chose to keep: it never expires (nor does its context).
KEEP = fields.KEEP

#: The states a retention policy may name: the final ones and those waiting for the
#: client. A task in flight (``submitted``, ``working``) is the lease reaper's.
RETAINED_STATES = ("completed", "failed", "canceled", "rejected", "input-required", "auth-required")

#: Sent after tasks were deleted (``store``, ``tasks``: as last read): what goes with them.
tasks_deleted = Signal()

_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)", re.IGNORECASE)
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
#: Contexts remembered as decided during one sweep (beyond, decided again: a query each).
_MAX_CONTEXTS = 100_000


def parse_age(text: str) -> dt.timedelta:
    """``"30d"``, ``"12h"``, ``"90m"``, ``"45s"``, ``"2w"``, ``"1h30m"`` -> a timedelta;
    ValueError for anything else."""
    compact = text.strip().replace(" ", "")
    if not compact or _AGE.sub("", compact):
        raise ValueError(f"{text!r} is not an age: use a number and a unit, e.g. 30d, 12h, 90m, 45s, 2w or 1h30m")
    return dt.timedelta(seconds=sum(float(n) * _UNIT_SECONDS[u.lower()] for n, u in _AGE.findall(compact)))


def kept(task: Task) -> bool:
    """Whether staff chose to keep the task (it never expires)."""
    return task.get(KEEP) is True


@dataclass(frozen=True)
class Policy:
    """How long a task is kept in each state (a state it does not name: forever)."""

    ages: Mapping[str, dt.timedelta] = field(default_factory=dict)

    @classmethod
    def from_setting(cls, value: Any) -> Policy:
        """``{"completed": "30d", "failed": 7 * 86400, "input-required": None}``: an age
        (``parse_age``) or seconds per state of :data:`RETAINED_STATES`; None: forever.
        ValueError saying what is wrong."""
        if not isinstance(value, Mapping):
            raise ValueError(f"must be a dict of state -> age, not {type(value).__name__}")
        ages = {}
        for state, age in value.items():
            if state not in RETAINED_STATES:
                raise ValueError(f"cannot name {state!r}; the states it may name: {', '.join(RETAINED_STATES)}")
            if age is None:
                continue
            if isinstance(age, bool) or not isinstance(age, (str, int, float)):
                raise ValueError(f"the age of {state!r} must be a string such as '30d', a number of seconds or None")
            seconds = parse_age(age) if isinstance(age, str) else dt.timedelta(seconds=age)
            if seconds <= dt.timedelta(0):
                raise ValueError(f"the age of {state!r} must be more than 0")
            ages[state] = seconds
        return cls(ages)

    def __bool__(self) -> bool:
        return bool(self.ages)

    def expires(self, task: Task) -> dt.datetime | None:
        """When ``task`` expires by its own state and age (its context may keep it
        longer, see :func:`sweep`); None: never (kept, a state kept forever, no timestamp)."""
        age = self.ages.get(task_state(task))
        when = task_updated_at(task) if age is not None and not kept(task) else None
        return when + age if when is not None and age is not None else None

    def expired(self, task: Task, now: dt.datetime) -> bool:
        when = self.expires(task)
        return when is not None and when <= now


@dataclass
class Swept:
    """What one sweep of a store did: the tasks deleted (or that would be, in a dry
    run) by state, and the expired tasks left because their context had not expired
    or they changed meanwhile."""

    deleted: dict[str, int] = field(default_factory=dict)
    spared: int = 0

    @property
    def total(self) -> int:
        return sum(self.deleted.values())

    def add(self, tasks: Sequence[Task]) -> None:
        for task in tasks:
            state = task_state(task)
            self.deleted[state] = self.deleted.get(state, 0) + 1


def delete_tasks(store: TaskStore, tasks: Sequence[Task], *, moved_to: TaskStore | None = None) -> list[Task]:
    """Delete ``tasks`` (as read) unless they changed since, with what goes with them:
    their push configs (the store), then every receiver of :data:`tasks_deleted`.
    Returns the tasks deleted. The one way a batch of tasks is deleted (retention, the
    admin, ``manage.py a2a_tasks prune`` and ``copy --move``, the health probe).
    ``moved_to``: the store a copy of each now lives in (``copy --move``), so a receiver
    keeps what the copy still uses (stored files)."""
    if not tasks:
        return []
    gone = set(store.delete_many(tasks))
    deleted = [task for task in tasks if task["id"] in gone]
    if deleted:
        tasks_deleted.send(sender=type(store), store=store, tasks=deleted, moved_to=moved_to)
    return deleted


def delete_contexts(store: TaskStore, contexts: Sequence[Sequence[Task]]) -> list[Task]:
    """Delete each of ``contexts`` (every task of one conversation, as read) whole or not
    at all, decided at the moment of the delete (``TaskStore.delete_contexts``: a task
    created in the conversation since, or one resumed, keeps it whole), with what goes
    with the tasks, as :func:`delete_tasks` does. Returns the tasks deleted."""
    contexts = [tasks for tasks in contexts if tasks]
    if not contexts:
        return []
    deleted = store.delete_contexts(contexts)
    if deleted:
        tasks_deleted.send(sender=type(store), store=store, tasks=deleted)
    return deleted


def sweep(
    store: TaskStore,
    policy: Policy,
    *,
    now: dt.datetime | None = None,
    batch_size: int = 200,
    whole_contexts: bool = True,
    select: Callable[[Task], bool] | None = None,
    dry_run: bool = False,
    swept: Swept | None = None,
) -> Iterator[list[Task]]:
    """Delete the tasks of ``store`` that ``policy`` says have expired (and ``select``
    keeps), about ``batch_size`` at a time, yielding each batch deleted (a generator:
    the caller may pause between batches; nothing is held between them). With
    ``whole_contexts`` a context goes only when all its tasks have expired, all together,
    as the store finds it at the moment of the delete (:func:`delete_contexts`).
    ``dry_run``: yield what would be deleted, delete nothing. ``swept``: filled in as it goes."""
    now = now or dt.datetime.now(dt.UTC)
    swept = swept if swept is not None else Swept()
    contexts = _Contexts(store, policy, now) if whole_contexts else None
    batch: list[list[Task]] = []
    size = 0
    for state, age in policy.ages.items():
        for task in store.scan_older(state, now - age):
            if not policy.expired(task, now) or (select is not None and not select(task)):
                continue
            group = contexts.expired(task) if contexts is not None else [task]
            if group is None:
                swept.spared += 1
                continue
            if group:
                batch.append(group)
                size += len(group)
            if size >= batch_size:
                yield _delete(store, batch, dry_run, swept, whole_contexts)
                batch, size = [], 0
    if batch:
        yield _delete(store, batch, dry_run, swept, whole_contexts)


def _delete(store: TaskStore, batch: list[list[Task]], dry_run: bool, swept: Swept, whole: bool) -> list[Task]:
    read = tasks = [task for group in batch for task in group]
    if not dry_run:
        tasks = delete_contexts(store, batch) if whole else delete_tasks(store, tasks)
    swept.spared += len(read) - len(tasks)
    swept.add(tasks)
    return tasks


class _Contexts:
    """Whether each context of a sweep has expired as a whole (decided once per sweep)."""

    def __init__(self, store: TaskStore, policy: Policy, now: dt.datetime) -> None:
        self.store, self.policy, self.now = store, policy, now
        self.decided: set[tuple[str, str]] = set()

    def expired(self, task: Task) -> list[Task] | None:
        """Every task of ``task``'s context when all have expired ([] when its context
        was decided already: deleted with it, or kept); None when one has not."""
        context = task.get("contextId")
        if not isinstance(context, str) or not context:
            return [task]
        key = (task_scope(task), context)
        if key in self.decided:
            return []
        if len(self.decided) >= _MAX_CONTEXTS:
            self.decided.clear()
        self.decided.add(key)
        tasks: list[Task] = []
        for each in list_all(self.store, TaskQuery(context_id=context, owner=key[0], page_size=MAX_PAGE_SIZE)):
            if not self.policy.expired(each, self.now):
                return None
            tasks.append(each)
        return tasks or [task]


def set_kept(store: TaskStore, task_id: str, keep: bool = True) -> Task | None:
    """Keep the task (it never expires), or with ``keep=False`` let it expire again;
    the saved task, or None when there is none. Not a state change (nothing is
    published): a save of the next ``_version``, a compare-and-swap where the store
    can, so a transition saved meanwhile is never lost."""
    for _ in range(10):
        task = store.get(task_id)
        if task is None:
            return None
        if kept(task) == keep:
            return task
        if keep:
            task[KEEP] = True
        else:
            task.pop(KEEP, None)
        version = task_version(task)
        task[fields.VERSION] = version + 1
        try:
            if store.supports_compare_and_swap:
                return store.save(task, expected_version=version)
            return store.save(task)
        except StaleTaskError:
            continue
    raise StaleTaskError(task_id, 0, None)


__all__ = [
    "KEEP",
    "RETAINED_STATES",
    "Policy",
    "Swept",
    "delete_contexts",
    "delete_tasks",
    "kept",
    "parse_age",
    "set_kept",
    "sweep",
    "tasks_deleted",
]
