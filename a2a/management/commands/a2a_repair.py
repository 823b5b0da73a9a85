"""``manage.py a2a_repair``: set aside damaged task files, remove left-over temp files
and stored files no task references.

The file store reads a task file that does not parse (or was hand-edited to hold
another task's id) as missing, and logs it once. This command moves each such file
into ``<task dir>/.corrupt/`` (named ``<file>.<UTC time>``, never replacing a file
there), so it can be inspected or fixed and moved back, and removes the temp files
(``.tmp-*``) that interrupted writes left behind::

    manage.py a2a_repair [--store file:<dir>] [--dry-run] [--temp-age SECONDS] [--file-age SECONDS]

On the ORM store it lists the rows that do not hold a task (it moves nothing).

Then, on every store, it removes the stored files (``A2A_FILES_STORAGE``, docs/files.md)
that no task of the stores in use references, older than ``--file-age`` (default
``A2A_FILES_ORPHAN_GRACE``): what a crash between a file's write and its task's save
left (:mod:`a2a.core.file_orphans`).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a.agents import task_stores_in_use
from a2a.conf import a2a_settings
from a2a.core import file_orphans
from stores.backends import get_task_store, resolve_store
from stores.base import TaskStore
from stores.file import STALE_TEMP_SECONDS, FileTaskStore
from stores.orm import OrmTaskStore


class Command(BaseCommand):
    help = (
        "Move damaged task files into .corrupt/, remove temp files left by interrupted writes and stored files "
        "no task references."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--store", metavar="SPEC", help="a TASK_STORE value (default: the configured store)")
        parser.add_argument("--dry-run", action="store_true", help="only list what would be moved or removed")
        parser.add_argument(
            "--temp-age",
            type=float,
            default=STALE_TEMP_SECONDS,
            metavar="SECONDS",
            help=f"remove temp files older than this (default {STALE_TEMP_SECONDS:g})",
        )
        parser.add_argument(
            "--file-age",
            type=float,
            default=None,
            metavar="SECONDS",
            help="remove stored files no task references older than this (default A2A_FILES_ORPHAN_GRACE; 0 "
            "only when no server is running: a younger file may be on its way into its task)",
        )

    def handle(
        self, *args: Any, store: str | None, dry_run: bool, temp_age: float, file_age: float | None, **options: Any
    ) -> None:
        try:
            target = get_task_store() if store is None else resolve_store(store)
            in_use = task_stores_in_use()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        if file_age is not None and file_age < 0:
            raise CommandError("--file-age must be 0 or more seconds.")
        if isinstance(target, OrmTaskStore):
            self.repair_orm(target)
        elif isinstance(target, FileTaskStore):
            self.repair_files(target, dry_run=dry_run, temp_age=temp_age)
        else:
            self.stderr.write(f"Nothing to repair in {target!r}.")
        stores = [*in_use, *([target] if all(repr(s) != repr(target) for s in in_use) else [])]
        grace = a2a_settings.FILES_ORPHAN_GRACE if file_age is None else file_age
        self.remove_orphans(stores, dry_run=dry_run, older_than=grace)

    def remove_orphans(self, stores: list[TaskStore], *, dry_run: bool, older_than: float) -> None:
        """The stored files no task of ``stores`` references, older than ``older_than`` seconds."""
        private = [s for s in stores if not s.shared]
        if private:  # their tasks live in the server's memory, not in this process
            self.stderr.write(f"Stored files not checked: the tasks of {private[0]!r} are not visible from here.")
            return
        task_ids = file_orphans.task_directories()
        found = list(file_orphans.find(stores, older_than=older_than, task_ids=task_ids))
        for orphan in found:
            self.stdout.write(f"{orphan.name}: {orphan.reason} ({orphan.age:.0f} s old)")
        if dry_run:
            self.stderr.write(f"Would remove {len(found)} stored file(s) no task references.")
            return
        file_orphans.remove(found)
        emptied = file_orphans.remove_empty_directories(task_ids, older_than=older_than)
        self.stderr.write(
            f"Removed {len(found)} stored file(s) no task references and {len(emptied)} empty directory(ies)."
        )

    def repair_files(self, store: FileTaskStore, *, dry_run: bool, temp_age: float) -> None:
        moved = 0
        for path, problem in store.damaged_files():
            if dry_run:
                self.stdout.write(f"{path}: {problem}")
                moved += 1
                continue
            target = store.set_aside(path)
            if target is not None:
                self.stdout.write(f"{path}: {problem}; moved to {target}")
                moved += 1
        if dry_run:
            temps = store.stale_temp_files(older_than=temp_age)
            for path in temps:
                self.stdout.write(f"{path}: temp file of an interrupted write")
            self.stderr.write(f"Would move {moved} damaged file(s) and remove {len(temps)} temp file(s).")
            return
        removed = store.clean_temp_files(older_than=temp_age)
        for path in removed:
            self.stdout.write(f"{path}: removed (temp file of an interrupted write)")
        self.stderr.write(
            f"Moved {moved} damaged file(s) to {store.directory / '.corrupt'}; removed {len(removed)} temp file(s)."
        )

    def repair_orm(self, store: OrmTaskStore) -> None:
        bad = 0
        for task_id, task in store.objects.values_list("id", "task").iterator():
            if not isinstance(task, dict) or task.get("id") != task_id:
                self.stdout.write(f"row {task_id!r}: does not hold task {task_id!r}")
                bad += 1
        self.stderr.write(f"{bad} damaged row(s) in database {store.using!r} (nothing moved).")
