"""The file task store: one ``<id>.json`` per task, toolnexus-compatible.

The modules, from the bottom up (each imports only those below it, as
``lint-imports`` holds):

- :mod:`~stores.file.fsio`: atomic writes, directory fsync (group commit), temp files,
  reads: every file operation of the store;
- :mod:`~stores.file.journal` (what other processes wrote), :mod:`~stores.file.snapshot`
  (the listing index on disk) and :mod:`~stores.file.taskfile` (a task file's name,
  content check, lock);
- :mod:`~stores.file.mapped`: the index over a mapped snapshot plus the changes since;
- :mod:`~stores.file.live`: the index in use and its lock;
- :mod:`~stores.file.check`: a loaded snapshot checked against the directory;
- :mod:`~stores.file.index` (the shared listing index), :mod:`~stores.file.push`
  (push notification configs) and :mod:`~stores.file.contexts` (each conversation's lock,
  the record of a delete of one under way);
- :mod:`~stores.file.store`: :class:`FileTaskStore`.
"""

from stores.file.fsio import NOT_CACHED, STALE_TEMP_SECONDS, DirectorySync
from stores.file.push import FILE_SUBDIRECTORY, FilePushConfigStore
from stores.file.store import FileTaskStore

__all__ = [
    "FILE_SUBDIRECTORY",
    "NOT_CACHED",
    "STALE_TEMP_SECONDS",
    "DirectorySync",
    "FilePushConfigStore",
    "FileTaskStore",
]
