"""A :class:`~stores.base.TaskQuery` answered over a list of tasks, the slow and obvious
way: what every store's ``list`` must agree with (the index tests compare against it),
and how the admin checks one task found by id against the list's filters."""

from __future__ import annotations

from stores.base import Task, TaskPage, TaskQuery
from stores.cursors import decode_cursor, encode_cursor
from stores.fields import task_state, task_updated
from stores.scope import task_scope
from stores.timestamps import format_timestamp


def page_in_memory(tasks: list[Task], query: TaskQuery) -> TaskPage:
    """Filter, order (newest-updated first, then id) and cut one page from ``tasks``:
    what ``list`` answers, worked out the slow and obvious way over every task."""
    after = format_timestamp(query.updated_after) if query.updated_after else None
    selected = [
        t
        for t in tasks
        if (query.context_id is None or t.get("contextId") == query.context_id)
        and (query.state is None or task_state(t) == query.state)
        and (after is None or task_updated(t) > after)
        and (query.owner is None or task_scope(t) == query.owner)
    ]
    selected.sort(key=lambda t: (task_updated(t), t["id"]), reverse=True)
    total = len(selected)
    if query.page_token:
        cursor = decode_cursor(query.page_token)
        selected = [t for t in selected if (task_updated(t), t["id"]) < cursor]
    page = selected[: query.page_size]
    more = len(selected) > query.page_size
    token = encode_cursor(task_updated(page[-1]), page[-1]["id"]) if more else ""
    return TaskPage(tasks=page, next_page_token=token, total_size=total)
