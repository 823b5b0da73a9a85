"""The task admin's ``ModelAdmin`` (:class:`TaskRecordAdmin`): one task list at one
URL for every store, its detail page and its dashboard; and :class:`StoredTaskAdmin`,
which redirects a URL of the table-less :class:`~stores.models.StoredTask` to it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from stores.admin import dashboard
from stores.admin.actions import TaskActionsMixin, retention_policy
from stores.admin.agents import agent_of_scope, orm_agent_condition, split_search
from stores.admin.changelist import StoreChangeList
from stores.admin.detail import TaskDetailMixin
from stores.admin.display import (
    context_html,
    expires_html,
    format_when,
    id_html,
    preview_html,
    relative_time,
    render_entries,
    state_badge,
    task_sections,
)
from stores.admin.filters import TASK_FILTERS
from stores.admin.search import SEARCH_HELP, orm_text_search
from stores.admin.source import configured_store, orm_configured, store_label, store_or_error
from stores.models import TaskRecord
from stores.orm import OrmTaskStore


class TaskRecordAdmin(TaskActionsMixin, TaskDetailMixin, admin.ModelAdmin):
    """The task admin, for every store, at one URL (``admin/stores/taskrecord/``) under
    one title ("Tasks"). With the ORM store, a read-only ``ModelAdmin`` on the table
    (Django's change list: search in the database, page numbers, sortable columns); with
    any other store (memory, file, custom), the same list read through the store
    (:class:`~stores.admin.changelist.StoreChangeList`: cursor pagination, a bounded
    scan for text search). Both have the preview column, the filters of
    :mod:`stores.admin.filters`, the actions of :mod:`stores.admin.actions`, the shared
    detail page and the dashboard (:meth:`dashboard_view`).

    Permissions are the ``stores.TaskRecord`` ones for every store ("Can view task" to
    see; ``stores.view_storedtask`` still lets its holders see the list of a store
    that is not the ORM one).
    """

    list_display = ("task_id", "state_badge", "preview", "agent", "context_link", "updated", "expires")
    list_filter = TASK_FILTERS
    search_fields = ("id",)  # shows the search box; the search is get_search_results
    search_help_text = SEARCH_HELP
    ordering = ("-updated_at", "-id")
    list_per_page = 50
    actions = ("cancel_tasks", "fail_stale_tasks", "delete_tasks", "keep_tasks", "release_tasks", "export_tasks")
    change_list_template = "admin/stores/taskrecord_change_list.html"
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

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if super().has_view_permission(request, obj):
            return True
        return not orm_configured() and request.user.has_perm("stores.view_storedtask")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) and self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        store = configured_store()
        queryset = super().get_queryset(request)
        return queryset.using(store.using) if isinstance(store, OrmTaskStore) else queryset

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        """An exact task id or context id, or the words of the task's text
        (:func:`~stores.admin.search.orm_text_search`); an ``agent:<name>`` word keeps
        that agent's tasks."""
        agent, term = split_search(search_term.strip())
        if agent:
            queryset = queryset.filter(orm_agent_condition(agent))
        if not term:
            return queryset, False
        return queryset.filter(Q(pk=term) | Q(context_id=term) | orm_text_search(queryset, term)), False

    def _urls(self) -> dict[str, str]:
        info = self.opts.app_label, self.opts.model_name
        return {
            "changelist_url": reverse("admin:{}_{}_changelist".format(*info)),
            "dashboard_url": reverse("admin:{}_{}_dashboard".format(*info)),
        }

    def _page(self, request: HttpRequest, title: str, **context: Any) -> dict[str, Any]:
        """The context every page of this admin starts from."""
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": title,
            "has_view_permission": True,
            "media": self.media,
            **self._urls(),
            **context,
        }

    def get_urls(self) -> list:
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "dashboard/",
                self.admin_site.admin_view(self.dashboard_view),
                name="{}_{}_dashboard".format(*info),
            ),
            path(
                "<path:object_id>/download/<str:section>/<int:item>/<int:part>/",
                self.admin_site.admin_view(self.download_view),
                name="{}_{}_download".format(*info),
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The list of tasks: Django's change list on the ORM store's table, else the
        store-backed one (:meth:`store_changelist_view`); same title, columns and filters."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if not orm_configured():
            return self.store_changelist_view(request, extra_context)
        context = {"title": "Tasks", "store": configured_store(), **self._urls(), **(extra_context or {})}
        return super().changelist_view(request, context)

    def store_changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The list of a store that is not the ORM one (:class:`StoreChangeList`); POST runs an action."""
        if request.method == "POST":
            return self.post_action(request)
        store, error = store_or_error()
        changelist = StoreChangeList(request, self, store, [error] if error else [])
        context = self._page(
            request,
            "Tasks",
            **changelist.context(),
            action_choices=self.action_choices(request),
            **(extra_context or {}),
        )
        return TemplateResponse(request, "admin/stores/task_list.html", context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The shared, read-only detail page (the conversation and artifacts as a person reads them)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return self.detail_response(request, unquote(object_id), extra_context)

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """Pictures of the tasks (:mod:`stores.admin.dashboard`): per state, created per
        day, time to a final state (p50/p95) per day, and why tasks failed."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        store, error = store_or_error()
        stats = dashboard.collect(store) if store is not None else None
        context = self._page(
            request,
            "Task dashboard",
            original="Dashboard",  # the breadcrumbs' last step (admin/change_form.html's)
            store=store,
            store_label=store_label(store) if store is not None else "",
            orm=isinstance(store, OrmTaskStore),
            errors=[error] if error else [],
            stats=stats,
            total=sum(stats.per_state.values()) if stats else 0,
            charts=dashboard.charts(stats) if stats else {},
            scan_limit=dashboard.SCAN_LIMIT,
            days=dashboard.DAYS,
        )
        return TemplateResponse(request, "admin/stores/task_dashboard.html", context)

    # --- The ORM change list's columns and read-only fields -----------------------------------

    @admin.display(description="Id", ordering="id")
    def task_id(self, obj: TaskRecord) -> SafeString:
        return id_html(obj.id)

    @admin.display(description="State", ordering="state")
    def state_badge(self, obj: TaskRecord) -> SafeString:
        return state_badge(obj.state)

    @admin.display(description="Preview")
    def preview(self, obj: TaskRecord) -> SafeString:
        return preview_html(obj.task if isinstance(obj.task, dict) else {})

    @admin.display(description="Agent")
    def agent(self, obj: TaskRecord) -> SafeString:
        name = agent_of_scope(obj.owner)
        return format_html('<a href="?{}" title="Only this agent\'s tasks">{}</a>', urlencode({"agent": name}), name)

    @admin.display(description="Context", ordering="context_id")
    def context_link(self, obj: TaskRecord) -> SafeString:
        return context_html(obj.context_id, "?" + urlencode({"context": obj.context_id}))

    @staticmethod
    def _sections(obj: TaskRecord) -> dict[str, Any]:
        return task_sections(obj.task if isinstance(obj.task, dict) else {})

    @admin.display(description="Created", ordering="created_at")
    def created(self, obj: TaskRecord) -> str:
        return format_when(obj.created_at)

    @admin.display(description="Updated", ordering="updated_at")
    def updated(self, obj: TaskRecord) -> SafeString:
        return relative_time(obj.updated_at)

    @admin.display(description="Expires")
    def expires(self, obj: TaskRecord) -> SafeString:
        return expires_html(obj.task if isinstance(obj.task, dict) else {}, retention_policy())

    @admin.display(description="Status message")
    def status_message(self, obj: TaskRecord) -> SafeString:
        return render_entries(self._sections(obj)["message"])

    @admin.display(description="Artifacts")
    def artifact_list(self, obj: TaskRecord) -> SafeString:
        return render_entries(self._sections(obj)["artifacts"])

    @admin.display(description="History")
    def message_history(self, obj: TaskRecord) -> SafeString:
        return render_entries(self._sections(obj)["history"])

    @admin.display(description="Metadata")
    def task_metadata(self, obj: TaskRecord) -> str:
        metadata = self._sections(obj)["metadata"]
        return render_to_string("admin/stores/task_json.html", {"json": metadata, "open": True}) if metadata else "-"

    @admin.display(description="Task JSON")
    def task_json(self, obj: TaskRecord) -> str:
        return render_to_string("admin/stores/task_json.html", {"json": self._sections(obj)["task_json"]})


class StoredTaskAdmin(admin.ModelAdmin):
    """``admin/stores/storedtask/...`` redirects (with the query string) to the one task
    list, ``admin/stores/taskrecord/...`` (:class:`TaskRecordAdmin`), which serves every
    store. Not shown on the index."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return False

    def get_urls(self) -> list:
        return [path("", self.redirect), path("<path:rest>", self.redirect)]

    @staticmethod
    def redirect(request: HttpRequest, rest: str = "") -> HttpResponse:
        target = reverse("admin:stores_taskrecord_changelist") + rest
        query = request.META.get("QUERY_STRING", "")
        return HttpResponseRedirect(target + ("?" + query if query else ""))
