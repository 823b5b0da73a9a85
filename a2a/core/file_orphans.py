"""Stored files no task references (:mod:`a2a.core.files`): found and removed.

A file part is written to the storage whole, then the task that references it is saved
(a storage without an atomic rename, S3, has no other order that never shows a partial
file). A crash between the two leaves a file, often partial, under ``a2a-files/<task id>/``
that no task references; so does a follow-up message refused after its files were
written (it discards them at once, unless the process dies first) and a message a
``direct_reply`` handler answered without a task. Such a file is an *orphan* once it is
older than the grace period (``A2A_FILES_ORPHAN_GRACE``): a younger one may be on its
way into a task. A file is kept while a task of that id in any of ``stores`` (every store
in use: the agents may have their own) references it; the download route serves only
those (:func:`a2a.core.files.referenced`), so an orphan was never reachable.

``manage.py a2a_repair`` removes them all (or lists them, ``--dry-run``); every server
process removes them a bounded number of task directories at a time
(:mod:`a2a.runtime.file_sweep`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from a2a.core import files
from stores.base import TaskStore

#: The storage directory every task's files are under.
ROOT = "a2a-files"


@dataclass(frozen=True)
class Orphan:
    """One stored file no task references: its storage ``name``, why (``reason``: its task
    does not exist, or does not reference it) and its ``age`` in seconds."""

    name: str
    reason: str
    age: float


def task_directories() -> list[str]:
    """The task ids that have a directory (a prefix) of stored files, sorted."""
    try:
        directories, _names = files.storage().listdir(ROOT)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(directories)


def _age(name: str, now: dt.datetime) -> float | None:
    """Seconds since ``name`` was last written; None when the storage cannot tell (or the
    file went meanwhile): such a file is never taken for an orphan."""
    try:
        modified = files.storage().get_modified_time(name)
    except (NotImplementedError, FileNotFoundError, OSError):
        return None
    if modified.tzinfo is None:  # USE_TZ = False: the storage answers in local time
        modified = modified.astimezone()
    return (now - modified).total_seconds()


def orphans_of(task_id: str, stores: Sequence[TaskStore], *, older_than: float) -> list[Orphan]:
    """The orphans of one task directory: its files older than ``older_than`` seconds that
    no task ``task_id`` of ``stores`` references. The files are dated before the tasks
    are read, so a file saved into a task meanwhile is seen as referenced."""
    directory = files.prefix(task_id)
    try:
        _dirs, names = files.storage().listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    now = dt.datetime.now(dt.UTC)
    aged = {f"{directory}/{n}": age for n in names if (age := _age(f"{directory}/{n}", now)) is not None}
    old = {name: age for name, age in aged.items() if age > older_than}
    if not old:
        return []
    tasks = [task for store in stores if (task := store.get(task_id)) is not None]
    kept = set().union(*(files.referenced(task) for task in tasks))
    reason = "not referenced by its task" if tasks else "its task does not exist"
    return [Orphan(name, reason, age) for name, age in sorted(old.items()) if name not in kept]


def find(stores: Sequence[TaskStore], *, older_than: float, task_ids: Iterable[str] | None = None) -> Iterator[Orphan]:
    """The orphans of ``task_ids``' directories (default: every one), one directory at a time."""
    for task_id in task_directories() if task_ids is None else task_ids:
        yield from orphans_of(task_id, stores, older_than=older_than)


def remove(orphans: Iterable[Orphan]) -> list[Orphan]:
    """Delete ``orphans`` (and each directory they leave empty); those deleted."""
    removed = list(orphans)
    files.discard(orphan.name for orphan in removed)
    return removed


def remove_empty_directories(task_ids: Iterable[str], *, older_than: float) -> list[str]:
    """Remove the empty directories of ``task_ids`` older than ``older_than`` seconds (a
    crash between creating one and writing the file; FileSystemStorage only); those removed."""
    return [t for t in task_ids if files.remove_empty_directory(files.prefix(t), older_than=older_than)]


def sweep(stores: Sequence[TaskStore], task_ids: Iterable[str], *, older_than: float) -> list[Orphan]:
    """Remove the orphans and the old empty directories of ``task_ids``; the orphans removed."""
    task_ids = list(task_ids)
    removed = remove(find(stores, older_than=older_than, task_ids=task_ids))
    remove_empty_directories(task_ids, older_than=older_than)
    return removed
