"""The ORM store: tasks in the ``stores.TaskRecord`` table of any Django database."""

from __future__ import annotations

import datetime as dt
import logging

from django.db import IntegrityError, connections, transaction
from django.db.models import Q

from .base import (
    Task,
    TaskPage,
    TaskQuery,
    TaskStore,
    check_task,
    decode_cursor,
    encode_cursor,
    format_timestamp,
    parse_timestamp,
    task_owner,
    task_state,
    task_updated,
)

logger = logging.getLogger(__name__)


def _updated_at(task: Task) -> dt.datetime:
    """The row's ``updated_at``: the task's status timestamp, else now, to the ms
    (so a page token, which carries milliseconds, matches the row exactly)."""
    try:
        when = parse_timestamp(task_updated(task))
    except ValueError:
        when = dt.datetime.now(dt.UTC)
    return when.replace(microsecond=when.microsecond // 1000 * 1000)


class OrmTaskStore(TaskStore):
    """Tasks as rows of :class:`stores.models.TaskRecord` in database ``using``."""

    durable = True
    shared = True

    def __init__(self, using: str = "default") -> None:
        self.using = using

    @property
    def objects(self):  # type: ignore[no-untyped-def]
        """The table's manager on this store's database, on a healthy connection.

        The store runs in worker threads that Django's request signals never reach,
        so it does what they do before each use: drop the thread's connection when
        it broke (say, the database restarted) or outlived ``CONN_MAX_AGE``. Never
        inside a transaction, which must keep its connection.
        """
        from .models import TaskRecord

        connection = connections[self.using]
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()
        return TaskRecord.objects.using(self.using)

    def get(self, task_id: str) -> Task | None:
        if not isinstance(task_id, str) or not task_id:
            return None
        rows = list(self.objects.filter(pk=task_id).values_list("task", flat=True)[:1])
        if not rows:
            return None
        task = rows[0]
        if not isinstance(task, dict) or task.get("id") != task_id:
            logger.warning("task row %r in database %r is corrupt", task_id, self.using)
            return None
        return task

    def save(self, task: Task) -> Task:
        task_id = check_task(task)
        context_id = task.get("contextId")
        fields = {
            "context_id": context_id if isinstance(context_id, str) else "",
            "state": task_state(task)[:32],
            "task": task,
            "updated_at": _updated_at(task),
            "owner": task_owner(task)[:255],
            "version": task.get("_version", 0) if isinstance(task.get("_version"), int) else 0,
        }
        objects = self.objects
        # UPDATE first: all saves but the first of a task's life are updates.
        if objects.filter(pk=task_id).update(**fields):
            return task
        try:
            with transaction.atomic(using=self.using):
                objects.create(id=task_id, created_at=fields["updated_at"], **fields)
        except IntegrityError:  # created meanwhile by another writer
            objects.filter(pk=task_id).update(**fields)
        return task

    def list(self, query: TaskQuery | None = None) -> TaskPage:
        query = query or TaskQuery()
        rows = self.objects.all()
        if query.context_id is not None:
            rows = rows.filter(context_id=query.context_id)
        if query.state is not None:
            rows = rows.filter(state=query.state)
        if query.owner is not None:
            rows = rows.filter(owner=query.owner)
        if query.updated_after is not None:
            rows = rows.filter(updated_at__gt=query.updated_after)
        total = rows.count()
        if query.page_token:
            updated, last_id = decode_cursor(query.page_token)
            when = parse_timestamp(updated)
            rows = rows.filter(Q(updated_at__lt=when) | Q(updated_at=when, id__lt=last_id))
        fetched = list(
            rows.order_by("-updated_at", "-id").values_list("task", "updated_at", "id")[: query.page_size + 1]
        )
        page = fetched[: query.page_size]
        token = ""
        if len(fetched) > query.page_size:
            _, updated_at, last_id = page[-1]
            token = encode_cursor(format_timestamp(updated_at), last_id)
        tasks = [t for t, _, _ in page if isinstance(t, dict)]
        return TaskPage(tasks=tasks, next_page_token=token, total_size=total)

    def delete(self, task_id: str) -> bool:
        deleted, _ = self.objects.filter(pk=task_id).delete()
        return bool(deleted)

    def __repr__(self) -> str:
        return f"<OrmTaskStore using={self.using!r}>"
