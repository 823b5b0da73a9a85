"""Operating on stored tasks, for the management commands and the admin: select by
state, context and age; cancel and fail stale tasks through :mod:`a2a.core.lifecycle` (so
a terminal state stays final and every listener hears it); export and import as JSON
lines; copy between stores."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from a2a.conf import a2a_settings
from a2a.core import leases
from a2a.core.lifecycle import is_terminal, transition_sync
from a2a.protocol.model import agent_message, set_status
from a2a.runtime import retention
from a2a.runtime.runner import get_runner
from stores.base import MAX_PAGE_SIZE, STATES, TERMINAL_STATES, Task, TaskQuery, TaskStore, list_all
from stores.fields import check_task, task_state, task_updated, task_updated_at, without_event_log
from stores.retention import Policy
from stores.retention import parse_age as parse_age  # where the commands and tests have it
from stores.scope import agent_name
from stores.timestamps import format_timestamp

#: States a task can be stale in: started or waiting to start, and not heard of since.
STALE_STATES = ("submitted", "working")


@dataclass(frozen=True)
class Selection:
    """Which tasks: any of ``states`` (all when empty), in ``context_id``, last updated
    before ``older_than`` ago and/or within ``newer_than``, of the agent named ``agent``
    (every agent's when None; the default agent's tasks are those without an ``_agent``)."""

    states: tuple[str, ...] = ()
    context_id: str | None = None
    older_than: dt.timedelta | None = None
    newer_than: dt.timedelta | None = None
    agent: str | None = None
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))

    def __post_init__(self) -> None:
        unknown = [s for s in self.states if s not in STATES]
        if unknown:
            raise ValueError(f"unknown state {unknown[0]!r}; expected one of {', '.join(STATES)}")

    def query(self) -> TaskQuery:
        return TaskQuery(
            context_id=self.context_id,
            state=self.states[0] if len(self.states) == 1 else None,
            updated_after=self.now - self.newer_than if self.newer_than else None,
            page_size=MAX_PAGE_SIZE,
            all_owners=True,  # staff tools see every caller's tasks, in every caller's contexts
        )

    def matches(self, task: Task) -> bool:
        if self.states and task_state(task) not in self.states:
            return False
        if self.context_id is not None and task.get("contextId") != self.context_id:
            return False
        if self.agent is not None and agent_name(task) != self.agent:
            return False
        if self.older_than is not None:
            when = task_updated_at(task)
            if when is None or when >= self.now - self.older_than:
                return False
        return True

    def select(self, store: TaskStore) -> Iterator[Task]:
        """Every matching task, newest-updated first, a page at a time."""
        return (task for task in list_all(store, self.query()) if self.matches(task))

    def estimate(self, store: TaskStore) -> int:
        """How many tasks the store's filters leave (an upper bound with an age or several states)."""
        return store.list(dataclasses.replace(self.query(), page_size=1)).total_size


# --- State changes through the lifecycle ---------------------------------------------------


def cancel(store: TaskStore, task_id: str, *, by: str = "") -> tuple[str, Task | None]:
    """Cancel a task that has not finished. Returns ("canceled", task), ("final", task)
    when it had already reached a terminal state (left as it is), or ("missing", None)."""

    def change(task: Task) -> Task | None:
        if is_terminal(task):
            return None
        note = agent_message(f"Canceled by {by}.", task=task) if by else None
        return set_status(task, "canceled", note)

    saved = transition_sync(store, task_id, change)
    if saved is not None:
        get_runner().cancel(task_id)  # stops the handler if it runs in this process
        return "canceled", saved
    current = store.get(task_id)
    return ("missing", None) if current is None else ("final", current)


def fail_stale(
    store: TaskStore, task_id: str, older_than: dt.timedelta, *, by: str = "", now: dt.datetime | None = None
) -> tuple[str, Task | None]:
    """Save a stale task (submitted or working, not updated for ``older_than``) as
    failed, saying so in its status message. Returns ("failed", task), ("fresh", task)
    when it is not stale (finished, waiting for input, or recently updated), or
    ("missing", None)."""

    cutoff = (now or dt.datetime.now(dt.UTC)) - older_than

    def change(task: Task) -> Task | None:
        when = task_updated_at(task)
        if task_state(task) not in STALE_STATES or (when is not None and when >= cutoff):
            return None
        if leases.lease_of(task) is not None and not leases.is_expired(task):
            return None  # its process is alive and renewing the lease: slow, not stale
        since = format_timestamp(when) if when else "an unknown time"
        text = f"No progress since {since}; marked failed as stale" + (f" by {by}." if by else ".")
        return set_status(task, "failed", agent_message(text, task=task))

    saved = transition_sync(store, task_id, change)
    if saved is not None:
        return "failed", saved
    current = store.get(task_id)
    return ("missing", None) if current is None else ("fresh", current)


# --- JSON lines --------------------------------------------------------------------------------


def to_json_line(task: Task) -> bytes:
    return orjson.dumps(without_event_log(task)) + b"\n"


@dataclass
class Problem:
    where: str
    error: str


def read_json_lines(lines: Iterable[bytes | str], source: str = "") -> Iterator[Task | Problem]:
    """Each non-blank line as a task, or a :class:`Problem` naming the line."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}" if source else f"line {number}"
        try:
            task = orjson.loads(line)
            check_task(task)
        except (orjson.JSONDecodeError, ValueError) as exc:
            yield Problem(where, str(exc))
            continue
        yield task


@dataclass
class Tally:
    """What a bulk operation did, for its summary line."""

    done: int = 0
    skipped: int = 0
    problems: list[Problem] = field(default_factory=list)

    def summary(self, verb: str, noun: str = "task") -> str:
        parts = [f"{verb} {self.done} {noun}{'' if self.done == 1 else 's'}"]
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if self.problems:
            parts.append(f"{len(self.problems)} failed")
        return ", ".join(parts)

    def put(self, store: TaskStore, task: Task, *, overwrite: bool) -> bool:
        """:func:`put`, counted: done when saved, skipped when the store has it already."""
        saved = put(store, task, overwrite=overwrite)
        if saved:
            self.done += 1
        else:
            self.skipped += 1
        return saved


def put(store: TaskStore, task: Task, *, overwrite: bool) -> bool:
    """Save ``task`` into ``store`` unless it holds that id already (and not ``overwrite``);
    True when saved. Copying is not a state change: nothing is published."""
    if not overwrite and store.get(task["id"]) is not None:
        return False
    store.save(task)
    return True


def terminal(task: Task) -> bool:
    return task_state(task) in TERMINAL_STATES


def describe(task: Task) -> dict[str, Any]:
    """The columns a listing shows."""
    return {
        "id": task["id"],
        "state": task_state(task),
        "context_id": task.get("contextId") or "",
        "updated": task_updated(task),
        "agent": agent_name(task),
    }


class AdminActions:
    """The admin's cancel and fail-stale actions (``stores.admin.TaskActions``)."""

    cancel = staticmethod(cancel)
    fail_stale = staticmethod(fail_stale)

    @staticmethod
    def stale_after() -> dt.timedelta:
        return dt.timedelta(seconds=a2a_settings.STALE_AFTER)

    @staticmethod
    def retention() -> Policy:
        """``A2A_RETENTION`` (an empty policy when it is not one: ``a2a.E130`` says why)."""
        try:
            return retention.policy()
        except ValueError:
            return Policy()
