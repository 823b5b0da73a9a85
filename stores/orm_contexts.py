"""The ORM store's conversations: deleting one whole or not at all
(:meth:`stores.orm.OrmTaskStore.delete_contexts`), and the lock that makes a task
created in a conversation wait for such a delete.

A batch of conversations is deleted in one transaction that first stops them from
changing, then reads what each holds now, then deletes those still exactly as the sweep
read them:

- **PostgreSQL**: a transaction-level advisory lock per conversation
  (``pg_advisory_xact_lock``, keyed by a hash of its scope key and ``contextId``, taken
  in key order, so two sweeps never deadlock), which the ``INSERT`` of every new task
  with a context takes too, shared (``pg_advisory_xact_lock_shared``: new tasks of one
  conversation never wait for each other), in the same statement (no round trip); then ``SELECT ...
  FOR UPDATE`` of the conversations' rows, whose row locks make a continuation's
  ``UPDATE`` wait for the commit (and then find no row: the task is unknown). READ
  COMMITTED alone would let a new task be inserted into the conversation between the
  check and the commit (a phantom), and the follow-up's handler read rows that then vanish.
- **SQLite**: one writer at a time. The transaction's first statement is a write, which
  takes the database's write lock (whatever the ``transaction_mode``), so nothing
  changes between the check and the commit.
- **Other databases**: ``SELECT ... FOR UPDATE`` (where the database has it) stops a
  continuation; a new task inserted into the conversation meanwhile is stopped only
  where the database's locking reads lock the index range too (MySQL's InnoDB in
  REPEATABLE READ, its default, does): elsewhere best effort.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from stores.base import Task
from stores.fields import task_version
from stores.models import PushConfigRecord, TaskRecord
from stores.scope import task_context

#: Conversations (or ids) per statement (under every database's limit of parameters).
CHUNK = 500

#: A row's conversation as the table has it: (``owner``, ``context_id``).
RowContext = tuple[str, str]


def row_context(task: Task) -> RowContext | None:
    """The conversation of ``task`` as its row says it (the owner column is cut at 255
    characters), or None for a task without a context."""
    key = task_context(task)
    return (key[0][:255], key[1]) if key is not None else None


def lock_key(context: RowContext) -> int:
    """The advisory lock of a conversation: a signed 64-bit hash of its owner and context."""
    owner, context_id = context
    data = f"{owner}\x00{context_id}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8, person=b"a2a-context").digest(), "big", signed=True)


def locks_contexts(connection: Any) -> bool:
    """Whether a new task's ``INSERT`` takes its conversation's lock (PostgreSQL)."""
    return connection.vendor == "postgresql"


#: The value of the ``context_id`` column in a new task's ``INSERT`` on PostgreSQL: the
#: context itself, selected once its conversation's lock is held (parameters: the
#: context id, then the lock's key), so the row commits with the lock held.
LOCKED_VALUE = "(SELECT %s FROM pg_advisory_xact_lock_shared(%s))"


def delete_contexts(connection: Any, contexts: Sequence[Collection[Task]]) -> builtins.list[Task]:
    """Inside a transaction on ``connection``: delete each conversation of ``contexts``
    still exactly as read (see the module doc), with its push configs; the tasks
    deleted. A task without a context is deleted alone, when still at the version read."""
    groups: dict[RowContext, Collection[Task]] = {}
    loose: list[Task] = []
    for tasks in contexts:
        key = row_context(next(iter(tasks)))
        if key is None:
            loose += tasks
        else:
            groups.setdefault(key, tasks)
    _hold(connection, groups)
    rows = _rows(connection, groups, [t["id"] for t in loose])
    held: dict[RowContext, dict[str, int]] = {}
    for task_id, (owner, context, version) in rows.items():
        held.setdefault((owner, context), {})[task_id] = version
    deleted = [t for t in loose if _unchanged(rows[t["id"]][2] if t["id"] in rows else None, t)]
    for key, tasks in groups.items():
        stored = held.get(key, {})
        if stored.keys() == {t["id"] for t in tasks} and all(_unchanged(stored[t["id"]], t) for t in tasks):
            deleted += tasks
    _delete(connection, TaskRecord, "id", [t["id"] for t in deleted])
    _delete(connection, PushConfigRecord, "task_id", [t["id"] for t in deleted])
    return deleted


def _unchanged(stored: int | None, task: Task) -> bool:
    """Whether ``task`` is stored (at ``stored``) at the version read (a row saved before
    the version column existed has 0 there: its version is not compared)."""
    return stored is not None and stored in (0, task_version(task))


def _hold(connection: Any, groups: Iterable[RowContext]) -> None:
    """Stop the conversations from gaining a task until the transaction ends: their
    advisory locks, in key order (PostgreSQL); the write lock (SQLite)."""
    with connection.cursor() as cursor:
        if locks_contexts(connection):
            keys = sorted({lock_key(g) for g in groups})
            for chunk in _chunks(keys):
                # unnest yields the array in order: the locks are taken in key order
                cursor.execute("SELECT count(pg_advisory_xact_lock(k)) FROM unnest(%s::bigint[]) AS k", [chunk])
        elif connection.vendor == "sqlite":
            table = connection.ops.quote_name(TaskRecord._meta.db_table)
            cursor.execute(f"DELETE FROM {table} WHERE 0 = 1")  # a write: SQLite's write lock, now


def _rows(connection: Any, groups: Collection[RowContext], ids: Sequence[str]) -> dict[str, tuple[str, str, int]]:
    """Task id -> (owner, context id, version) of every row of the conversations and of
    ``ids``, locked for update where the database can."""
    qn = connection.ops.quote_name
    meta: Any = TaskRecord._meta
    names = [qn(meta.get_field(name).column) for name in ("id", "owner", "context_id", "version")]
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    select = f"SELECT {', '.join(names)} FROM {qn(meta.db_table)} WHERE "
    found: dict[str, tuple[str, str, int]] = {}
    with connection.cursor() as cursor:
        for column, values, keep in (
            (names[2], sorted({context for _, context in groups}), lambda o, c: (o, c) in groups),
            (names[0], ids, lambda o, c: True),
        ):
            for chunk in _chunks(values):
                cursor.execute(f"{select}{column} IN ({_marks(chunk)}){lock}", chunk)
                found.update((i, (o, c, v)) for i, o, c, v in cursor.fetchall() if keep(o, c))
    return found


def _delete(connection: Any, model: Any, field: str, ids: Sequence[str]) -> None:
    qn = connection.ops.quote_name
    table, column = qn(model._meta.db_table), qn(model._meta.get_field(field).column)
    with connection.cursor() as cursor:
        for chunk in _chunks(ids):
            cursor.execute(f"DELETE FROM {table} WHERE {column} IN ({_marks(chunk)})", chunk)


def _marks(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def _chunks(values: Sequence[Any]) -> Iterable[Any]:
    return (values[start : start + CHUNK] for start in range(0, len(values), CHUNK))
