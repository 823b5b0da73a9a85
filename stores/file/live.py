"""The file store's index in use: one :class:`~stores.file.mapped.MappedIndex`, the
bookkeeping around it, and the one lock every change of it is made under."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from stores.base import Task
from stores.file.mapped import IndexSource, MappedIndex
from stores.file.snapshot import SnapshotDamaged

logger = logging.getLogger(__name__)


class LiveIndex:
    """The index the pages are served from (``index``: None until built, and again
    whenever it is dropped to be built anew), and what is known about it.

    The attributes are read and changed under :attr:`lock` (held briefly); the
    methods but :meth:`follow` and :meth:`distrusted` expect the caller to hold it.
    """

    def __init__(self, source: IndexSource, where: object) -> None:
        self.source = source
        self.where = where  # named in the log messages
        self.lock = threading.Lock()
        self.index: MappedIndex | None = None
        self.odd: dict[str, str] = {}  # file name -> task id, where they differ
        #: The snapshot failed a check: the next build reads every file.
        self.distrust = False
        #: Ids changed since the snapshot being written was taken (kept over it).
        self.since: set[str] | None = None
        #: Ids changed since the background directory check began (it leaves them be).
        self.touched: set[str] | None = None
        #: Changes applied since the snapshot the index was loaded or saved as.
        self.changes = 0
        #: [directory version, when read (ns)]: the index agreed with the directory then.
        self.directory: list[int] | None = None
        self.building = False
        self.pending: set[str] = set()  # saved here while the index was being built

    def follow(self, task_id: str, task: Task | None, stamp: int) -> None:
        """Index this process's own write of ``task_id`` (``task`` None: deleted). A
        snapshot found damaged meanwhile drops the index: the write itself is done,
        never reported failed for it."""
        try:
            with self.lock:
                if self.index is not None:
                    if task is None:
                        self.remove(task_id)
                    else:
                        self.put(task, stamp)
                    self.changes += 1
                elif self.building:
                    self.pending.add(task_id)
        except SnapshotDamaged as exc:
            self.distrusted(exc)

    def distrusted(self, exc: Exception) -> None:
        """A snapshot record failed its check: log, and build the index from the files."""
        logger.warning("task index snapshot in %s does not check out (%s): rebuilding it", self.where, exc)
        with self.lock:
            self.distrust = True
            self.index = None

    def put(self, task: Task, stamp: int, *, new: bool = False) -> None:
        """Index ``task`` (the index built; ``new``: see :meth:`MappedIndex.put`)."""
        assert self.index is not None
        task_id = task["id"]
        self.index.put(task, stamp, new=new)
        self._note(task_id)
        name = self.source.name_of(task_id)
        if name != task_id:
            self.odd[name] = task_id

    def remove(self, task_id: str) -> None:
        """Forget ``task_id`` (the index built)."""
        assert self.index is not None
        self.index.remove(task_id)
        self._note(task_id)
        name = self.source.name_of(task_id)
        if name != task_id and self.odd.get(name) == task_id:
            del self.odd[name]

    def _note(self, task_id: str) -> None:
        for changed in (self.since, self.touched):
            if changed is not None:
                changed.add(task_id)

    def apply(
        self, index: MappedIndex, odd: dict[str, str], task_id: str, task: Task | None, stamp: int, *, new: bool
    ) -> None:
        """Index in ``index`` (not yet in use, its ``odd`` names beside it) what was read
        of ``task_id`` (None: gone); ``new``: it is not in the snapshot."""
        name = self.source.name_of(task_id)
        if task is None:
            index.remove(task_id)
            if odd.get(name) == task_id:
                del odd[name]
        else:
            index.put(task, stamp, new=new)
            if name != task_id:
                odd[name] = task_id

    def reload_all(self, task_ids: Iterable[str]) -> None:
        """Read each task again and index what it now is; when one cannot be read now
        (StoreUnavailable), the index is dropped, to be built again by the next page:
        the changes not yet applied are never lost, nor is a task taken for gone."""
        try:
            for task_id in task_ids:
                task, stamp = self.source.load_stamped(task_id)
                if task is None:
                    self.remove(task_id)
                else:
                    self.put(task, stamp)
                self.changes += 1
        except BaseException:
            self.index = None
            raise

    def load_or_forget(self, task_id: str) -> Task | None:
        """The task, for a page; one that is gone (or damaged) is forgotten: listed
        again once saved again."""
        task = self.source.load(task_id)
        if task is None and self.index is not None:
            self.remove(task_id)
        return task
