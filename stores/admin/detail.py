"""The task admin's detail page, on every store: the conversation and artifacts of one
task as a person reads them (:mod:`stores.admin.display`), the actions that fit its
state, and the downloads of its inline (base64) file parts."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.utils.text import Truncator

from stores.admin.display import (
    DownloadURL,
    relative_time,
    state_badge,
    stored_files,
    task_sections,
    task_when,
    updated_text,
)
from stores.admin.source import store_or_error
from stores.backends import get_task_store
from stores.base import TERMINAL_STATES
from stores.fields import TIMELINE, task_delegations, task_state

#: The detail page's buttons: (action, label).
DETAIL_ACTIONS = (
    ("cancel_tasks", "Cancel task"),
    ("fail_stale_tasks", "Fail as stale"),
    ("export_tasks", "Export JSON"),
    ("delete_tasks", "Delete"),
)


class TaskDetailMixin:
    """The detail page (:meth:`detail_response`) and the inline file downloads
    (:meth:`download_view`) of the task admin; its buttons post to the admin's actions
    (:class:`~stores.admin.actions.TaskActionsMixin`)."""

    opts: Any
    admin_site: Any
    message_user: Any
    action_choices: Any

    def download_url(self, task_id: str) -> DownloadURL:
        """Makes the URLs of the inline file parts of the task ``task_id``."""
        name = f"admin:{self.opts.app_label}_{self.opts.model_name}_download"
        return lambda section, i, j: reverse(name, args=[quote(task_id), section, i, j])

    def download_view(
        self, request: HttpRequest, object_id: str, section: str, item: int, part: int
    ) -> HttpResponse | FileResponse:
        """An inline (base64) file part of a task, as an attachment."""
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        task_id = unquote(object_id)
        task = get_task_store().get(task_id)
        try:
            if section == "status":
                holder = task["status"]["message"]  # type: ignore[index]
            elif section in ("history", "artifacts"):
                holder = task[section][item]  # type: ignore[index]
            elif section == "timeline":  # a client message or an agent status of the timeline
                entry = task[TIMELINE][item]  # type: ignore[index]
                holder = entry["message"] if "message" in entry else entry["status"]["message"]
            else:
                raise KeyError(section)
            file = holder["parts"][part]["file"]
            stored = stored_files(holder["parts"][part])
            if stored is not None:  # kept in a storage (a2a's offloaded parts): streamed from it
                response: HttpResponse | FileResponse = FileResponse(stored.open(task_id, holder["parts"][part]))
            else:
                response = HttpResponse(base64.b64decode(file["bytes"], validate=False))
        except (KeyError, IndexError, TypeError, binascii.Error, FileNotFoundError):
            raise Http404("No such file part.") from None
        response["Content-Type"] = "application/octet-stream"
        response["Content-Disposition"] = content_disposition_header(True, str(file.get("name") or "file"))
        response["X-Content-Type-Options"] = "nosniff"
        return response

    def detail_actions(self, request: HttpRequest, state: str) -> list[tuple[str, str]]:
        """The buttons of the detail page of a task in ``state`` that this user may press."""
        allowed = dict(self.action_choices(request))
        return [
            (name, label)
            for name, label in DETAIL_ACTIONS
            if name in allowed
            and not (name == "cancel_tasks" and state in TERMINAL_STATES)
            and not (name == "fail_stale_tasks" and state not in ("submitted", "working"))
        ]

    def detail_response(
        self, request: HttpRequest, task_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The detail page of one task; an unknown id redirects to the list."""
        store, error = store_or_error()
        task = store.get(task_id) if store is not None else None
        changelist = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        if task is None:
            self.message_user(
                request, error or f"Task with ID “{task_id}” does not exist. Perhaps it was deleted?", messages.WARNING
            )
            return HttpResponseRedirect(changelist)
        state = task_state(task)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "View task",
            "subtitle": task_id,
            "original": Truncator(task_id).chars(60),  # the breadcrumbs' last step
            "has_view_permission": True,
            "media": self.media,  # type: ignore[attr-defined]
            "changelist_url": changelist,
            "task_id": task_id,
            "context_id": task.get("contextId") or "",
            "state": state,
            "state_badge": state_badge(state),
            "updated": updated_text(task),
            "updated_ago": relative_time(task_when(task)),
            "sections": task_sections(task, self.download_url(task_id)),
            "delegations": task_delegations(task),
            "store": store,
            "actions": self.detail_actions(request, state),
            "next_url": request.get_full_path(),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/stores/task_detail.html", context)
