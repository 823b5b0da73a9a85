"""The Django admin for tasks, whichever store holds them.

Two admins are registered and exactly one shows, decided per request from the
configured store: with the ORM store, a read-only ``ModelAdmin`` on
:class:`~stores.models.TaskRecord`; with any other store (memory, file, custom), a
read-only admin on the table-less :class:`~stores.models.StoredTask` whose pages read
through :func:`~stores.backends.get_task_store`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any, Protocol
from urllib.parse import urlencode

import orjson
from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.admin.utils import quote, unquote
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db import connections
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import content_disposition_header, url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.timesince import timesince

from stores import dashboard
from stores.backends import get_task_store
from stores.base import (
    MAX_PAGE_SIZE,
    STATES,
    Task,
    TaskPage,
    TaskQuery,
    TaskStore,
    encode_cursor,
    parse_timestamp,
    task_owner,
    task_state,
    task_updated,
)
from stores.models import StoredTask, TaskRecord
from stores.orm import OrmTaskStore

SEARCH_HELP = (
    "Words of the tasks' messages and artifacts (a task must hold them all), "
    "or an exact task id, or a context id to list that context's tasks."
)
#: On a store that is not the ORM one, a text search reads at most this many tasks (the
#: most recently updated that pass the filters) to fill one page of results; the next
#: page goes on from there. The ORM store searches in the database instead.
SEARCH_SCAN_LIMIT = 2000
#: A word of a search: a run of letters and digits.
WORD = re.compile(r"[^\W_]+")
logger = logging.getLogger(__name__)


class TaskActions(Protocol):
    """The state changes the admin's actions make. They go through the A2A task
    lifecycle (a terminal state stays final, listeners hear them), which lives in the
    ``a2a`` app above this one: ``a2a`` registers its implementation when it is ready
    (:func:`register_task_actions`)."""

    def cancel(self, store: TaskStore, task_id: str, *, by: str = "") -> tuple[str, Task | None]: ...

    def fail_stale(
        self, store: TaskStore, task_id: str, older_than: dt.timedelta, *, by: str = ""
    ) -> tuple[str, Task | None]: ...

    def stale_after(self) -> dt.timedelta: ...


_task_actions: TaskActions | None = None


def register_task_actions(actions: TaskActions) -> None:
    """Give the admin the state changes its cancel and fail-stale actions make."""
    global _task_actions
    _task_actions = actions


def task_actions() -> TaskActions:
    if _task_actions is None:
        raise ImproperlyConfigured('The task admin\'s actions need the "a2a" app in INSTALLED_APPS.')
    return _task_actions


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


#: Builds the URL that downloads an inline (base64) file part: (section, item, part) -> URL.
DownloadURL = Callable[[str, int, int], str]


def render_part(part: Any, download: str = "") -> dict[str, Any]:
    """One part as the detail page shows it: ``{"kind": "text", "text"}``, ``{"kind":
    "data", "json"}`` or ``{"kind": "file", "name", "mime", "href", "size"}``. Only
    http(s) URIs become links; inline bytes link to ``download``."""
    if not isinstance(part, dict):
        return {"kind": "other", "json": pretty_json(part)}
    if isinstance(part.get("text"), str):
        return {"kind": "text", "text": part["text"]}
    if "data" in part:
        return {"kind": "data", "json": pretty_json(part["data"])}
    file = part.get("file")
    if isinstance(file, dict):
        uri: str = file["uri"] if isinstance(file.get("uri"), str) else ""
        inline = isinstance(file.get("bytes"), str)
        href = uri if uri.lower().startswith(("http://", "https://")) else (download if inline else "")
        return {
            "kind": "file",
            "name": file.get("name") or (uri.rsplit("/", 1)[-1] if uri else "") or "file",
            "mime": file.get("mimeType") or "",
            "href": href,
            "uri": uri,
            "size": len(file["bytes"]) * 3 // 4 if inline else None,
        }
    return {"kind": "other", "json": pretty_json(part)}


def _entry(item: Any, *title_keys: str, download: Callable[[int], str] | None = None) -> dict[str, Any]:
    item_dict = item if isinstance(item, dict) else {}
    title = " · ".join(str(item_dict[k]) for k in title_keys if item_dict.get(k))
    parts: list[Any] = item_dict["parts"] if isinstance(item_dict.get("parts"), list) else []
    return {
        "title": title,
        "role": item_dict.get("role") if item_dict.get("role") in ("user", "agent") else "",
        "name": item_dict.get("name") or "",
        "description": item_dict.get("description") or "",
        "text": parts_text(parts),
        "parts": [render_part(p, download(j) if download else "") for j, p in enumerate(parts)],
        "json": pretty_json(item),
    }


def task_sections(task: Task, download: DownloadURL | None = None) -> dict[str, Any]:
    """What the detail pages show of ``task``: its status message, artifacts and history
    as entries (a title, the role, the parts rendered one by one, the item's JSON), and
    its metadata and whole self as pretty JSON. ``download`` makes the links of inline
    file parts."""
    status: dict[str, Any] = task["status"] if isinstance(task.get("status"), dict) else {}
    artifacts, history = task.get("artifacts"), task.get("history")
    message = status.get("message")

    def links(section: str, i: int) -> Callable[[int], str] | None:
        return (lambda j: download(section, i, j)) if download else None

    return {
        "message": [_entry(message, "role", "messageId", download=links("status", 0))] if message else [],
        "artifacts": [
            _entry(a, "name", "description", "artifactId", download=links("artifacts", i))
            for i, a in enumerate(artifacts or [])
            if a
        ],
        "history": [
            _entry(m, "role", "messageId", download=links("history", i)) for i, m in enumerate(history or []) if m
        ],
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


def state_badge(state: str) -> SafeString:
    """The state as a coloured badge (colours in admin/stores/task_styles.html)."""
    return format_html(
        '<span class="task-state task-state-{}">{}</span>', state if state in STATES else "unknown", state
    )


def relative_time(when: dt.datetime | None) -> SafeString:
    """``3 hours ago``, with the exact time as a tooltip and machine-readable attribute."""
    if when is None:
        return mark_safe("-")
    seconds = (timezone.now() - when).total_seconds()
    if seconds < 60:
        text = "just now" if seconds < 5 else f"{int(seconds)} seconds ago"
    else:
        text = f"{timesince(when, depth=1)} ago"
    return format_html('<time datetime="{}" title="{}">{}</time>', when.isoformat(), format_when(when), text)


def _when(task: Task) -> dt.datetime | None:
    try:
        return parse_timestamp(task_updated(task))
    except ValueError:
        return None


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


# --- Finding tasks: previews and text search ---------------------------------------------------


def _texts(value: Any) -> Iterator[str]:
    """Every string under a ``text`` key anywhere in ``value`` (the text parts of its
    messages and artifacts), as PostgreSQL's ``$.**.text`` and SQLite's ``json_tree``
    see them. Iterative: a deeply nested document cannot exhaust the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                if key == "text" and isinstance(child, str):
                    stack.append(_Text(child))
                elif isinstance(child, dict | list):
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, _Text):
            yield str(item)


class _Text(str):
    """A string found under a ``text`` key (told apart from strings in lists on the stack)."""


def task_text(task: Task) -> str:
    """The searchable text of a task, one value per line: every string under a ``text``
    key (the text parts of its messages and artifacts), on every store alike."""
    return "\n".join(_texts(task))


def search_words(term: str) -> list[str]:
    """The words of a search, case-folded: the runs of letters and digits (as on
    PostgreSQL, so punctuation never matters); a task matches when its text holds each."""
    return WORD.findall(term.casefold())


def text_matches(task: Task, words: list[str]) -> bool:
    text = task_text(task).casefold()
    return all(word in text for word in words)


def _message_text(message: Any) -> str:
    return parts_text(message.get("parts")) if isinstance(message, dict) else ""


def task_preview(task: Task, size: int = 80) -> dict[str, Any]:
    """What the list shows of a task: its first user message and last agent text
    (both cut to ``size`` characters, the whole as a tooltip) and how many artifacts it has."""
    history = [m for m in task.get("history") or [] if isinstance(m, dict)]
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    messages = [*history, status.get("message")] if isinstance(status, dict) else history
    asks = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    answers = [_message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "agent"]
    ask = next((t for t in asks if t.strip()), "")
    answer = next((t for t in reversed(answers) if t.strip()), "")
    artifacts = task.get("artifacts")

    def cut(text: str) -> str:
        return Truncator(" ".join(text.split())).chars(size)

    return {
        "ask": cut(ask),
        "ask_full": ask[:2000],
        "answer": cut(answer),
        "answer_full": answer[:2000],
        "artifacts": len(artifacts) if isinstance(artifacts, list) else 0,
    }


def preview_html(task: Task) -> SafeString:
    return mark_safe(render_to_string("admin/stores/task_preview.html", task_preview(task)))


#: The ORM store's full-text document on PostgreSQL: the ``text`` values of the task
#: (``$.**.text``), as words of the ``simple`` configuration (no stemming, any language).
#: Migration 0004 builds a GIN index on exactly this expression (``FTS_INDEX``).
FTS_DOCUMENT = "to_tsvector('simple'::regconfig, jsonb_path_query_array({task}, 'lax $.**.text'::jsonpath))"
FTS_INDEX = "stores_task_text_fts_idx"


def orm_text_search(queryset: QuerySet, term: str) -> Q:
    """The condition "the task's text holds every word of ``term``" on the database of
    ``queryset``: PostgreSQL's full-text search on the indexed :data:`FTS_DOCUMENT`
    (each word a prefix: "weath" finds "weather"); on SQLite, a case-insensitive
    ``LIKE`` (as ``icontains``) on each ``text`` value of the JSON (``json_tree``);
    elsewhere ``icontains`` on the JSON document."""
    vendor = connections[queryset.db].vendor
    table = connections[queryset.db].ops.quote_name(TaskRecord._meta.db_table)
    column = f"{table}.{connections[queryset.db].ops.quote_name('task')}"
    if vendor == "postgresql":
        words = WORD.findall(term)  # letters and digits: nothing tsquery reads as syntax
        if not words:
            return Q(pk__in=[])
        tsquery = " & ".join(f"{word}:*" for word in words)
        sql = FTS_DOCUMENT.format(task=column) + " @@ to_tsquery('simple'::regconfig, %s)"
        return Q(RawSQL(sql, [tsquery], output_field=BooleanField()))
    words = search_words(term)
    if not words:
        return Q(pk__in=[])
    condition = Q()
    for word in words:
        if vendor == "sqlite":
            pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            sql = (
                f"EXISTS (SELECT 1 FROM json_tree({column}) AS node WHERE node.key = 'text' "
                "AND node.type = 'text' AND node.value LIKE %s ESCAPE '\\')"
            )
            condition &= Q(RawSQL(sql, [pattern], output_field=BooleanField()))
        else:
            condition &= Q(task__icontains=word)
    return condition


# --- What both admins share: actions, downloads, the detail page ---------------------------


class TaskAdminMixin:
    """Actions (cancel, fail stale, delete, export), inline file downloads and the
    detail page, for both task admins. State changes go through ``a2a.core.lifecycle`` (via
    ``a2a.ops.bulk``), so a terminal state stays final and listeners hear them;
    each is recorded in the admin's log (LogEntry) and on the ``stores.admin`` logger.

    Permissions: cancel and fail stale need "Can change task", delete needs "Can
    delete task" (the ``stores.TaskRecord`` permissions, for every store), export needs
    view access.
    """

    ACTIONS = {
        "cancel_tasks": ("Cancel selected tasks", "cancel"),
        "fail_stale_tasks": ("Fail selected stale tasks (no progress for A2A_STALE_AFTER)", "cancel"),
        "delete_tasks": ("Delete selected tasks", "remove"),
        "export_tasks": ("Export selected tasks (JSON lines)", "view"),
    }

    opts: Any
    admin_site: Any
    message_user: Any

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("stores.change_taskrecord")

    def has_remove_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("stores.delete_taskrecord")

    def action_choices(self, request: HttpRequest) -> list[tuple[str, str]]:
        """The actions this user may run, as (name, description)."""
        return [
            (name, description)
            for name, (description, permission) in self.ACTIONS.items()
            if getattr(self, f"has_{permission}_permission")(request)
        ]

    # --- Running them (on task ids) ---------------------------------------------------------

    def run_action(self, request: HttpRequest, name: str, ids: list[str]) -> HttpResponse | None:
        if name not in dict(self.action_choices(request)):
            raise PermissionDenied
        return getattr(self, f"_{name}")(request, ids)

    def _who(self, request: HttpRequest) -> str:
        return f"{request.user.get_username() or 'an admin'} in the admin"

    def _log(self, request: HttpRequest, ids: list[str], flag: int, message: str) -> None:
        if not ids:
            return
        content_type = ContentType.objects.get_for_model(self.opts.model, for_concrete_model=False)
        assert request.user.pk is not None  # the admin's views run for a signed-in staff user
        LogEntry.objects.bulk_create(
            [
                LogEntry(
                    user_id=request.user.pk,
                    content_type=content_type,
                    object_id=task_id,
                    object_repr=task_id[:200],
                    action_flag=flag,
                    change_message=message,
                )
                for task_id in ids
            ]
        )
        logger.info("admin %s: %s %d task(s): %s", request.user.get_username(), message, len(ids), ", ".join(ids))

    def _back(self, request: HttpRequest) -> HttpResponse | None:
        """Back to ``_next`` (the detail page an action was started from), when safe."""
        target = request.POST.get("_next", "")
        if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
            return HttpResponseRedirect(target)
        return None

    def _cancel_tasks(self, request: HttpRequest, ids: list[str]) -> HttpResponse | None:
        store = get_task_store()
        done: list[str] = []
        final: list[str] = []
        missing: list[str] = []
        for task_id in ids:
            outcome, _ = task_actions().cancel(store, task_id, by=self._who(request))
            {"canceled": done, "final": final, "missing": missing}[outcome].append(task_id)
        self._log(request, done, CHANGE, "Canceled")
        self._report(request, "Canceled", done, {"already finished (left as they are)": final, "not found": missing})
        return self._back(request)

    def _fail_stale_tasks(self, request: HttpRequest, ids: list[str]) -> HttpResponse | None:
        actions = task_actions()
        older = actions.stale_after()
        store = get_task_store()
        done: list[str] = []
        fresh: list[str] = []
        missing: list[str] = []
        for task_id in ids:
            outcome, _ = actions.fail_stale(store, task_id, older, by=self._who(request))
            {"failed": done, "fresh": fresh, "missing": missing}[outcome].append(task_id)
        self._log(request, done, CHANGE, "Failed as stale")
        self._report(
            request,
            "Failed as stale",
            done,
            {f"not stale (finished, waiting for input, or updated within {older})": fresh, "not found": missing},
        )
        return self._back(request)

    def _delete_tasks(self, request: HttpRequest, ids: list[str]) -> HttpResponse | None:
        store = get_task_store()
        if request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Are you sure?",
                "ids": ids,
                "action": "delete_tasks",
                "changelist_url": reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"),
            }
            return TemplateResponse(request, "admin/stores/task_delete_confirmation.html", context)
        deleted = [task_id for task_id in ids if store.delete(task_id)]
        self._log(request, deleted, DELETION, "Deleted")
        self._report(request, "Deleted", deleted, {"not found": [i for i in ids if i not in deleted]})
        return None

    def _export_tasks(self, request: HttpRequest, ids: list[str]) -> HttpResponse:
        store = get_task_store()
        tasks = [task for task in map(store.get, ids) if task is not None]
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        lines = b"".join(orjson.dumps(task) + b"\n" for task in tasks)
        response = HttpResponse(lines, content_type="application/jsonl")
        response["Content-Disposition"] = content_disposition_header(True, f"tasks-{stamp}.jsonl")
        logger.info("admin %s exported %d task(s)", request.user.get_username(), len(tasks))
        return response

    def _report(self, request: HttpRequest, verb: str, done: list[str], others: dict[str, list[str]]) -> None:
        text = f"{verb} {len(done)} task{'' if len(done) == 1 else 's'}."
        rest = [f"{len(v)} {label}" for label, v in others.items() if v]
        if rest:
            text += " Skipped: " + "; ".join(rest) + "."
        self.message_user(request, text, messages.SUCCESS if done else messages.WARNING)

    # --- Inline files and the detail page ------------------------------------------------------

    def download_url(self, task_id: str) -> DownloadURL:
        name = f"admin:{self.opts.app_label}_{self.opts.model_name}_download"
        return lambda section, i, j: reverse(name, args=[quote(task_id), section, i, j])

    def download_view(self, request: HttpRequest, object_id: str, section: str, item: int, part: int) -> HttpResponse:
        """An inline (base64) file part of a task, as an attachment."""
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        task = get_task_store().get(unquote(object_id))
        try:
            if section == "status":
                holder = task["status"]["message"]  # type: ignore[index]
            elif section in ("history", "artifacts"):
                holder = task[section][item]  # type: ignore[index]
            else:
                raise KeyError(section)
            file = holder["parts"][part]["file"]
            content = base64.b64decode(file["bytes"], validate=False)
        except (KeyError, IndexError, TypeError, binascii.Error):
            raise Http404("No such file part.") from None
        response = HttpResponse(content, content_type="application/octet-stream")
        response["Content-Disposition"] = content_disposition_header(True, str(file.get("name") or "file"))
        response["X-Content-Type-Options"] = "nosniff"
        return response

    def detail_response(
        self, request: HttpRequest, task_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The detail page of one task (both admins); an unknown id redirects to the list."""
        store, error = _store_or_error()
        task = store.get(task_id) if store is not None else None
        changelist = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        if task is None:
            self.message_user(
                request, error or f"Task with ID “{task_id}” does not exist. Perhaps it was deleted?", messages.WARNING
            )
            return HttpResponseRedirect(changelist)
        state = task_state(task)
        actions = [
            (name, label)
            for name, label in (
                ("cancel_tasks", "Cancel task"),
                ("fail_stale_tasks", "Fail as stale"),
                ("export_tasks", "Export JSON"),
                ("delete_tasks", "Delete"),
            )
            if name in dict(self.action_choices(request))
            and not (name == "cancel_tasks" and state in TERMINAL)
            and not (name == "fail_stale_tasks" and state not in ("submitted", "working"))
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "View task",
            "subtitle": task_id,
            "has_view_permission": True,
            "changelist_url": changelist,
            "task_id": task_id,
            "context_id": task.get("contextId") or "",
            "state": state,
            "state_badge": state_badge(state),
            "updated": _updated(task),
            "updated_ago": relative_time(_when(task)),
            "sections": task_sections(task, self.download_url(task_id)),
            "store": store,
            "actions": actions,
            "next_url": request.get_full_path(),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/stores/task_detail.html", context)


TERMINAL = frozenset({"completed", "canceled", "failed", "rejected"})


def _store_or_error() -> tuple[TaskStore | None, str]:
    try:
        return get_task_store(), ""
    except ImproperlyConfigured as exc:
        return None, f"The task store is misconfigured: {exc}"


# --- The ORM store: a read-only ModelAdmin ---------------------------------------------


class StateFilter(admin.SimpleListFilter):
    """Filter by task state, offering every A2A state (no DISTINCT query over the table)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(state, state) for state in STATES]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(state=self.value()) if self.value() else queryset


class UpdatedFilter(admin.SimpleListFilter):
    """Filter by when the task last changed (past hour, today, past day, week, month)."""

    title = "updated"
    parameter_name = "updated"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(value, label) for value, (label, _) in UPDATED_CHOICES.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        since = updated_since(self.value() or "")
        return queryset.filter(updated_at__gt=since) if since else queryset


class _RecentValuesFilter(admin.SimpleListFilter):
    """Filter by a column, offering its values among the most recently updated tasks
    (no DISTINCT over the table), and the chosen one."""

    field = ""
    RECENT = 10

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        recent = model_admin.get_queryset(request).exclude(**{self.field: ""}).order_by("-updated_at", "-id")
        values = list(dict.fromkeys(recent.values_list(self.field, flat=True)[:500]))[: self.RECENT]
        if self.value() and self.value() not in values:
            values.insert(0, self.value())
        return [(v, v if len(v) <= 40 else v[:39] + "…") for v in values]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(**{self.field: self.value()}) if self.value() else queryset


class ContextFilter(_RecentValuesFilter):
    """Filter by context: the contexts of the most recently updated tasks, and the chosen one."""

    title = "context"
    parameter_name = "context"
    field = "context_id"


class OwnerFilter(_RecentValuesFilter):
    """Filter by owner (the caller a task belongs to): the owners of the most recently updated tasks."""

    title = "owner"
    parameter_name = "owner"
    field = "owner"


@admin.register(TaskRecord)
class TaskRecordAdmin(TaskAdminMixin, admin.ModelAdmin):
    """The task admin, for every store, at one URL (``admin/stores/taskrecord/``) under
    one title ("Tasks"). With the ORM store, a read-only ``ModelAdmin`` on the table
    (Django's change list: search in the database, page numbers, sortable columns); with
    any other store (memory, file, custom), the same list read through
    :func:`~stores.backends.get_task_store` (:meth:`store_changelist_view`: cursor
    pagination, a bounded scan for text search). Both have the preview column, the
    filters (state, updated, context, owner), the actions of :class:`TaskAdminMixin`, the
    shared detail page and the dashboard (:meth:`dashboard_view`).

    Permissions are the ``stores.TaskRecord`` ones for every store ("Can view task" to
    see; ``stores.view_storedtask``, the permission of the list's former URL, still lets
    its holders see the list of a store that is not the ORM one).
    """

    list_display = ("id", "state_badge", "preview", "context_link", "updated")
    list_filter = (StateFilter, UpdatedFilter, ContextFilter, OwnerFilter)
    search_fields = ("id",)  # shows the search box; the search is get_search_results
    search_help_text = SEARCH_HELP
    ordering = ("-updated_at", "-id")
    list_per_page = 50
    actions = ("cancel_tasks", "fail_stale_tasks", "delete_tasks", "export_tasks")
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
        return not _orm_configured() and request.user.has_perm("stores.view_storedtask")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) and self.has_view_permission(request)

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

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        """An exact task id or context id, or the words of the task's text
        (:func:`orm_text_search`: PostgreSQL's full-text index, SQLite's ``LIKE``)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(Q(pk=term) | Q(context_id=term) | orm_text_search(queryset, term)), False

    def _urls(self) -> dict[str, str]:
        info = self.opts.app_label, self.opts.model_name
        return {
            "changelist_url": reverse("admin:{}_{}_changelist".format(*info)),
            "dashboard_url": reverse("admin:{}_{}_dashboard".format(*info)),
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
        store-backed page (:meth:`store_changelist_view`); same title and columns."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if not _orm_configured():
            return self.store_changelist_view(request, extra_context)
        context = {"title": "Tasks", "store": _configured_store(), **self._urls(), **(extra_context or {})}
        return super().changelist_view(request, context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The shared, read-only detail page (the conversation and artifacts as a person reads them)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return self.detail_response(request, unquote(object_id), extra_context)

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """Pictures of the tasks (:mod:`stores.dashboard`): per state, created per day,
        time to a final state (p50/p95) per day, and why tasks failed."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        store, error = _store_or_error()
        stats = dashboard.collect(store) if store is not None else None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Task dashboard",
            "has_view_permission": True,
            **self._urls(),
            "store": store,
            "orm": isinstance(store, OrmTaskStore),
            "errors": [error] if error else [],
            "stats": stats,
            "total": sum(stats.per_state.values()) if stats else 0,
            "charts": dashboard.charts(stats) if stats else {},
            "scan_limit": dashboard.SCAN_LIMIT,
            "days": dashboard.DAYS,
        }
        return TemplateResponse(request, "admin/stores/task_dashboard.html", context)

    @staticmethod
    def _ids(queryset: QuerySet) -> list[str]:
        return list(queryset.values_list("id", flat=True))

    @admin.action(description=TaskAdminMixin.ACTIONS["cancel_tasks"][0], permissions=["cancel"])
    def cancel_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._cancel_tasks(request, self._ids(queryset))

    @admin.action(description=TaskAdminMixin.ACTIONS["fail_stale_tasks"][0], permissions=["cancel"])
    def fail_stale_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._fail_stale_tasks(request, self._ids(queryset))

    @admin.action(description=TaskAdminMixin.ACTIONS["delete_tasks"][0], permissions=["remove"])
    def delete_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._delete_tasks(request, self._ids(queryset))

    @admin.action(description=TaskAdminMixin.ACTIONS["export_tasks"][0], permissions=["view"])
    def export_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse:
        return self._export_tasks(request, self._ids(queryset))

    @admin.display(description="State", ordering="state")
    def state_badge(self, obj: TaskRecord) -> SafeString:
        return state_badge(obj.state)

    @admin.display(description="Preview")
    def preview(self, obj: TaskRecord) -> SafeString:
        return preview_html(obj.task if isinstance(obj.task, dict) else {})

    @admin.display(description="Context id", ordering="context_id")
    def context_link(self, obj: TaskRecord) -> SafeString | str:
        if not obj.context_id:
            return "-"
        return format_html(
            '<a href="?{}" title="Only this context">{}</a>', urlencode({"context": obj.context_id}), obj.context_id
        )

    @staticmethod
    def _sections(obj: TaskRecord) -> dict[str, Any]:
        return task_sections(obj.task if isinstance(obj.task, dict) else {})

    @admin.display(description="Created", ordering="created_at")
    def created(self, obj: TaskRecord) -> str:
        return format_when(obj.created_at)

    @admin.display(description="Updated", ordering="updated_at")
    def updated(self, obj: TaskRecord) -> SafeString:
        return relative_time(obj.updated_at)

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

    # --- Any other store: the list read through the store ------------------------------------

    def store_changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """One page of tasks of a store that is not the ORM one: ``?state=``,
        ``?updated=`` (1h, today, 24h, 7d, 30d), ``?context=``, ``?owner=``, ``?q=`` (a
        task id, else a context id, else words of the tasks' text: a scan of at most
        :data:`SEARCH_SCAN_LIMIT` tasks per page), ``?page_token=``; POST runs an action."""
        if request.method == "POST":
            ids = request.POST.getlist("_selected_action")
            action = request.POST.get("action", "")
            if not action:
                self.message_user(request, "No action selected.", messages.WARNING)
            elif not ids:
                self.message_user(
                    request,
                    "Items must be selected in order to perform actions on them. No items have been changed.",
                    messages.WARNING,
                )
            else:
                response = self.run_action(request, action, ids)
                if response is not None:
                    return response
            return HttpResponseRedirect(request.get_full_path())
        q = request.GET.get("q", "").strip()
        state = request.GET.get("state", "")
        updated = request.GET.get("updated", "")
        context_id = request.GET.get("context", "").strip()
        owner = request.GET.get("owner", "").strip()
        token = request.GET.get("page_token", "")
        store, error = _store_or_error()
        errors = [error] if error else []
        if state and state not in STATES:
            errors.append(f"Unknown state “{state}”: showing tasks in every state.")
            state = ""
        if updated and updated not in UPDATED_CHOICES:
            errors.append(f"Unknown time filter “{updated}”: showing tasks of any time.")
            updated = ""
        after = updated_since(updated)
        size = min(self.list_per_page, MAX_PAGE_SIZE)
        filters: dict[str, Any] = {
            "context_id": context_id or None,
            "state": state or None,
            "updated_after": after,
            # staff see every caller's tasks, in every caller's contexts, unless they pick one
            **({"owner": owner} if owner else {"all_owners": True}),
        }
        page = TaskPage(tasks=[])
        mode = ""  # how q was understood: "id", "context" or "text"
        scanned, cut = 0, False
        found = store.get(q) if store is not None and q else None
        if found is not None:
            mode = "id"
            when = _when(found)
            fits = (
                state in ("", task_state(found))
                and context_id in ("", found.get("contextId"))
                and owner in ("", task_owner(found))
                and (after is None or (when is not None and when > after))
            )
            tasks = [found] if fits else []
            page = TaskPage(tasks=tasks, total_size=len(tasks))
        elif store is not None:
            if q and context_id in ("", q) and store.list(TaskQuery(**{**filters, "context_id": q}, page_size=1)).tasks:
                mode, filters["context_id"] = "context", q
            elif q:
                mode = "text"
            try:
                if mode == "text":
                    page, scanned, cut = self._scan_search(store, filters, search_words(q), token or None, size)
                else:
                    page = store.list(TaskQuery(**filters, page_size=size, page_token=token or None))
            except ValueError:
                if not token:
                    raise
                errors.append("That page token is not valid (it may be from another list): showing the first page.")
                token = ""
                if mode == "text":
                    page, scanned, cut = self._scan_search(store, filters, search_words(q), None, size)
                else:
                    page = store.list(TaskQuery(**filters, page_size=size))

        current = {"q": q, "state": state, "updated": updated, "context": context_id, "owner": owner}

        def link(**params: str) -> str:
            merged = {**current, "page_token": "", **params}
            return "?" + urlencode({k: v for k, v in merged.items() if v})

        rows = [
            {
                "id": task["id"],
                "url": reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[quote(task["id"])]),
                "state": task_state(task),
                "badge": state_badge(task_state(task)),
                "preview": preview_html(task),
                "context_id": task.get("contextId") or "",
                "context_url": link(context=task.get("contextId") or "", q=""),
                "owner": task_owner(task),
                "updated": _updated(task),
                "updated_ago": relative_time(_when(task)),
            }
            for task in page.tasks
        ]

        def choices(param: str, chosen: str, values: list[str]) -> list[dict[str, Any]]:
            seen = list(dict.fromkeys(([chosen] if chosen else []) + [v for v in values if v]))[:10]
            return [{"label": "All", "url": link(**{param: ""}), "selected": not chosen}] + [
                {"label": v if len(v) <= 40 else v[:39] + "…", "url": link(**{param: v}), "selected": v == chosen}
                for v in seen
            ]

        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Tasks",
            "has_view_permission": True,
            **self._urls(),
            "store": store,
            "rows": rows,
            "total": page.total_size,
            "q": q,
            "mode": mode,
            "scanned": scanned,
            "scan_cut": cut,
            "scan_limit": SEARCH_SCAN_LIMIT,
            "state": state,
            "updated": updated,
            "context_id": context_id,
            "owner": owner,
            "errors": errors,
            "filters": [{"label": "All", "url": link(state=""), "selected": not state}]
            + [{"label": s, "url": link(state=s), "selected": s == state} for s in STATES],
            "time_filters": [{"label": "Any date", "url": link(updated=""), "selected": not updated}]
            + [
                {"label": label, "url": link(updated=value), "selected": value == updated}
                for value, (label, _) in UPDATED_CHOICES.items()
            ],
            "context_filters": choices("context", context_id, [r["context_id"] for r in rows]),
            "owner_filters": choices("owner", owner, [r["owner"] for r in rows]),
            "search_help": SEARCH_HELP,
            "action_choices": self.action_choices(request),
            "clear_url": link(q=""),
            "next_url": link(page_token=page.next_page_token) if page.next_page_token else "",
            "first_url": link() if token else "",
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/stores/task_list.html", context)

    @staticmethod
    def _scan_search(
        store: TaskStore, filters: dict[str, Any], words: list[str], token: str | None, size: int
    ) -> tuple[TaskPage, int, bool]:
        """One page of the tasks whose text holds every word: reads the tasks that pass
        ``filters``, newest first from ``token``, until a page of matches is found or
        :data:`SEARCH_SCAN_LIMIT` tasks were read. Returns the page (its token goes on
        where this read stopped), how many tasks were read, and whether the limit cut it."""
        matches: list[Task] = []
        scanned = 0
        cursor = token
        while True:
            listed = store.list(TaskQuery(**filters, page_size=MAX_PAGE_SIZE, page_token=cursor))
            for task in listed.tasks:
                if text_matches(task, words):
                    if len(matches) == size:  # one more: the next page starts after the last shown
                        last = matches[-1]
                        return TaskPage(matches, encode_cursor(task_updated(last), last["id"])), scanned, False
                    matches.append(task)
                scanned += 1
                if scanned >= SEARCH_SCAN_LIMIT:
                    return TaskPage(matches, encode_cursor(task_updated(task), task["id"])), scanned, True
            cursor = listed.next_page_token or None
            if cursor is None:
                return TaskPage(matches, ""), scanned, False


# --- The former URL of the list of a store that is not the ORM one ----------------------------


@admin.register(StoredTask)
class StoredTaskAdmin(admin.ModelAdmin):
    """``admin/stores/storedtask/...`` was the list of the memory and file stores: it
    now redirects (with the query string) to the one task list,
    ``admin/stores/taskrecord/...`` (:class:`TaskRecordAdmin`), which serves every store.
    Not shown on the index."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return False

    def get_urls(self) -> list:
        return [path("", self.redirect), path("<path:rest>", self.redirect)]

    @staticmethod
    def redirect(request: HttpRequest, rest: str = "") -> HttpResponse:
        target = reverse("admin:stores_taskrecord_changelist") + rest
        query = request.META.get("QUERY_STRING", "")
        return HttpResponseRedirect(target + ("?" + query if query else ""))
