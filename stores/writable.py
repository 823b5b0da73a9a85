"""Whether a store's directory can be created and written, tried rather than guessed.

``os.access`` answers from the permission bits, which root bypasses: as root,
``/proc/x`` or a directory on a read-only mount look writable and the first save fails.
So the check does what the store will do, and undoes it: it creates a temporary
directory in the nearest existing ancestor (when the directory does not exist yet) or a
temporary file in the directory (when it does), then removes it. Nothing is left behind.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

#: The prefix of the probe's temporary names (a crash between create and remove leaves one).
PROBE_PREFIX = ".a2a-write-probe-"


def _nearest_existing(directory: Path) -> Path:
    existing = directory
    while not os.path.lexists(existing) and existing.parent != existing:
        existing = existing.parent
    return existing


def _reason(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    return f"{exc.strerror or exc}{f' ({name})' if name else ''}"


def directory_problem(directory: Path) -> str | None:
    """Why ``directory`` cannot be created (with its parents) and written by this
    process, as a phrase to follow its path ("is not a directory", "cannot be written:
    Read-only file system (EROFS)"); None when it can."""
    existing = _nearest_existing(directory)
    if not existing.is_dir():
        return f"cannot be created: {existing} is not a directory"
    try:
        if existing == directory:
            fd, probe = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
            os.close(fd)
            os.unlink(probe)
        else:
            shutil.rmtree(tempfile.mkdtemp(prefix=PROBE_PREFIX, dir=existing))
    except OSError as exc:
        verb = "written" if existing == directory else f"created in {existing}"
        return f"cannot be {verb}: {_reason(exc)}"
    return None
