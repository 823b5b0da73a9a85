"""The periodic orphan sweep: stored files no task references, removed without an operator
(what they are: :mod:`a2a.core.file_orphans`).

Every server process and queue worker runs :func:`keep_sweeping` beside the retention
sweep (the lease reaper's loop, :func:`a2a.runtime.reaper.maintain`): every
``A2A_FILES_ORPHAN_INTERVAL`` seconds (with jitter) one pass looks at :data:`PER_PASS`
task directories, going on from where the last pass stopped, and lists the storage's
directories again once it has been through them all. Several processes sweeping at once
is harmless: a file is removed only when no task references it, and a removed file is
gone for the others.
"""

from __future__ import annotations

import asyncio
import logging
import random

from a2a.agents import task_stores_in_use
from a2a.conf import a2a_settings
from a2a.core import file_orphans

logger = logging.getLogger(__name__)

#: Task directories one pass looks at (each: a listing, a date per file, a read per store).
PER_PASS = 200


class Sweeper:
    """Passes over the task directories, :data:`PER_PASS` at a time, round and round."""

    def __init__(self, per_pass: int = PER_PASS) -> None:
        self.per_pass = per_pass
        self.pending: list[str] = []

    def next_directories(self) -> list[str]:
        """The next directories to look at (the storage listed again when all were seen)."""
        if not self.pending:
            self.pending = file_orphans.task_directories()
        batch, self.pending = self.pending[: self.per_pass], self.pending[self.per_pass :]
        return batch

    def run_pass(self) -> list[file_orphans.Orphan]:
        """One pass, blocking: the orphans it removed (each logged)."""
        grace = a2a_settings.FILES_ORPHAN_GRACE
        removed = file_orphans.sweep(task_stores_in_use(), self.next_directories(), older_than=grace)
        for orphan in removed:
            logger.info("removed stored file %s (%s, %.0f s old)", orphan.name, orphan.reason, orphan.age)
        return removed


async def keep_sweeping(sweeper: Sweeper | None = None) -> None:
    """One pass every ``A2A_FILES_ORPHAN_INTERVAL`` seconds (with jitter), in a worker
    thread, for as long as the loop runs; nothing while the interval is 0 (read again each
    time). A failing pass is logged and tried again at the next."""
    sweeper = sweeper or Sweeper()
    while True:
        try:
            interval = a2a_settings.FILES_ORPHAN_INTERVAL
        except Exception:  # the setting's own check says why
            logger.exception("A2A_FILES_ORPHAN_INTERVAL cannot be used; no stored file is swept")
            interval = 0.0
        if interval <= 0:
            await asyncio.sleep(60)
            continue
        await asyncio.sleep(interval * random.uniform(0.8, 1.2))  # the processes do not all sweep at once
        try:
            await asyncio.to_thread(sweeper.run_pass)
        except Exception:
            logger.exception("the sweep of stored files failed; trying again at the next one")
