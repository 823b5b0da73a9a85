"""``manage.py a2a_repair``: set aside damaged task files, remove left-over temp files.

The file store reads a task file that does not parse (or was hand-edited to hold
another task's id) as missing, and logs it once. This command moves each such file
into ``<task dir>/.corrupt/`` (named ``<file>.<UTC time>``, never replacing a file
there), so it can be inspected or fixed and moved back, and removes the temp files
(``.tmp-*``) that interrupted writes left behind::

    manage.py a2a_repair [--store file:<dir>] [--dry-run] [--temp-age SECONDS]

On the ORM store it lists the rows that do not hold a task (it moves nothing).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from stores.backends import get_task_store, resolve_store
from stores.file import STALE_TEMP_SECONDS, FileTaskStore
from stores.orm import OrmTaskStore


class Command(BaseCommand):
    help = "Move damaged task files into .corrupt/ and remove temp files left by interrupted writes."

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

    def handle(self, *args: Any, store: str | None, dry_run: bool, temp_age: float, **options: Any) -> None:
        try:
            target = get_task_store() if store is None else resolve_store(store)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        if isinstance(target, OrmTaskStore):
            self.repair_orm(target)
        elif isinstance(target, FileTaskStore):
            self.repair_files(target, dry_run=dry_run, temp_age=temp_age)
        else:
            self.stderr.write(f"Nothing to repair in {target!r}.")

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
