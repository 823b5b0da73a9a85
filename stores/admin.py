"""The Django admin for tasks, whichever store holds them.

Two admins are registered and exactly one shows, decided per request from the
configured store: with the ORM store, a read-only ``ModelAdmin`` on
:class:`~stores.models.TaskRecord`; with any other store (memory, file, custom), a
read-only admin on the table-less :class:`~stores.models.StoredTask` whose pages read
through :func:`~stores.resolve.get_task_store`.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from .base import MAX_PAGE_SIZE, STATES, Task, TaskPage, TaskQuery, TaskStore, parse_timestamp, task_state, task_updated
from .models import StoredTask, TaskRecord
from .orm import OrmTaskStore
from .resolve import get_task_store

SEARCH_HELP = "An exact task id, or a context id to list that context's tasks."


def _configured_store() -> TaskStore | None:
    """The configured store, or None when TASK_STORE is misconfigured (a system check reports it)."""
    try:
        return get_task_store()
    except ImproperlyConfigured:
        return None


def _orm_configured() -> bool:
    return isinstance(_configured_store(), OrmTaskStore)


# --- Rendering a task readably ------------------------------------------------------


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON (anything not JSON-ready shown by its ``str``)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def parts_text(parts: Any) -> str:
    """The readable text of a message's or artifact's parts: text as it is, data as
    JSON, a file as ``[file name (type)]``."""
    lines = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            lines.append(part["text"])
        elif "data" in part:
            lines.append(pretty_json(part["data"]))
        elif isinstance(part.get("file"), dict):
            file = part["file"]
            name = file.get("name") or file.get("uri") or "unnamed"
            lines.append(f"[file {name}" + (f" ({file['mimeType']})]" if file.get("mimeType") else "]"))
        else:
            lines.append(pretty_json(part))
    return "\n".join(lines)


def _entry(item: Any, *title_keys: str) -> dict[str, str]:
    item_dict = item if isinstance(item, dict) else {}
    title = " · ".join(str(item_dict[k]) for k in title_keys if item_dict.get(k))
    return {"title": title, "text": parts_text(item_dict.get("parts")), "json": pretty_json(item)}


def task_sections(task: Task) -> dict[str, Any]:
    """What the detail pages show of ``task``: its status message, artifacts and history
    as entries (a title, the parts' text, the item's JSON), and its metadata and whole
    self as pretty JSON."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    artifacts, history = task.get("artifacts"), task.get("history")
    message = status.get("message")
    return {
        "message": [_entry(message, "role", "messageId")] if message else [],
        "artifacts": [_entry(a, "name", "description", "artifactId") for a in artifacts or [] if a],
        "history": [_entry(m, "role", "messageId") for m in history or [] if m],
        "metadata": pretty_json(task["metadata"]) if task.get("metadata") else "",
        "task_json": pretty_json(task),
    }


def _render_entries(entries: list[dict[str, str]], empty: str = "None") -> SafeString:
    return mark_safe(render_to_string("admin/stores/task_entries.html", {"entries": entries, "empty": empty}))


def format_when(when: dt.datetime | None) -> str:
    """A time in the current time zone, to the millisecond (tasks change within a second)."""
    return timezone.localtime(when).isoformat(sep=" ", timespec="milliseconds") if when else "-"


def _updated(task: Task) -> str:
    """The task's status timestamp as :func:`format_when` shows it, else as it is."""
    try:
        return format_when(parse_timestamp(task_updated(task)))
    except ValueError:
        return task_updated(task) or "-"


# --- The ORM store: a read-only ModelAdmin ---------------------------------------------


class StateFilter(admin.SimpleListFilter):
    """Filter by task state, offering every A2A state (no DISTINCT query over the table)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(state, state) for state in STATES]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(state=self.value()) if self.value() else queryset


class _TaskChangeList(ChangeList):
    """The list page does not load the task JSON of each row."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        return super().get_queryset(request, exclude_parameters).defer("task")


@admin.register(TaskRecord)
class TaskRecordAdmin(admin.ModelAdmin):
    """Read-only admin of the ORM store's table, shown only while the ORM store is configured."""

    list_display = ("id", "state", "context_id", "updated")
    list_filter = (StateFilter,)
    search_fields = ("id", "context_id")  # matched exactly, see get_search_results
    search_help_text = SEARCH_HELP
    ordering = ("-updated_at", "-id")
    list_per_page = 50
    actions = None
    fields = (
        "id",
        "context_id",
        "state",
        "created",
        "updated",
        "status_message",
        "artifact_list",
        "message_history",
        "task_metadata",
        "task_json",
    )
    readonly_fields = fields

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _orm_configured() and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _orm_configured() and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        store = _configured_store()
        queryset = super().get_queryset(request)
        return queryset.using(store.using) if isinstance(store, OrmTaskStore) else queryset

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return _TaskChangeList

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        return (queryset.filter(Q(pk=term) | Q(context_id=term)) if term else queryset), False

    @staticmethod
    def _sections(obj: TaskRecord) -> dict[str, Any]:
        return task_sections(obj.task if isinstance(obj.task, dict) else {})

    @admin.display(description="Created", ordering="created_at")
    def created(self, obj: TaskRecord) -> str:
        return format_when(obj.created_at)

    @admin.display(description="Updated", ordering="updated_at")
    def updated(self, obj: TaskRecord) -> str:
        return format_when(obj.updated_at)

    @admin.display(description="Status message")
    def status_message(self, obj: TaskRecord) -> SafeString:
        return _render_entries(self._sections(obj)["message"])

    @admin.display(description="Artifacts")
    def artifact_list(self, obj: TaskRecord) -> SafeString:
        return _render_entries(self._sections(obj)["artifacts"])

    @admin.display(description="History")
    def message_history(self, obj: TaskRecord) -> SafeString:
        return _render_entries(self._sections(obj)["history"])

    @admin.display(description="Metadata")
    def task_metadata(self, obj: TaskRecord) -> str:
        metadata = self._sections(obj)["metadata"]
        return render_to_string("admin/stores/task_json.html", {"json": metadata, "open": True}) if metadata else "-"

    @admin.display(description="Task JSON")
    def task_json(self, obj: TaskRecord) -> str:
        return render_to_string("admin/stores/task_json.html", {"json": self._sections(obj)["task_json"]})


# --- Any other store: pages that read through the store ---------------------------------


@admin.register(StoredTask)
class StoredTaskAdmin(admin.ModelAdmin):
    """Read-only task pages for a store that is not the ORM one (memory, file, custom):
    a list (state filter, search by id or context, cursor pagination) and a detail page,
    both read through ``get_task_store()``; shown only while such a store is configured."""

    list_per_page = 50

    def has_module_permission(self, request: HttpRequest) -> bool:
        return not _orm_configured() and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not _orm_configured() and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list:
        """Only the list and the detail page (there is no table to add to or delete from)."""
        info = self.opts.app_label, self.opts.model_name
        return [
            path("", self.admin_site.admin_view(self.changelist_view), name="{}_{}_changelist".format(*info)),
            path(
                "<path:object_id>/change/",
                self.admin_site.admin_view(self.change_view),
                name="{}_{}_change".format(*info),
            ),
        ]

    def _context(self, request: HttpRequest, title: str, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": title,
            "has_view_permission": True,
            "changelist_url": reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"),
            **extra,
        }

    def _store_or_error(self) -> tuple[TaskStore | None, str]:
        try:
            return get_task_store(), ""
        except ImproperlyConfigured as exc:
            return None, f"The task store is misconfigured: {exc}"

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """One page of tasks: ``?state=``, ``?q=`` (a task id, else a context id), ``?page_token=``."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        q = request.GET.get("q", "").strip()
        state = request.GET.get("state", "")
        token = request.GET.get("page_token", "")
        store, error = self._store_or_error()
        errors = [error] if error else []
        if state and state not in STATES:
            errors.append(f"Unknown state “{state}”: showing tasks in every state.")
            state = ""
        page = TaskPage(tasks=[])
        found = store.get(q) if store is not None and q else None
        if found is not None:
            tasks = [found] if state in ("", task_state(found)) else []
            page = TaskPage(tasks=tasks, total_size=len(tasks))
        elif store is not None:
            size = min(self.list_per_page, MAX_PAGE_SIZE)
            query = {"context_id": q or None, "state": state or None, "page_size": size}
            try:
                page = store.list(TaskQuery(**query, page_token=token or None))
            except ValueError:
                if not token:
                    raise
                errors.append("That page token is not valid (it may be from another list): showing the first page.")
                token = ""
                page = store.list(TaskQuery(**query))

        def link(**params: str) -> str:
            return "?" + urlencode({k: v for k, v in params.items() if v})

        rows = [
            {
                "id": task["id"],
                "url": reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[quote(task["id"])]),
                "state": task_state(task),
                "context_id": task.get("contextId") or "",
                "updated": _updated(task),
            }
            for task in page.tasks
        ]
        filters = [{"label": "All", "url": link(q=q), "selected": not state}] + [
            {"label": s, "url": link(q=q, state=s), "selected": s == state} for s in STATES
        ]
        context = self._context(
            request,
            "Tasks",
            store=store,
            rows=rows,
            total=page.total_size,
            q=q,
            state=state,
            errors=errors,
            filters=filters,
            search_help=SEARCH_HELP,
            found_by_id=found is not None,
            next_url=link(q=q, state=state, page_token=page.next_page_token) if page.next_page_token else "",
            first_url=link(q=q, state=state) if token else "",
            **(extra_context or {}),
        )
        return TemplateResponse(request, "admin/stores/task_list.html", context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """One task, read-only; an unknown id redirects to the list with a message."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        task_id = unquote(object_id)
        store, error = self._store_or_error()
        task = store.get(task_id) if store is not None else None
        if task is None:
            self.message_user(
                request, error or f"Task with ID “{task_id}” does not exist. Perhaps it was deleted?", messages.WARNING
            )
            return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))
        context = self._context(
            request,
            "View task",
            subtitle=task_id,
            task_id=task_id,
            context_id=task.get("contextId") or "",
            state=task_state(task),
            updated=_updated(task),
            sections=task_sections(task),
            store=store,
            **(extra_context or {}),
        )
        return TemplateResponse(request, "admin/stores/task_detail.html", context)
