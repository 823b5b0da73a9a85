"""The ORM store: tasks in the ``stores.TaskRecord`` table of any Django database."""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from django.core.checks import CheckMessage, Error, Warning
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, connections, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.models import F, Q

from stores.base import MAX_PAGE_SIZE, StaleTaskError, StoreUnavailable, Task, TaskPage, TaskQuery, TaskStore
from stores.cursors import decode_cursor, encode_cursor
from stores.durability import acknowledged
from stores.fields import check_task, task_state, task_updated, task_version
from stores.models import PushConfigRecord, TaskCount, TaskRecord
from stores.orm_connection import refresh_connection
from stores.orm_contexts import LOCKED_VALUE, delete_contexts, lock_key, locks_contexts
from stores.orm_push import OrmPushConfigStore
from stores.push_configs import PushConfigStore
from stores.scope import task_scope
from stores.timestamps import format_timestamp, parse_timestamp
from stores.writable import directory_problem

logger = logging.getLogger(__name__)


#: The databases whose ``TaskCount`` rows triggers keep (migration ``stores.0004``).
COUNTING_VENDORS = frozenset({"postgresql", "sqlite"})


def counted_by_triggers(connection: Any) -> bool:
    """Whether ``TaskCount`` answers for this database (its migration made triggers)."""
    return connection.vendor in COUNTING_VENDORS


def _updated_at(task: Task) -> dt.datetime:
    """The row's ``updated_at``: the task's status timestamp, else now, to the ms
    (so a page token, which carries milliseconds, matches the row exactly)."""
    try:
        when = parse_timestamp(task_updated(task))
    except ValueError:
        when = dt.datetime.now(dt.UTC)
    return when.replace(microsecond=when.microsecond // 1000 * 1000)


#: At most this many remembered answers of "does the task have push configs" (each is
#: read by the publish right after its save; lease renewals, never published, leave theirs).
_MAX_PUSH_SEEN = 10_000


def _returns_rows(connection: Any) -> bool:
    """Whether ``UPDATE``/``INSERT ... RETURNING`` works here: PostgreSQL, SQLite 3.35+."""
    if connection.vendor == "postgresql":
        return True
    return connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 35)


#: Ids in one ``DELETE ... IN (...)`` (under every database's limit of parameters).
_DELETE_CHUNK = 500

#: The SQL that turns ``synchronous_commit`` off for the current transaction (PostgreSQL).
RELAXED_COMMIT = "set_config('synchronous_commit', 'off', true)"


class OrmTaskStore(TaskStore):
    """Tasks as rows of :class:`stores.models.TaskRecord` in database ``using``."""

    durable = True
    shared = True
    supports_compare_and_swap = True

    def __init__(self, using: str = "default") -> None:
        self.using = using
        # task id -> whether its push configs existed when it was last saved (see
        # _push_returning): read, once, by OrmPushConfigStore.has_configs.
        self._push_seen: dict[str, bool] = {}

    @property
    def objects(self):
        """The table's manager on this store's database, on a healthy connection.

        The store runs in worker threads that Django's request signals never reach,
        so it does what they do before each use: drop the thread's connection when
        it broke (say, the database restarted) or outlived ``CONN_MAX_AGE``. Never
        inside a transaction, which must keep its connection. With ``CONN_HEALTH_CHECKS``
        on PostgreSQL, the health check (a ``SELECT 1`` round trip before each query,
        which cost a third of a task's database time) is only made when the socket has
        something to read (:func:`stores.orm_connection.refresh_connection`); a read that meets a connection the
        server dropped a moment ago reconnects and runs again (:meth:`_read`).
        """
        self._connection()
        return TaskRecord.objects.using(self.using)

    def _connection(self) -> Any:
        """This store's database connection, checked as :attr:`objects` says."""
        refresh_connection(self.using)
        return connections[self.using]

    def _select_task(self, task_id: str) -> list:
        """``SELECT task FROM <table> WHERE id = %s`` as SQL: a fixed query, which the ORM
        took longer to build than the database to run (``bench/ab.py`` measures it). The
        JSON is decoded by the model field, as the ORM does (``json.loads``: exact big
        integers, ``NaN``, what the field's encoder wrote)."""
        connection = self._connection()
        qn = connection.ops.quote_name
        meta = TaskRecord._meta
        field: Any = meta.get_field("task")
        sql = f"SELECT {qn(field.column)} FROM {qn(meta.db_table)} WHERE {qn(meta.pk.column)} = %s"
        with connection.cursor() as cursor:
            cursor.execute(sql, [task_id])
            return [field.from_db_value(value, None, connection) for (value,) in cursor.fetchall()]

    def _read(self, query: Callable[[], list]) -> list:
        """Run a read; once more on a new connection when the server had dropped the
        thread's one (a write is never run twice: whether it happened is unknown)."""
        try:
            return query()
        except (OperationalError, InterfaceError):
            connection = connections[self.using]
            if connection.in_atomic_block or connection.is_usable():
                raise
            connection.close()
            return query()

    def get(self, task_id: str) -> Task | None:
        if not isinstance(task_id, str) or not task_id:
            return None
        try:
            rows = self._read(lambda: self._select_task(task_id))
        except (OperationalError, InterfaceError) as exc:  # the database cannot answer now
            raise StoreUnavailable("could not read the task now: the database is unavailable; try again") from exc
        if not rows:
            return None
        task = rows[0]
        if not isinstance(task, dict) or task.get("id") != task_id:
            logger.warning("task row %r in database %r is corrupt", task_id, self.using)
            return None
        return task

    def save(self, task: Task, expected_version: int | None = None) -> Task:
        task_id = check_task(task)
        self._push_seen.pop(task_id, None)  # known again only from this save's own statement
        context_id = task.get("contextId")
        fields = {
            "context_id": context_id if isinstance(context_id, str) else "",
            "state": task_state(task)[:32],
            "task": task,
            "updated_at": _updated_at(task),
            "owner": task_scope(task)[:255],
            "version": task_version(task),
        }
        if expected_version is not None:
            self._save_if_version(task_id, fields, expected_version)
            return task
        objects = self.objects
        # UPDATE first: all saves but the first of a task's life are updates; then the
        # one-statement INSERT (with its conversation's lock, see _insert).
        if not objects.filter(pk=task_id).update(**fields) and not self._insert(task_id, fields):
            objects.filter(pk=task_id).update(**fields)  # created meanwhile by another writer
        return task

    def _save_if_version(self, task_id: str, fields: dict, expected: int) -> None:
        """Compare-and-swap: ``UPDATE ... WHERE id = %s AND version = %s`` (atomic on
        SQLite, and on PostgreSQL, whose row lock makes a concurrent writer re-check the
        WHERE against the row it committed); an INSERT when there is no row yet."""
        if expected and self._update_if_version(task_id, fields, expected):
            return  # the usual case: one UPDATE
        if not expected and self._insert(task_id, fields):
            return  # a new task: one INSERT (the usual case of version 0)
        objects = self.objects
        row = objects.filter(pk=task_id).values_list("version", "task").first()
        if row is None:  # deleted since the INSERT found it (or the UPDATE missed it)
            if not expected and self._insert(task_id, fields):
                return
            raise StaleTaskError(task_id, expected, None if expected else self._version_of(task_id))
        column, stored = row
        # A row saved before the version column existed has 0 there: its task knows better.
        found = column or task_version(stored if isinstance(stored, dict) else None)
        if found != expected or not objects.filter(pk=task_id, version=column).update(**fields):
            raise StaleTaskError(task_id, expected, found)

    # The two writes of every transition, as fixed SQL with each value prepared by its
    # model field (get_db_prep_save: the same adaptation the ORM does): building them
    # through the ORM cost about as much CPU as the database took to run them.

    def _update_if_version(self, task_id: str, fields: dict, expected: int) -> bool:
        """``UPDATE ... WHERE id = %s AND version = %s``; whether a row was updated.

        A save that is no acknowledgement (a lease renewal, inside
        :func:`stores.durability.not_an_acknowledgement`) on PostgreSQL also sets
        ``synchronous_commit`` off for its own transaction, in the same statement (no
        extra round trip): the commit does not wait for the WAL flush. A crash of the
        database may then lose the renewal (the lease looks older); any later commit
        that waits for the flush (every other save) makes it durable with it."""
        connection = self._connection()
        qn = connection.ops.quote_name
        meta = TaskRecord._meta
        columns: list[Any] = [meta.get_field(name) for name in fields]
        sql = (
            f"UPDATE {qn(meta.db_table)} SET {', '.join(f'{qn(f.column)} = %s' for f in columns)} "
            f"WHERE {qn(meta.pk.column)} = %s AND {qn(meta.get_field('version').column)} = %s"
        )
        if connection.vendor == "postgresql" and not acknowledged():
            # Evaluated for every row the UPDATE writes (an AND is only true once each
            # operand is); is_local: for this transaction only (the statement's own, in
            # autocommit), never the session's.
            sql += f" AND {RELAXED_COMMIT} = 'off'"
        params = [f.get_db_prep_save(fields[f.name], connection) for f in columns]
        returning, extra = self._push_returning(connection, task_id)
        with connection.cursor() as cursor:
            cursor.execute(sql + returning, [*params, task_id, expected, *extra])
            if not returning:
                return cursor.rowcount > 0
            rows = cursor.fetchall()
        if rows:
            self._remember_push(task_id, bool(rows[0][0]))
        return bool(rows)

    def _insert(self, task_id: str, fields: dict) -> bool:
        """INSERT the row (every column: ``fields``, else the field's default); False
        when one exists. A lone statement (no BEGIN/COMMIT round trips) unless already
        in a transaction, which a savepoint then keeps usable. On PostgreSQL a task with
        a context takes its conversation's lock in the same statement
        (:mod:`stores.orm_contexts`): it waits for a delete of the conversation under way."""
        connection = self._connection()
        qn = connection.ops.quote_name
        meta = TaskRecord._meta
        values = {"id": task_id, "created_at": fields["updated_at"], **fields}
        columns = meta.concrete_fields
        params = [f.get_db_prep_save(values.get(f.name, f.get_default()), connection) for f in columns]
        marks = ["%s"] * len(columns)
        if fields["context_id"] and locks_contexts(connection):
            at = [f.name for f in columns].index("context_id")
            marks[at] = LOCKED_VALUE
            params[at : at + 1] = [params[at], lock_key((fields["owner"], fields["context_id"]))]
        sql = (
            f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in columns)}) VALUES ({', '.join(marks)})"
        )
        returning, extra = self._push_returning(connection, task_id)
        try:
            with (
                transaction.atomic(using=self.using) if connection.in_atomic_block else contextlib.nullcontext(),
                connection.cursor() as cursor,
            ):
                cursor.execute(sql + returning, [*params, *extra])
                rows = cursor.fetchall() if returning else []
        except IntegrityError:
            return False
        if rows:
            self._remember_push(task_id, bool(rows[0][0]))
        return True

    def _push_returning(self, connection: Any, task_id: str) -> tuple[str, list[str]]:
        """The ``RETURNING`` clause that makes a task's write also say whether the task
        has push configs (an index lookup in the same statement: no round trip), and its
        parameter; ("", []) on a database without ``UPDATE ... RETURNING``. Push delivery
        then skips a version no config can want (:meth:`OrmPushConfigStore.has_configs`)
        instead of querying the configs of every saved version."""
        if not _returns_rows(connection):
            return "", []
        qn = connection.ops.quote_name
        meta = PushConfigRecord._meta
        column = qn(meta.get_field("task_id").column)
        return f" RETURNING EXISTS (SELECT 1 FROM {qn(meta.db_table)} WHERE {column} = %s)", [task_id]

    def _remember_push(self, task_id: str, found: bool) -> None:
        if len(self._push_seen) >= _MAX_PUSH_SEEN:  # entries only matter between a save and its publish
            self._push_seen.clear()
        self._push_seen[task_id] = found

    def _version_of(self, task_id: str) -> int | None:
        row = self.objects.filter(pk=task_id).values_list("version", "task").first()
        if row is None:
            return None
        return row[0] or task_version(row[1] if isinstance(row[1], dict) else None)

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
        # Every page counts (a page token carries no total a client could alter): from the
        # triggers' counters when they can answer, else through the filters' index.
        total = self._counted(query)
        if total is None:
            total = rows.count()
        if query.page_token:
            updated, last_id = decode_cursor(query.page_token)
            when = parse_timestamp(updated)
            # updated_at <= when is the index range; the OR only trims the ties.
            rows = rows.filter(updated_at__lte=when).filter(Q(updated_at__lt=when) | Q(id__lt=last_id))
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

    def _counted(self, query: TaskQuery) -> int | None:
        """The listing's total from the counters the triggers keep (``TaskCount``): a
        sum of at most 16 rows per owner and state, whatever the number of tasks, and
        exact (they change in the transaction that changes the task row). None when the
        counters cannot answer: a context or ``updated_after`` filter (counted through
        their index: a context's tasks, the tasks updated since), or a database without
        the triggers."""
        if query.context_id is not None or query.updated_after is not None:
            return None
        connection = self._connection()
        if not counted_by_triggers(connection):
            return None
        qn = connection.ops.quote_name
        where, params = [], []
        if query.owner is not None:
            where.append(f"{qn('owner')} = %s")
            params.append(query.owner)
        if query.state is not None:
            where.append(f"{qn('state')} = %s")
            params.append(query.state)
        sql = f"SELECT COALESCE(SUM({qn('n')}), 0) FROM {qn(TaskCount._meta.db_table)}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            (total,) = cursor.fetchone()
        return int(total)

    def create_push_configs(self) -> PushConfigStore:
        return OrmPushConfigStore(using=self.using, seen=self._push_seen)

    @contextlib.contextmanager
    def locked(self, task_id: str) -> Iterator[None]:
        """A transaction whose first statement writes the task's row unchanged (``UPDATE
        ... SET version = version``): the row lock it takes (PostgreSQL, MySQL) makes every
        other UPDATE or DELETE of the row wait for the commit, and on SQLite the write
        takes the database's write lock (as :mod:`stores.orm_contexts` does). The
        block's save commits as the block ends. A row at version 0 (a task saved without
        ``_version``) is not held: its save may INSERT, which takes its conversation's
        lock (a delete of the conversation takes that lock, then the rows'), and that
        order is kept."""
        self._connection()  # checked before the transaction: inside, it is left as it is
        with transaction.atomic(using=self.using):
            try:
                self.objects.filter(pk=task_id, version__gt=0).update(version=F("version"))
            except (OperationalError, InterfaceError) as exc:
                raise StoreUnavailable("could not lock the task now: the database is unavailable; try again") from exc
            yield

    def delete(self, task_id: str) -> bool:
        """Remove the task's row and its push notification configs' rows, in one
        transaction; True when there was a task."""
        with transaction.atomic(using=self.using):
            deleted, _ = self.objects.filter(pk=task_id).delete()
            self.push_configs.delete_task_push_configs(task_id)
        return bool(deleted)

    def scan_older(self, state: str, before: dt.datetime) -> Iterator[Task]:
        """An index range (``stores_task_state_idx``), oldest first, a page of 100 rows
        at a time after the last one read (rows deleted meanwhile are simply gone)."""
        after: tuple[dt.datetime, str] | None = None
        while True:
            rows = self.objects.filter(state=state, updated_at__lt=before)
            if after is not None:
                rows = rows.filter(Q(updated_at__gt=after[0]) | Q(updated_at=after[0], id__gt=after[1]))
            page = list(rows.order_by("updated_at", "id").values_list("task", "updated_at", "id")[:MAX_PAGE_SIZE])
            yield from (task for task, _, _ in page if isinstance(task, dict))
            if len(page) < MAX_PAGE_SIZE:
                return
            after = (page[-1][1], page[-1][2])

    def delete_many(self, tasks: Collection[Task]) -> builtins.list[str]:
        """The rows still at the version read, with their push configs' rows: one
        transaction of one ``DELETE`` per version among them (and one for the configs)."""
        by_version: dict[int, builtins.list[str]] = {}
        for task in tasks:
            by_version.setdefault(task_version(task), []).append(task["id"])
        gone: builtins.list[str] = []
        with transaction.atomic(using=self.using):
            connection = self._connection()
            for version, ids in by_version.items():
                for start in range(0, len(ids), _DELETE_CHUNK):
                    gone += self._delete_rows(connection, ids[start : start + _DELETE_CHUNK], version)
            for start in range(0, len(gone), _DELETE_CHUNK):
                PushConfigRecord.objects.using(self.using).filter(
                    task_id__in=gone[start : start + _DELETE_CHUNK]
                ).delete()
        return gone

    def delete_contexts(self, contexts: Sequence[Collection[Task]]) -> builtins.list[Task]:
        """Each conversation whole or not at all, decided at the moment of the delete:
        one transaction for the batch, which first stops the conversations from changing
        (see :mod:`stores.orm_contexts`)."""
        with transaction.atomic(using=self.using):
            return delete_contexts(self._connection(), contexts)

    def _delete_rows(self, connection: Any, ids: builtins.list[str], version: int) -> builtins.list[str]:
        """``DELETE ... WHERE id IN (...) AND version = %s``: the ids deleted (a row saved
        before the version column existed has 0 there: its task's version is not compared)."""
        rows = self.objects.filter(pk__in=ids).filter(Q(version=version) | Q(version=0))
        if not _returns_rows(connection):
            found = list(rows.values_list("id", flat=True))
            self.objects.filter(pk__in=found).delete()
            return found
        qn = connection.ops.quote_name
        meta = TaskRecord._meta
        version_column = qn(meta.get_field("version").column)
        sql = (
            f"DELETE FROM {qn(meta.db_table)} WHERE {qn(meta.pk.column)} IN ({', '.join(['%s'] * len(ids))}) "
            f"AND {version_column} IN (%s, 0) RETURNING {qn(meta.pk.column)}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*ids, version])
            return [task_id for (task_id,) in cursor.fetchall()]

    def check(self, *, databases: Collection[str] | None = None) -> builtins.list[CheckMessage]:
        """With ``databases`` naming this store's database (the server's start-up checks,
        :func:`a2a.ops.checks.startup.startup_errors`): ``stores.E002`` when the ``stores``
        migrations are not all applied there (every request would fail on a missing table
        or column). ``manage.py check`` and ``migrate`` do not pass it: ``migrate`` runs the
        system checks before it creates the tables. Always (no query): ``stores.E004``
        when the database is a SQLite file that cannot be created or written."""
        unwritable = self._sqlite_file_problem()
        if unwritable or databases is None or self.using not in databases:
            return unwritable
        try:
            executor = MigrationExecutor(connections[self.using])
            targets = [key for key in executor.loader.graph.leaf_nodes() if key[0] == "stores"]
            plan = executor.migration_plan(targets)
        except DatabaseError as exc:  # down for now: the server may start and retry
            return [
                Warning(
                    f"TASK_STORE is the ORM store on database {self.using!r}, which cannot be read now: {exc}",
                    id="stores.W002",
                )
            ]
        if not plan:
            return []
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan)
        return [
            Error(
                f"TASK_STORE is the ORM store on database {self.using!r}, where the stores app's "
                f"migrations are not applied: {names}.",
                hint=f"Run `python manage.py migrate --database {self.using}`."
                if self.using != "default"
                else "Run `python manage.py migrate`.",
                id="stores.E002",
            )
        ]

    def _sqlite_file_problem(self) -> builtins.list[CheckMessage]:
        """``stores.E004`` when the database is a SQLite file this process cannot create
        or write (SQLite writes its journal, or WAL and shared-memory files, beside it)."""
        if self.using not in connections.settings:  # TASK_STORE's own check names a missing alias
            return []
        connection = connections[self.using]
        name = connection.settings_dict.get("NAME")
        in_memory = isinstance(name, str) and (name == ":memory:" or "mode=memory" in name)  # as Django's sqlite3
        if connection.vendor != "sqlite" or not name or in_memory:
            return []
        path = Path(name)
        problem = (
            directory_problem(path.parent) if path.parent.is_dir() else "does not exist (SQLite creates no directory)"
        )
        if problem is None and path.exists():
            try:
                with path.open("r+b"):  # opened for writing, nothing written
                    pass
            except OSError as exc:
                problem = f"holds {path.name}, which cannot be written: {exc.strerror or exc}"
        if problem is None:
            return []
        return [
            Error(
                f"TASK_STORE is the ORM store on database {self.using!r}, a SQLite file in {path.parent}, "
                f"which {problem}.",
                hint="Point DATABASES[" + repr(self.using) + "]['NAME'] at a file in a directory this process may "
                "create and write (e.g. BASE_DIR / 'db.sqlite3').",
                id="stores.E004",
            )
        ]

    def __repr__(self) -> str:
        return f"<OrmTaskStore using={self.using!r}>"
