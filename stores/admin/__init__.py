"""The Django admin for tasks, whichever store holds them. Django's autodiscovery
imports this module, which registers the admins of :mod:`~stores.admin.options`.

- :mod:`~stores.admin.options`: the ``ModelAdmin`` on :class:`~stores.models.TaskRecord`,
  one task list, detail page and dashboard for every store; and the redirect of the
  table-less :class:`~stores.models.StoredTask`'s URLs to it.
- :mod:`~stores.admin.changelist`: the change list of a store that is not the ORM one
  (query, filters, search, page, rows), read through the store.
- :mod:`~stores.admin.filters`: the list's filters, one set for both change lists.
- :mod:`~stores.admin.search`: the search box (task id, context id, words of the text).
- :mod:`~stores.admin.actions`: cancel, fail stale, delete, export; the ``a2a`` app
  gives the state changes to :func:`register_task_actions` when it is ready.
- :mod:`~stores.admin.detail`, :mod:`~stores.admin.display`: the detail page and how a
  task is shown; :mod:`~stores.admin.dashboard`: the dashboard's numbers and pictures;
  :mod:`~stores.admin.source`: the configured store the pages read.
"""

from __future__ import annotations

from django.contrib import admin

from stores.admin.actions import TaskActions, register_task_actions
from stores.admin.display import StoredFiles, register_stored_files
from stores.admin.options import StoredTaskAdmin, TaskRecordAdmin
from stores.models import StoredTask, TaskRecord

__all__ = [
    "StoredFiles",
    "StoredTaskAdmin",
    "TaskActions",
    "TaskRecordAdmin",
    "register_stored_files",
    "register_task_actions",
]

admin.site.register(TaskRecord, TaskRecordAdmin)
admin.site.register(StoredTask, StoredTaskAdmin)
