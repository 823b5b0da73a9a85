"""The task admin's actions: cancel, fail stale, delete, export (JSON lines), on every store.

Cancel and fail stale change a task's state through the A2A task lifecycle (a terminal
state stays final, listeners hear them), which lives in the ``a2a`` app above this
one: ``a2a`` gives its implementation (:class:`TaskActions`) to
:func:`register_task_actions` when it is ready. Every change is recorded in the
admin's log (``LogEntry``) and on the ``stores.admin`` logger.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any, Protocol

import orjson
from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header, url_has_allowed_host_and_scheme

from stores.backends import get_task_store
from stores.base import Task, TaskStore
from stores.fields import without_event_log
from stores.retention import Policy, delete_tasks, set_kept

#: The logger of the admin's changes (named after the package: the name the docs give).
logger = logging.getLogger("stores.admin")


class TaskActions(Protocol):
    """The state changes the admin's actions make, given by the ``a2a`` app (:func:`register_task_actions`)."""

    def cancel(self, store: TaskStore, task_id: str, *, by: str = "") -> tuple[str, Task | None]: ...

    def fail_stale(
        self, store: TaskStore, task_id: str, older_than: dt.timedelta, *, by: str = ""
    ) -> tuple[str, Task | None]: ...

    def stale_after(self) -> dt.timedelta: ...

    def retention(self) -> Policy: ...


_task_actions: TaskActions | None = None


def register_task_actions(actions: TaskActions) -> None:
    """Give the admin the state changes its cancel and fail-stale actions make."""
    global _task_actions
    _task_actions = actions


def retention_policy() -> Policy:
    """The registered ``A2A_RETENTION`` policy (an empty one without the ``a2a`` app: nothing expires)."""
    return _task_actions.retention() if _task_actions is not None else Policy()


def task_actions() -> TaskActions:
    """The registered :class:`TaskActions` (ImproperlyConfigured without the ``a2a`` app)."""
    if _task_actions is None:
        raise ImproperlyConfigured('The task admin\'s actions need the "a2a" app in INSTALLED_APPS.')
    return _task_actions


class TaskActionsMixin:
    """The actions of the task admin, on task ids: Django's action machinery calls the
    ``@admin.action`` methods with a queryset (the ORM store), :meth:`post_action` runs
    the form of the store-backed list (any other store), and the detail page posts to
    either.

    Permissions: cancel and fail stale need "Can change task", delete needs "Can
    delete task" (the ``stores.TaskRecord`` permissions, for every store), export needs
    view access.
    """

    ACTIONS = {
        "cancel_tasks": ("Cancel selected tasks", "cancel"),
        "fail_stale_tasks": ("Fail selected stale tasks (no progress for A2A_STALE_AFTER)", "cancel"),
        "delete_tasks": ("Delete selected tasks", "remove"),
        "keep_tasks": ("Keep selected tasks (they never expire)", "cancel"),
        "release_tasks": ("Let selected tasks expire (A2A_RETENTION)", "cancel"),
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

    def post_action(self, request: HttpRequest) -> HttpResponse:
        """The action form of the store-backed list: run the chosen action on the selected tasks."""
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
        elif (response := self.run_action(request, action, ids)) is not None:
            return response
        return HttpResponseRedirect(request.get_full_path())

    def run_action(self, request: HttpRequest, name: str, ids: list[str]) -> HttpResponse | None:
        """Run the action ``name`` on the tasks ``ids`` (PermissionDenied when this user may not)."""
        if name not in dict(self.action_choices(request)):
            raise PermissionDenied
        return getattr(self, f"_{name}")(request, ids)

    # --- As Django's actions, on a queryset of the ORM store's table ---------------------------

    @staticmethod
    def _ids(queryset: QuerySet) -> list[str]:
        return list(queryset.values_list("id", flat=True))

    @admin.action(description=ACTIONS["cancel_tasks"][0], permissions=["cancel"])
    def cancel_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._cancel_tasks(request, self._ids(queryset))

    @admin.action(description=ACTIONS["fail_stale_tasks"][0], permissions=["cancel"])
    def fail_stale_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._fail_stale_tasks(request, self._ids(queryset))

    @admin.action(description=ACTIONS["delete_tasks"][0], permissions=["remove"])
    def delete_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._delete_tasks(request, self._ids(queryset))

    @admin.action(description=ACTIONS["keep_tasks"][0], permissions=["cancel"])
    def keep_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._keep_tasks(request, self._ids(queryset))

    @admin.action(description=ACTIONS["release_tasks"][0], permissions=["cancel"])
    def release_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._release_tasks(request, self._ids(queryset))

    @admin.action(description=ACTIONS["export_tasks"][0], permissions=["view"])
    def export_tasks(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse:
        return self._export_tasks(request, self._ids(queryset))

    # --- On task ids ------------------------------------------------------------------------------

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
                "media": self.media,  # type: ignore[attr-defined]
                "ids": ids,
                "action": "delete_tasks",
                "changelist_url": reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"),
            }
            return TemplateResponse(request, "admin/stores/task_delete_confirmation.html", context)
        found = [task for task in map(store.get, ids) if task is not None]
        deleted = [task["id"] for task in delete_tasks(store, found)]
        changed = [t["id"] for t in found if t["id"] not in deleted]
        missing = [i for i in ids if i not in deleted and i not in changed]
        self._log(request, deleted, DELETION, "Deleted")
        self._report(request, "Deleted", deleted, {"changed meanwhile": changed, "not found": missing})
        return None

    def _keep_tasks(self, request: HttpRequest, ids: list[str]) -> HttpResponse | None:
        return self._set_kept(request, ids, True)

    def _release_tasks(self, request: HttpRequest, ids: list[str]) -> HttpResponse | None:
        return self._set_kept(request, ids, False)

    def _set_kept(self, request: HttpRequest, ids: list[str], keep: bool) -> HttpResponse | None:
        store = get_task_store()
        done = [task_id for task_id in ids if set_kept(store, task_id, keep) is not None]
        verb = "Kept" if keep else "Let expire"
        self._log(request, done, CHANGE, "Kept (never expires)" if keep else "Let expire (A2A_RETENTION)")
        self._report(request, verb, done, {"not found": [i for i in ids if i not in done]})
        return self._back(request)

    def _export_tasks(self, request: HttpRequest, ids: list[str]) -> HttpResponse:
        store = get_task_store()
        tasks = [task for task in map(store.get, ids) if task is not None]
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        lines = b"".join(orjson.dumps(without_event_log(task)) + b"\n" for task in tasks)
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
