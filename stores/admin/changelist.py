"""The change list of a store that is not the ORM one (memory, file, custom: no table
to hand to Django's ``ChangeList``), read through the store.

:class:`StoreChangeList` plays the part Django's ``ChangeList`` plays for the ORM
store's table: it reads the query string (``?q=``, the filters of
:mod:`stores.admin.filters`, ``?page_token=``), builds the filters, searches
(:func:`~stores.admin.search.search_store`), lists one page by cursor and builds the
rows; the page is ``admin/stores/task_list.html``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.admin.utils import quote
from django.http import HttpRequest
from django.urls import reverse

from stores.admin import search
from stores.admin.actions import retention_policy
from stores.admin.agents import split_search
from stores.admin.display import (
    context_html,
    expires_html,
    id_html,
    preview_html,
    relative_time,
    state_badge,
    task_when,
    updated_text,
)
from stores.admin.filters import TaskFilter
from stores.admin.source import store_label
from stores.base import MAX_PAGE_SIZE, Task, TaskPage, TaskStore
from stores.fields import task_state
from stores.models import TaskRecord
from stores.scope import agent_name, task_owner


class StoreChangeList:
    """One page of the task list of ``store`` for ``request``: ``?q=`` (a task id, else
    a context id, else words of the tasks' text; ``agent:<name>`` keeps one agent's), the filters of
    ``model_admin.list_filter``, ``?page_token=`` (cursor pagination). An unknown filter
    value or a page token from another list is shown as an error and ignored.

    Offers what Django's ``ChangeList`` does to its templates (``opts``, the filters'
    ``get_query_string``, ``has_active_filters``...), so the page is Django's own change
    list (``admin/change_list.html``) with only the search, rows and pages replaced."""

    #: Facet counts need a queryset (the ORM's change list has them; this one does not).
    add_facets = False
    is_facets_optional = False
    has_filters = True
    formset = None
    date_hierarchy = None

    def __init__(self, request: HttpRequest, model_admin: Any, store: TaskStore | None, errors: list[str]) -> None:
        self.model_admin = model_admin
        self.opts = model_admin.opts
        self.store = store
        self.errors = list(errors)
        self.query = request.GET.get("q", "").strip()
        self.token = request.GET.get("page_token", "")
        self.filter_specs = self._filters(request)
        #: The filters' values in use, by parameter: the state of the page its links keep.
        self.params = {spec.parameter_name: value for spec in self.filter_specs if (value := spec.value())}
        self.found = self._find() if store is not None else search.Found("", TaskPage(tasks=[]))
        self.policy = retention_policy()
        self.has_active_filters = bool(self.params)
        self.clear_all_filters_qs = self.get_query_string(remove=list(self.params))

    def _filters(self, request: HttpRequest) -> list[TaskFilter]:
        values = {name: request.GET.get(name, "").strip() for name in request.GET if name not in ("q", "page_token")}
        params = {name: [value] for name, value in values.items() if value}
        specs = [spec(request, params, TaskRecord, self.model_admin) for spec in self.model_admin.list_filter]
        self.errors += [error for spec in specs if (error := spec.refuse_unknown())]
        return specs

    def _keep(self, agent: str) -> search.Keep | None:
        """What the filters (and an ``agent:`` search) keep beyond their query; None: every task."""
        specs = [spec for spec in self.filter_specs if spec.value()]
        if not specs and not agent:
            return None
        return lambda task: all(spec.keeps(task) for spec in specs) and (not agent or agent_name(task) == agent)

    def _find(self) -> search.Found:
        assert self.store is not None
        query: dict[str, Any] = {}
        for spec in self.filter_specs:
            query.update(spec.task_query())
        size = min(self.model_admin.list_per_page, MAX_PAGE_SIZE)
        agent, term = split_search(self.query)
        keep = self._keep(agent)
        try:
            return search.search_store(self.store, term, query, self.token or None, size, keep)
        except ValueError:
            if not self.token:
                raise
        self.errors.append("That page token is not valid (it may be from another list): showing the first page.")
        self.token = ""
        return search.search_store(self.store, term, query, None, size, keep)

    def get_query_string(self, new_params: dict[str, Any] | None = None, remove: list[str] | None = None) -> str:
        """The link to this list with ``new_params`` set (None or "" drops one) and the
        parameters starting with a name of ``remove`` dropped; always the first page."""
        params: dict[str, Any] = {"q": self.query, **self.params}
        for prefix in remove or []:
            params = {name: value for name, value in params.items() if not name.startswith(prefix)}
        params.update(new_params or {})
        return "?" + urlencode({name: value for name, value in params.items() if value})

    def row(self, task: Task) -> dict[str, Any]:
        """What the list shows of ``task``."""
        opts = self.model_admin.opts
        context_id = task.get("contextId") or ""
        agent = agent_name(task)
        return {
            "id": task["id"],
            "id_html": id_html(task["id"]),
            "url": reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(task["id"])]),
            "state": task_state(task),
            "badge": state_badge(task_state(task)),
            "preview": preview_html(task),
            "agent": agent,
            "agent_url": self.get_query_string({"agent": agent}),
            "context_id": context_id,
            "context": context_html(context_id, self.get_query_string({"context": context_id}, remove=["q"])),
            "owner": task_owner(task),
            "updated": updated_text(task),
            "updated_ago": relative_time(task_when(task)),
            "expires": expires_html(task, self.policy),
        }

    def context(self) -> dict[str, Any]:
        """The template's context for this page."""
        page = self.found.page
        return {
            "cl": self,
            "store": self.store,
            "store_label": store_label(self.store) if self.store is not None else "",
            "rows": [self.row(task) for task in page.tasks],
            "total": page.total_size,
            "q": self.query,
            "mode": self.found.mode,
            "scanned": self.found.scanned,
            "scan_cut": self.found.cut,
            "scan_limit": search.SEARCH_SCAN_LIMIT,
            "errors": self.errors,
            "filter_params": self.params,
            "filter_specs": self.filter_specs,
            "search_help": search.SEARCH_HELP,
            "clear_url": self.get_query_string(remove=["q"]),
            "next_url": self.get_query_string({"page_token": page.next_page_token}) if page.next_page_token else "",
            "first_url": self.get_query_string() if self.token else "",
        }
