"""The page token of ``list``: an opaque cursor just past the last task of a page.

A token is the URL-safe base64 (unpadded) of the JSON ``[updated, id]`` or
``[updated, id, total]``: the last task's status timestamp and id (the listing's sort
key, newest first) and, optionally, the listing's total size, so the next pages answer
without counting again. Every store makes and reads its tokens here.
"""

from __future__ import annotations

import base64
import binascii

import orjson


def encode_cursor(updated: str, task_id: str, total: int | None = None) -> str:
    """An opaque page token pointing just past the task (updated, id); ``total``, when
    given, is the listing's total size, for the next pages to answer without counting."""
    values: list[str | int] = [updated, task_id] if total is None else [updated, task_id, total]
    return base64.urlsafe_b64encode(orjson.dumps(values)).decode().rstrip("=")


def _cursor_values(token: str) -> list:
    try:
        values = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError("invalid page token") from None
    if (
        not isinstance(values, list)
        or len(values) not in (2, 3)
        or not all(isinstance(v, str) for v in values[:2])
        or (len(values) == 3 and (not isinstance(values[2], int) or isinstance(values[2], bool) or values[2] < 0))
    ):
        raise ValueError("invalid page token")
    return values


def decode_cursor(token: str) -> tuple[str, str]:
    """Inverse of :func:`encode_cursor`; raises ValueError for a token we did not make."""
    updated, task_id = _cursor_values(token)[:2]
    return updated, task_id


def cursor_total(token: str) -> int | None:
    """The total size a page token carries (None when it carries none)."""
    values = _cursor_values(token)
    return values[2] if len(values) == 3 else None
