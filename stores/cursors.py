"""The page token of ``list``: an opaque cursor just past the last task of a page.

A token is the URL-safe base64 (unpadded) of the JSON ``[updated, id]``: the last task's
status timestamp and id (the listing's sort key, newest first). It carries no count: each
page's total is the store's own. Every store makes and reads its tokens here. A2A clients
never see one as it is: :mod:`a2a.service.page_tokens` seals it to their listing.
"""

from __future__ import annotations

import base64
import binascii

import orjson


def encode_cursor(updated: str, task_id: str) -> str:
    """An opaque page token pointing just past the task (updated, id)."""
    return base64.urlsafe_b64encode(orjson.dumps([updated, task_id])).decode().rstrip("=")


def decode_cursor(token: str) -> tuple[str, str]:
    """Inverse of :func:`encode_cursor`; raises ValueError for a token we did not make."""
    try:
        values = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError("invalid page token") from None
    if not isinstance(values, list) or len(values) != 2 or not all(isinstance(v, str) for v in values):
        raise ValueError("invalid page token")
    return values[0], values[1]
