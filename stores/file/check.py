"""Bringing a loaded index snapshot in line with the task directory.

A snapshot says which version (stamp) of each task file it indexed. The check lists
the directory (names and inode numbers: no file read, no ``stat``) and reads again
every file whose stamp differs (replaced by anything: another program, a copy, a
write whose journal line a crash lost), every new file, and every task whose file is
gone. It runs before the first page, or in a background thread that pauses while
pages are served (see :class:`stores.file.index.SharedIndex` for which).
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from stores.base import Task
from stores.file.live import LiveIndex
from stores.file.mapped import IndexSource, MappedIndex
from stores.file.snapshot import SnapshotDamaged

logger = logging.getLogger(__name__)

#: What the check read: (task id, the task or None when gone, its stamp).
Found = list[tuple[str, Task | None, int]]


class DirectoryCheck:
    """The directory check of ``live``'s index. :attr:`checked` is set once the index
    in use agrees with the directory; ``checked_hook`` runs after a background check
    completes (the caller persists the index when enough changed)."""

    def __init__(self, live: LiveIndex, source: IndexSource, checked_hook: Callable[[], None]) -> None:
        self.live = live
        self.source = source
        self.checked_hook = checked_hook
        self.checked = threading.Event()
        self._paging = 0  # pages being served: the background check waits for none
        self._quiet = threading.Condition()

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Around a page: the background check pauses meanwhile."""
        with self._quiet:
            self._paging += 1
        try:
            yield
        finally:
            with self._quiet:
                self._paging -= 1
                self._quiet.notify_all()

    def unchanged(self, directory: Any) -> bool:
        """Whether the directory is as it was when a snapshot's index last agreed with
        it: its version (the file store's: the directory's ctime) is the same, and was
        already a second old then (a change made in the same tick of the filesystem's
        clock as that check would not show)."""
        try:
            version, seen_at = directory
            return (
                isinstance(version, int) and isinstance(seen_at, int) and version < seen_at - 1_000_000_000
            ) and self.source.version() == version
        except (TypeError, ValueError, OSError):
            return False

    def pause(self) -> None:
        """In the background check, every few dozen entries: wait while pages are
        served (a short while at a time: a steady stream of pages slows the check,
        never stops it), else let go of the GIL a moment (a page about to start gets it
        now, not after the interpreter's switch interval)."""
        with self._quiet:
            self._quiet.wait_for(lambda: not self._paging, timeout=0.05)
        time.sleep(0)

    def start(self, directory: Any, touched: set[str]) -> None:
        """Run :meth:`in_background` in a thread of its own."""
        self.checked.clear()
        # not threading.Thread: its start() waits until the thread runs, which on a busy
        # machine delays the first page
        _thread.start_new_thread(self.in_background, (directory, touched))

    def in_background(self, directory: Any, touched: set[str]) -> None:
        """The directory check of the index built with ``touched`` (the ids written
        since it began): a no-op once that index was dropped (another build runs its
        own check)."""
        self.pause()  # after the page that built the index
        try:
            changed = self.check(None, None, self.pause, touched)
        except Exception as exc:
            # The next page builds the index again (and checks the directory again).
            if isinstance(exc, SnapshotDamaged):
                self.live.distrusted(exc)
            else:
                logger.warning("task index: checking %s against the directory failed: %s", self.live.where, exc)
                with self.live.lock:
                    if self.live.touched is touched:
                        self.live.index = None
            return
        with self.live.lock:
            if self.live.touched is not touched or self.live.index is None:
                return  # dropped meanwhile: the next build checks again
            self.live.touched = None
            self.live.directory = directory
            self.live.changes += changed
        self.checked.set()
        self.checked_hook()

    def check(
        self,
        index: MappedIndex | None,
        odd: dict[str, str] | None,
        pause: Callable[[], None],
        touched: set[str] | None = None,
    ) -> int:
        """Bring a loaded snapshot in line with the directory. Before the index is in
        use (``index`` and its ``odd`` names given) it is changed directly; in the
        background, the live index is, under the lock, if it is still the one built
        with ``touched`` (the ids written since the check began, left as they are: what
        they say is newer). Returns how many tasks were read."""
        live = self.live
        if index is None or odd is None:
            with live.lock:
                if live.touched is not touched or live.index is None:
                    return 0
                frozen, names = live.index.frozen(), dict(live.odd)
        else:
            frozen, names = index, odd
        indexed: dict[str, int] = {}
        for n, (task_id, stamp) in enumerate(frozen.stamps()):
            indexed[task_id] = stamp
            if n % 32 == 0:
                pause()
        del frozen
        found = self._differences(indexed, names, pause)
        if index is not None and odd is not None:
            for task_id, task, stamp in found:
                live.apply(index, odd, task_id, task, stamp, new=task_id not in indexed)
            return len(found)
        with live.lock:
            if touched is not None and live.touched is touched and live.index is not None:
                for task_id, task, stamp in found:
                    if task_id in touched:
                        continue  # what it says is newer
                    if task is None:
                        live.remove(task_id)
                    else:  # not indexed when the check began, nor written since: not in the snapshot
                        live.put(task, stamp, new=task_id not in indexed)
        return len(found)

    def _differences(self, indexed: dict[str, int], names: dict[str, str], pause: Callable[[], None]) -> Found:
        """What differs between the ``indexed`` stamps (``names``: file name -> task id,
        where they differ) and the directory, read again."""
        stamp_of, renamed = indexed.get, names.get
        changed, present = [], set()
        for n, (name, stamp) in enumerate(self.source.files()):
            task_id = renamed(name, name)
            present.add(task_id)
            if not stamp or stamp_of(task_id) != stamp:
                changed.append(name)
            if n % 32 == 0:
                pause()
        found: Found = []
        for name in changed:
            task, stamp = self.source.read_file(name)
            if task is not None:
                found.append((task["id"], task, stamp))
                present.add(task["id"])
            pause()
        # no file of its own name holds these (now): read each where it belongs
        for n, task_id in enumerate(indexed):
            if task_id not in present:
                found.append((task_id, *self.source.load_stamped(task_id)))
                pause()
            elif n % 32 == 0:
                pause()
        return found
