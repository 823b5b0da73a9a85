"""The file store's conversations (one owner's tasks of one ``contextId``): the lock of
each, and the record of a delete of one under way.

A conversation is deleted whole or not at all (``FileTaskStore.delete_contexts``): under
its lock, which the creation of a task in it takes too, and under the locks of all its
tasks. Its files are then removed one by one, so a crash in the middle would leave part
of it: before the first, the delete writes down what it removes (the tasks and their
versions, ``.locks/deleting/<hash>.json``, written atomically), and removes the record after the
last. A record found later (a crash) is finished, under the conversation's lock, by the
next delete of any conversation (each retention sweep) and before a task is created in
that conversation: the tasks it names still at the versions named are removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path

import orjson

from stores.file import fsio
from stores.file.syscalls import Syscalls
from stores.file.taskfile import TaskLocks

logger = logging.getLogger(__name__)

#: A conversation: (its scope key, its ``contextId``), as :func:`stores.scope.task_context` gives it.
Context = tuple[str, str]

#: Subdirectories of the lock directory: the conversations' locks, the deletes under way.
LOCKS = "contexts"
DELETING = "deleting"


def _name(context: Context) -> str:
    owner, context_id = context
    return hashlib.sha256(f"{owner}\x00{context_id}".encode("utf-8", "surrogatepass")).hexdigest()[:40]


class Conversations:
    """The conversations' locks (striped ``flock`` files, as the tasks' are) and the
    records of their deletes under way, under ``lock_dir``."""

    def __init__(self, lock_dir: str | os.PathLike[str], syscalls: Syscalls) -> None:
        self.syscalls = syscalls
        self._locks = TaskLocks(os.path.join(lock_dir, LOCKS))
        self.deleting = Path(lock_dir, DELETING)

    def hold(self, context: Context, *, shared: bool = False) -> contextlib.AbstractContextManager[None]:
        """Hold the lock of ``context`` (across threads and processes): exclusive for a
        delete; ``shared`` for the creation of a task in it, so creations in one
        conversation still run side by side (and share their directory fsyncs)."""
        return self._locks.hold(_name(context), shared=shared)

    def reopen(self) -> None:
        """Open the lock files again on their next hold (see :meth:`TaskLocks.reopen`)."""
        self._locks.reopen()

    def begin(self, context: Context, versions: dict[str, int]) -> None:
        """Write down that ``context``'s tasks ``versions`` (id -> version) are being
        removed. Under its lock. Atomic, not fsynced: it outlives the process, as the
        removals do; like them (a delete is never fsynced) it may not outlive a power loss."""
        self.deleting.mkdir(parents=True, exist_ok=True)
        record = {"owner": context[0], "context": context[1], "tasks": versions}
        fsio.atomic_write(self.deleting / f"{_name(context)}.json", orjson.dumps(record), self.syscalls, fsync=False)

    def end(self, context: Context) -> None:
        """The delete of ``context`` is done: forget its record."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.deleting / f"{_name(context)}.json")

    def recorded(self) -> list[Context]:
        """The conversations with a record of a delete: interrupted by a crash, or under
        way in another thread or process (:meth:`record` under the conversation's lock tells)."""
        try:
            paths = [p for p in self.deleting.iterdir() if p.suffix == ".json" and not p.name.startswith(".")]
        except FileNotFoundError:
            return []
        return [found[0] for found in map(self._read, paths) if found is not None]

    def record(self, context: Context) -> dict[str, int] | None:
        """Task id -> version of the record of a delete of ``context`` (one ``stat`` when
        there is none): under the conversation's lock, a delete a crash interrupted."""
        found = self._read(self.deleting / f"{_name(context)}.json")
        return found[1] if found is not None else None

    def _read(self, path: Path) -> tuple[Context, dict[str, int]] | None:
        try:
            record = orjson.loads(fsio.read_file(path, self.syscalls, to_end=True))
            return (record["owner"], record["context"]), {str(k): int(v) for k, v in record["tasks"].items()}
        except FileNotFoundError:
            return None
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            logger.warning("removing the unreadable record of a delete %s: %s", path, exc)
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None
