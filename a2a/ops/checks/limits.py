"""The check of the limits on requests, histories and slow clients (``a2a.E040``)."""

from __future__ import annotations

from django.core.checks import Error

from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern
from stores.base import MAX_PAGE_SIZE


@concern(
    "A2A_MAX_BODY_BYTES",
    "A2A_MAX_PARTS",
    "A2A_MAX_TEXT_LENGTH",
    "A2A_MAX_ID_LENGTH",
    "A2A_MAX_PAGE_SIZE",
    "A2A_MAX_BATCH_SIZE",
    "A2A_MAX_HISTORY",
    "A2A_HEADER_TIMEOUT",
    "A2A_BODY_TIMEOUT",
    "A2A_MAX_CONNECTIONS",
)
def check_limits() -> Messages:
    """The limits on requests, histories and slow clients (a2a/protocol/limits.py,
    a2a/http/protocol.py); ``a2a.E040``: a page size over the task stores' ceiling."""
    page_size = a2a_settings.MAX_PAGE_SIZE
    if page_size > MAX_PAGE_SIZE:
        return [
            Error(
                f"A2A_MAX_PAGE_SIZE must be at most {MAX_PAGE_SIZE} (the task stores' page size ceiling), "
                f"not {page_size!r}.",
                id="a2a.E040",
            )
        ]
    return []
