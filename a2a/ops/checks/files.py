"""The check of the file-part settings (:mod:`a2a.core.files`): a storage alias that
``STORAGES`` has (``a2a.E120``)."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error

from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern


@concern(
    "A2A_FILES_STORAGE",
    "A2A_FILES_OFFLOAD_BYTES",
    "A2A_FILES_MAX_PART_BYTES",
    "A2A_FILES_MAX_TASK_BYTES",
    "A2A_FILES_ORPHAN_GRACE",
    "A2A_FILES_ORPHAN_INTERVAL",
)
def check_files() -> Messages:
    """``a2a.E120``: ``A2A_FILES_STORAGE`` names no ``STORAGES`` alias."""
    alias = a2a_settings.FILES_STORAGE
    if alias in settings.STORAGES:
        return []
    return [
        Error(
            f"A2A_FILES_STORAGE {alias!r} is not an alias of STORAGES ({', '.join(settings.STORAGES) or 'none'}).",
            hint='Name one of STORAGES, e.g. "default", or add it there.',
            id="a2a.E120",
        )
    ]
