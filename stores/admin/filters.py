"""The filters of the task list (state, updated, context, owner, agent), one set for both of
its paths. Each is a Django ``SimpleListFilter``: its choices (``lookups``) and links
(``choices``) are the same on Django's change list of the ORM store's table and on the
change list of any other store (:class:`~stores.admin.changelist.StoreChangeList`);
``queryset`` narrows the table, :meth:`TaskFilter.task_query` the ``TaskQuery`` the
other stores are listed with, and :meth:`TaskFilter.keeps` what no ``TaskQuery`` field
selects (the agent), read from each listed task.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from stores.admin.agents import agent_of_scope, orm_agent_condition
from stores.admin.display import short_id
from stores.admin.source import configured_store
from stores.base import MAX_PAGE_SIZE, STATES, Task, TaskQuery
from stores.orm import OrmTaskStore
from stores.scope import AGENT_SEPARATOR, SCOPE_SEPARATOR, agent_name, task_owner

#: The "updated" filter: value -> (label, how recent; None: since midnight, local time).
UPDATED_CHOICES: dict[str, tuple[str, dt.timedelta | None]] = {
    "1h": ("Past hour", dt.timedelta(hours=1)),
    "today": ("Today", None),
    "24h": ("Past 24 hours", dt.timedelta(days=1)),
    "7d": ("Past 7 days", dt.timedelta(days=7)),
    "30d": ("Past 30 days", dt.timedelta(days=30)),
}


def updated_since(choice: str) -> dt.datetime | None:
    """The moment the "updated" filter ``choice`` starts at (None for no or an unknown choice)."""
    if choice not in UPDATED_CHOICES:
        return None
    recent = UPDATED_CHOICES[choice][1]
    now = timezone.now()
    if recent is None:
        return timezone.make_aware(dt.datetime.combine(timezone.localdate(now), dt.time.min))
    return now - recent


class TaskFilter(admin.SimpleListFilter):
    """A filter of the task list. ``all_label`` names the choice that filters nothing;
    ``unknown`` (a message with ``{}`` for the value), when set, makes a value outside
    the choices one the store-backed list refuses (:meth:`refuse_unknown`)."""

    parameter_name: str
    all_label = "All"
    unknown = ""

    def task_query(self) -> dict[str, Any]:
        """The ``TaskQuery`` fields this filter's value selects on a store that is not the ORM one."""
        raise NotImplementedError

    def keeps(self, task: Task) -> bool:
        """Whether this filter's value keeps ``task`` on a store that is not the ORM one,
        beyond :meth:`task_query` (True unless a filter selects what a query cannot)."""
        return True

    def refuse_unknown(self) -> str:
        """Drop a value outside the choices and say so (the list then shows every task);
        "" when the value is fine."""
        value = self.value()
        if not self.unknown or not value or value in {str(choice) for choice, _ in self.lookup_choices}:
            return ""
        del self.used_parameters[self.parameter_name]
        return self.unknown.format(value)

    def choices(self, changelist: Any) -> Iterator[Any]:
        choices = super().choices(changelist)
        yield {**next(choices), "display": self.all_label}
        yield from choices


class StateFilter(TaskFilter):
    """Filter by task state, offering every A2A state (no DISTINCT query over the table)."""

    title = "state"
    parameter_name = "state"
    unknown = "Unknown state “{}”: showing tasks in every state."

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state, state) for state in STATES]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(state=self.value()) if self.value() else queryset

    def task_query(self) -> dict[str, Any]:
        return {"state": self.value()} if self.value() else {}


class UpdatedFilter(TaskFilter):
    """Filter by when the task last changed (past hour, today, past day, week, month)."""

    title = "updated"
    parameter_name = "updated"
    all_label = "Any date"
    unknown = "Unknown time filter “{}”: showing tasks of any time."

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, label) for value, (label, _) in UPDATED_CHOICES.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        since = updated_since(self.value() or "")
        return queryset.filter(updated_at__gt=since) if since else queryset

    def task_query(self) -> dict[str, Any]:
        since = updated_since(self.value() or "")
        return {"updated_after": since} if since else {}


class RecentValuesFilter(TaskFilter):
    """Filter by a field, offering its values among the most recently updated tasks (no
    DISTINCT over the table; on another store, one page of its newest tasks), and the
    chosen one. ``field`` is the column of the table, :meth:`task_value` reads it from a task."""

    field = ""
    RECENT = 10
    #: How many of the newest tasks' values are read to find :attr:`RECENT` distinct ones.
    READ = 500

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        chosen = self.value()
        values = list(dict.fromkeys(v for v in self.recent_values(request, model_admin) if v))[: self.RECENT]
        if chosen and chosen not in values:
            values.insert(0, chosen)
        return [(v, self.label(v)) for v in values]

    def label(self, value: str) -> str:
        """How the filter shows ``value``."""
        return value if len(value) <= 40 else value[:39] + "…"

    def recent_values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        """The field's values of the newest tasks, newest first (with repeats)."""
        store = configured_store()
        if isinstance(store, OrmTaskStore):
            recent = model_admin.get_queryset(request).exclude(**{self.field: ""}).order_by("-updated_at", "-id")
            return list(recent.values_list(self.field, flat=True)[: self.READ])
        if store is None:
            return []
        return [self.task_value(task) for task in store.list(TaskQuery(all_owners=True, page_size=MAX_PAGE_SIZE)).tasks]

    def task_value(self, task: Task) -> str:
        """The value of :attr:`field` in ``task`` (on a store that is not the ORM one)."""
        raise NotImplementedError

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(**{self.field: self.value()}) if self.value() else queryset


class ContextFilter(RecentValuesFilter):
    """Filter by context: the contexts of the five most recently updated tasks, and the
    chosen one, by their short ids (the whole id as the tooltip); the search box finds
    any other (a context id lists its tasks)."""

    title = "context"
    parameter_name = "context"
    field = "context_id"
    RECENT = 5
    template = "admin/stores/context_filter.html"

    def label(self, value: str) -> str:
        return short_id(value)

    def choices(self, changelist: Any) -> Iterator[Any]:
        values = ["", *(value for value, _ in self.lookup_choices)]
        for value, choice in zip(values, super().choices(changelist), strict=True):
            yield {**choice, "title": value}

    def task_value(self, task: Task) -> str:
        return task.get("contextId") or ""

    def task_query(self) -> dict[str, Any]:
        return {"context_id": self.value()} if self.value() else {}


def owner_of_scope(scope: str) -> str:
    """The caller in a scope key (:func:`stores.scope.scope_key`): after the agent and the tenant."""
    _, agent, key = scope.partition(AGENT_SEPARATOR)
    _, tenant, owner = (key if agent else scope).partition(SCOPE_SEPARATOR)
    return owner if tenant else (key if agent else scope)


class OwnerFilter(RecentValuesFilter):
    """Filter by owner (the caller a task belongs to, in any agent and tenant): the owners
    of the most recently updated tasks."""

    title = "owner"
    parameter_name = "owner"
    field = "owner"

    def recent_values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        # The column holds the scope key: the caller comes after the agent and the tenant.
        return [owner_of_scope(scope) for scope in super().recent_values(request, model_admin)]

    def task_value(self, task: Task) -> str:
        return task_owner(task)

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        # The column is the scope key: the caller, after a tenant or an agent when there is one.
        owner = self.value()
        if not owner:
            return queryset
        return queryset.filter(
            Q(owner=owner) | Q(owner__endswith=SCOPE_SEPARATOR + owner) | Q(owner__endswith=AGENT_SEPARATOR + owner)
        )

    def task_query(self) -> dict[str, Any]:
        # Staff see every caller's tasks, in every caller's contexts. A chosen caller's tasks
        # have as many scope keys as agents and tenants: the list reads them (keeps).
        return {"all_owners": True}

    def keeps(self, task: Task) -> bool:
        return not self.value() or task_owner(task) == self.value()


class AgentFilter(RecentValuesFilter):
    """Filter by agent (which of the project's agents a task belongs to, "default" for
    the single-agent settings'): the agents of the most recently updated tasks. A store
    other than the ORM one has no query by agent: the list reads its tasks and keeps
    the agent's (bounded as a text search is, :data:`~stores.admin.search.SEARCH_SCAN_LIMIT`)."""

    title = "agent"
    parameter_name = "agent"
    field = "owner"

    def recent_values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        store = configured_store()
        if isinstance(store, OrmTaskStore):
            recent = model_admin.get_queryset(request).order_by("-updated_at", "-id")
            return [agent_of_scope(scope) for scope in recent.values_list("owner", flat=True)[: self.READ]]
        return super().recent_values(request, model_admin)

    def task_value(self, task: Task) -> str:
        return agent_name(task)

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        agent = self.value()
        return queryset.filter(orm_agent_condition(agent)) if agent else queryset

    def task_query(self) -> dict[str, Any]:
        return {}

    def keeps(self, task: Task) -> bool:
        return not self.value() or agent_name(task) == self.value()


#: The task list's filters, in the order the page shows them.
TASK_FILTERS: tuple[type[TaskFilter], ...] = (StateFilter, UpdatedFilter, ContextFilter, OwnerFilter, AgentFilter)
