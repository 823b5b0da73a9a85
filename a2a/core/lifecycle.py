"""Every state change of a Task happens here: a save through the store, then an event.

A change is a function from the stored task to its next version (or None for "no
change"); :func:`transition` runs it on the task as stored and saves the result
with a compare-and-swap on the task's ``_version`` (``store.save(task,
expected_version=...)``): when another thread *or process* saved a newer version
meanwhile, the store raises :class:`~stores.base.StaleTaskError` and the change runs
again on the newer version, so concurrent transitions (a cancel racing a completion,
two processes starting one task) never overwrite each other. A per-task lock in this
process keeps this process's own transitions from even colliding; a transition that
lost the race to another process :data:`HOLD_AFTER` times holds the task against
every writer (``store.locked``) for its next read and save.

Each saved version carries ``_version`` (1, 2, ...), which streams use to tell what
a snapshot already contains; each published one also numbers its stream events
(``_seq``) and keeps them in the task's bounded log, in the same save
(:mod:`a2a.core.replay`: resumable streams). The store stays the single source of truth: nothing here
keeps a copy.

The state machine (:data:`TRANSITIONS`) is enforced here for every change: a terminal
state is final, and a change that breaks the machine is refused (logged).

A save that raises may have happened all the same (a database that committed and
then lost the connection before replying; a file replaced before its directory's
fsync failed): the task is read again, and when it holds the version this transition
saved, the transition carries on as saved (:func:`_after_failed_save`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import json
import logging
import random
import threading
import time
import zlib
from collections.abc import Callable
from typing import ParamSpec, TypedDict, TypeVar, Unpack

from a2a.core import leases, replay, tracing
from a2a.core.events import TaskEvent, bus
from a2a.protocol import limits, timeline
from a2a.protocol.errors import InternalError
from a2a.protocol.model import Part, agent_message, set_status
from stores.base import STATES, TERMINAL_STATES, StaleTaskError, StoreError, Task, TaskStore
from stores.durability import not_an_acknowledgement
from stores.fields import CREATED, EVENT_SEQ, LEASE, REPLY, TIMELINE, VERSION, task_state, task_updated, task_version
from stores.timestamps import now_iso

logger = logging.getLogger(__name__)

Change = Callable[[Task], Task | None]
#: Builds the event for a saved version (default: a status update).
EventFor = Callable[[Task], TaskEvent]
P = ParamSpec("P")
R = TypeVar("R")

#: How many times a change is run against a newer version before giving up.
MAX_ATTEMPTS = 10
#: After this many lost races in a row, the next attempts hold the task against other
#: writers (``store.locked``): a writer saving every few milliseconds in another
#: process would otherwise win every race between this one's read and its save.
HOLD_AFTER = 2

_LOCKS = tuple(threading.Lock() for _ in range(64))

_INTERRUPTED = {"input-required", "auth-required"}
#: State -> the states it may move to (the A2A task lifecycle). Staying in a state
#: (progress, artifacts, lease renewals) is a transition too, except in a terminal one.
TRANSITIONS: dict[str, frozenset[str]] = {
    "submitted": frozenset({"submitted", "working", *TERMINAL_STATES}),
    # back to "submitted": re-queued after the process running it died (a2a.core.leases)
    "working": frozenset({"working", "submitted", *_INTERRUPTED, *TERMINAL_STATES}),
    # "submitted" again when the client answers (a continuation message)
    "input-required": frozenset({"submitted", "working", *_INTERRUPTED, *TERMINAL_STATES}),
    "auth-required": frozenset({"submitted", "working", *_INTERRUPTED, *TERMINAL_STATES}),
    "unknown": frozenset(STATES),
    **{state: frozenset() for state in TERMINAL_STATES},
}


def can_transition(current: str, new: str) -> bool:
    """Whether a task in state ``current`` may be saved in state ``new``."""
    return new in TRANSITIONS.get(current, TRANSITIONS["unknown"])


def is_terminal(task: Task) -> bool:
    return task_state(task) in TERMINAL_STATES


def _lock_for(task_id: str) -> threading.Lock:
    return _LOCKS[zlib.crc32(task_id.encode("utf-8", "surrogatepass")) % len(_LOCKS)]


def _compare_and_swap(cls: type[TaskStore]) -> bool:
    """Whether the store class's save (and asave) take ``expected_version``: its flag."""
    return cls.supports_compare_and_swap


def _save_failed(task_id: str, exc: StoreError) -> InternalError:
    """What a client is told when the store cannot save (disk full, read-only...)."""
    logger.error("could not save task %s: %s", task_id, exc, exc_info=exc.__cause__ is None)
    return InternalError(str(exc))


def _same(stored: Task, new: Task) -> bool:
    """Whether ``stored`` is ``new`` as a store gives it back (JSON: tuples are lists)."""
    if stored == new:
        return True
    try:
        return bool(json.loads(json.dumps(new)) == stored)
    except (TypeError, ValueError):
        return False


class SaveOutcome(enum.Enum):
    """What became of a save that raised (:func:`_after_failed_save`)."""

    #: The store holds the new version: the write happened, only its reply was lost.
    APPLIED = "applied"
    #: Another writer saved another version meanwhile: run the change again.
    MOVED = "moved"
    #: The task is still at the version the change was based on.
    NOT_APPLIED = "not applied"
    #: The task cannot be read.
    UNKNOWN = "unknown"


def _after_failed_save(store: TaskStore, new: Task, version: int) -> SaveOutcome:
    """What became of a save of ``new`` (based on ``version``) that raised."""
    try:
        stored = store.get(new["id"])
    except Exception:
        return SaveOutcome.UNKNOWN
    if stored is not None and task_version(stored) == new[VERSION] and _same(stored, new):
        return SaveOutcome.APPLIED
    return SaveOutcome.NOT_APPLIED if stored is not None and task_version(stored) == version else SaveOutcome.MOVED


class Saving(TypedDict, total=False):
    """How :func:`transition` saves (:func:`transition_sync` says what each means)."""

    publish: bool
    durable: bool


def transition_sync(
    store: TaskStore,
    task_id: str,
    change: Change,
    event: EventFor | None = None,
    *,
    publish: bool = True,
    durable: bool = True,
    beside: bool = False,
) -> Task | None:
    """Apply ``change`` to the stored task, save the result and publish it; return
    what was saved (None when the task is missing, ``change`` declined, or the state
    machine forbids the change). Blocking; callable from any thread.

    ``publish=False`` saves without telling anyone (lease renewals: nothing a client
    sees has changed); ``beside=True`` is for a change that notes something beside the
    task's life and keeps its state (the delegations' record, which follows a remote
    task after a local cancel): allowed in a terminal state too; ``durable=False`` lets
    the store commit the save lazily (lease renewals only:
    :func:`stores.durability.not_an_acknowledgement`). A store that cannot save raises
    ``InternalError`` with the reason (``could not save the task: No space left on
    device``); the stored task stays as it was."""
    cas = _compare_and_swap(type(store))
    version = 0
    for attempt in range(MAX_ATTEMPTS):
        with _lock_for(task_id):
            held = store.locked(task_id) if attempt >= HOLD_AFTER else contextlib.nullcontext()
            done = _attempt(
                store, task_id, change, held, event, beside=beside, publish=publish, cas=cas, durable=durable
            )
            if done.task is None or done.saved:
                if done.task is not None and done.told is not None:
                    bus.publish(done.task, done.told)
                return done.task
            version = task_version(done.task) - 1
        if not store.nonblocking:  # back off a little (never on an event loop)
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
    raise StaleTaskError(task_id, version, None)  # lost the race MAX_ATTEMPTS times in a row


@dataclasses.dataclass(frozen=True, slots=True)
class _Attempt:
    """What one attempt at a transition did: ``saved`` ``task`` (to publish as ``told``),
    lost the race with it (not ``saved``), or found nothing to save (``task`` is None)."""

    task: Task | None
    saved: bool = False
    told: TaskEvent | None = None


def _attempt(
    store: TaskStore,
    task_id: str,
    change: Change,
    held: contextlib.AbstractContextManager,
    event: EventFor | None,
    *,
    beside: bool,
    publish: bool,
    cas: bool,
    durable: bool,
) -> _Attempt:
    """Read the task, change it and save the change, all inside ``held`` (the store's
    ``locked`` once the transition lost several races, else nothing). A hold that ends
    in a failure (a commit the database lost) after the save returned is a save that
    raised: the store is read again to know whether it was done."""
    new, finished = None, False
    try:
        with held:
            found = _next_version(store, task_id, change, beside)
            if found is None:
                return _Attempt(None)
            new, before_artifacts = found
            told = None
            if publish:  # numbered, and kept in the task's log, in this very save
                told = event(new) if event else TaskEvent(new)
                told = dataclasses.replace(told, entries=replay.record(new, told, before_artifacts))
            saved = _save(store, new, cas=cas, durable=durable)
            finished = True
    except Exception as exc:
        if not finished or new is None:
            raise
        saved = _saved_all_the_same(store, new, exc)
    return _Attempt(new, saved, told)


def _next_version(store: TaskStore, task_id: str, change: Change, beside: bool = False) -> tuple[Task, list] | None:
    """``change`` applied to the task as stored, numbered as the version after it, and
    the stored version's artifacts (what its stream events are told against); None
    when the task is missing, ``change`` declined, or the state machine forbids it."""
    with tracing.store("get", task_id):
        task = store.get(task_id)
    if task is None:
        return None
    version = task_version(task)
    current = task_state(task)
    task.setdefault(TIMELINE, timeline.entries(task))  # an earlier release's task: its own, made once
    before_artifacts = list(task.get("artifacts") or ())  # (a change may replace them in place)
    new = change(task)
    if new is None:
        return None
    if not can_transition(current, task_state(new)) and not (beside and task_state(new) == current):
        logger.warning(
            "task %s: refused the change %s -> %s (%s)",
            task_id,
            current,
            task_state(new),
            "a terminal state is final" if current in TERMINAL_STATES else "not a valid transition",
        )
        return None
    new[VERSION] = version + 1
    return new, before_artifacts


def _save(store: TaskStore, new: Task, *, cas: bool, durable: bool) -> bool:
    """Save ``new`` over the version before it: True when it is saved, False when
    another writer saved a version meanwhile (the change runs again on that one). A
    save that raised may have happened all the same, so the store is read to know."""
    task_id, version = new["id"], task_version(new) - 1
    try:
        with tracing.store("save", task_id), contextlib.nullcontext() if durable else not_an_acknowledgement():
            if cas:
                store.save(new, expected_version=version)
            else:
                store.save(new)
    except StaleTaskError:
        return False
    except Exception as exc:
        return _saved_all_the_same(store, new, exc)
    return True


def _saved_all_the_same(store: TaskStore, new: Task, exc: Exception) -> bool:
    """After ``exc`` from a save of ``new``: True when the store holds it all the same,
    False when another writer saved another version meanwhile (the change runs again);
    else ``exc`` is raised (a :class:`StoreError` as the ``InternalError`` it means)."""
    task_id, version = new["id"], task_version(new) - 1
    outcome = _after_failed_save(store, new, version)
    if outcome not in (SaveOutcome.APPLIED, SaveOutcome.MOVED):
        if isinstance(exc, StoreError):
            raise _save_failed(task_id, exc) from exc
        raise exc
    saved = outcome is SaveOutcome.APPLIED
    logger.warning(
        "task %s: a save of version %d raised (%s), %s",
        task_id,
        version + 1,
        exc,
        "but it was done: carrying on" if saved else "and another version was saved meanwhile: again",
    )
    return saved


async def transition(
    store: TaskStore, task_id: str, change: Change, event: EventFor | None = None, **saving: Unpack[Saving]
) -> Task | None:
    """:func:`transition_sync` without blocking the event loop."""
    return await _off_loop(store, transition_sync, store, task_id, change, event, **saving)


def create_sync(store: TaskStore, task: Task, *, queued: bool = False, runs: int = 0) -> Task:
    """Save a new task (version 1, leased to this process, which is about to run it,
    or with ``queued`` to any worker of the queue: :func:`a2a.core.leases.new_lease`)
    and publish it. Never replaces a task that exists (StaleTaskError). ``_created``
    records when (the admin's dashboard measures the time to a final state from it).
    Blocking; callable from any thread (a handler's, for a direct reply's task)."""
    _first_version(task, queued=queued, runs=runs)
    try:
        with tracing.store("create", task["id"]):
            if _compare_and_swap(type(store)):
                store.save(task, expected_version=0)
            else:
                store.save(task)
    except StoreError as exc:
        raise _save_failed(task["id"], exc) from exc
    bus.publish(task, TaskEvent(task, kind="task"))
    return task


async def create(store: TaskStore, task: Task, *, queued: bool = False, runs: int = 0) -> Task:
    """:func:`create_sync` without blocking the event loop."""
    return await _off_loop(store, create_sync, store, task, queued=queued, runs=runs)


async def _off_loop(store: TaskStore, blocking: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``blocking(*args, **kwargs)`` on a thread, or here when ``store`` does not block."""
    if store.nonblocking:
        return blocking(*args, **kwargs)
    return await asyncio.to_thread(blocking, *args, **kwargs)


def _first_version(task: Task, *, queued: bool, runs: int) -> None:
    task[VERSION] = 1
    task[EVENT_SEQ] = 1  # the task as created: the first event of its streams
    task[TIMELINE] = timeline.created(task)
    task.setdefault(CREATED, task_updated(task) or now_iso())
    if task_state(task) in leases.LEASED_STATES:
        task[LEASE] = leases.new_lease(queued=queued, runs=runs)


def settle(
    state: str,
    *,
    artifacts: list | None = None,
    parts: list[Part] | None = None,
    in_history: bool = False,
    reply: bool = False,
    references: list[str] | None = None,
) -> Change:
    """The change that ends a run of the handler in ``state`` (terminal, or waiting
    for the client): with new ``artifacts``, and/or an agent message of ``parts`` as
    the status message (also kept in the history when ``in_history``, as questions
    and answers are), referring to the tasks ``references`` names (``referenceTaskIds``).
    The lease is released; a task already terminal (canceled
    meanwhile) or taken over by another process is left alone."""

    def change(task: Task) -> Task | None:
        if is_terminal(task) or leases.taken_over(task):
            return None
        leases.release(task)
        if artifacts:
            task["artifacts"] = [*(task.get("artifacts") or ()), *artifacts]
        message = agent_message(parts, task=task) if parts else None
        if message is not None and references:
            message["referenceTaskIds"] = list(references)
        if message is not None and in_history:
            task["history"] = [*(task.get("history") or ()), message]
            limits.keep_history(task)  # at most A2A_MAX_HISTORY messages: the oldest go
        if reply:
            task[REPLY] = True
        return set_status(task, state, message)

    return change
