"""``manage.py a2a_leases``: settle the tasks whose process died (their lease expired).

Every server process does this by itself at start and every
``A2A_LEASE_CHECK_INTERVAL`` seconds (see :mod:`a2a.core.leases`); the command does it
once, e.g. from cron when no server runs, or to look (``--dry-run``). It has no
server to re-run tasks in, so it saves every expired one as ``failed``, its status
message saying that the process running it stopped and when its lease expired. It
looks in every store the agents' tasks live in (the project's ``TASK_STORE`` and each
agent's own, see docs/agents.md), or in the one ``--store`` names::

    manage.py a2a_leases [--store SPEC] [--dry-run]
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a.agents import task_stores_in_use
from a2a.runtime import reaper
from stores.backends import resolve_store


class Command(BaseCommand):
    help = "Fail the submitted/working tasks whose lease expired (the process running them died)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--store", metavar="SPEC", help="a TASK_STORE value (default: the configured stores)")
        parser.add_argument("--dry-run", action="store_true", help="only list the tasks whose lease expired")

    def handle(self, *args: Any, store: str | None = None, dry_run: bool = False, **options: Any) -> None:
        try:
            targets = task_stores_in_use() if store is None else [resolve_store(store)]
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        reaped = [item for target in targets for item in reaper.reap(target, dry_run=dry_run)]
        for item in reaped:
            if item.outcome == "skipped":
                continue
            verb = "lease expired" if dry_run else item.outcome
            self.stdout.write(f"{item.task_id}: {verb} ({item.state}, lease expired at {item.expired})")
        count = sum(1 for r in reaped if r.outcome != "skipped")
        noun = "task" if count == 1 else "tasks"
        self.stderr.write(f"{'Found' if dry_run else 'Failed'} {count} {noun} with an expired lease.")
