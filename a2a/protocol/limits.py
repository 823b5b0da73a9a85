"""Limits on what a request may carry and what a task keeps, each a setting.

``A2A_MAX_BODY_BYTES`` (the raw request body, checked by both bindings before parsing),
``A2A_MAX_PARTS`` (parts per message), ``A2A_MAX_TEXT_LENGTH`` (characters per text
part), ``A2A_MAX_ID_LENGTH`` (task, context, message and push config ids),
``A2A_MAX_PAGE_SIZE`` (ListTasks) and ``A2A_MAX_BATCH_SIZE`` (requests in one JSON-RPC
batch) are enforced where requests are parsed, with an error that names the setting;
``A2A_MAX_HISTORY`` (messages kept per task) where a task's history grows (:func:`keep_history`).
"""

from __future__ import annotations

import io
from typing import Any

from django.http import HttpRequest

from a2a.conf import a2a_settings
from a2a.protocol.errors import InvalidParamsError, InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError
from stores.base import DEFAULT_PAGE_SIZE, Task


def max_body_bytes() -> int:
    return a2a_settings.MAX_BODY_BYTES


def max_parts() -> int:
    return a2a_settings.MAX_PARTS


def max_text_length() -> int:
    return a2a_settings.MAX_TEXT_LENGTH


def max_id_length() -> int:
    return a2a_settings.MAX_ID_LENGTH


def max_page_size() -> int:
    return a2a_settings.MAX_PAGE_SIZE


def default_page_size() -> int:
    return min(DEFAULT_PAGE_SIZE, max_page_size())


def max_history() -> int:
    return a2a_settings.MAX_HISTORY


def max_batch_size() -> int:
    return a2a_settings.MAX_BATCH_SIZE


#: The ASGI scope key :class:`a2a.asgi.LimitedBody` sets when it stopped reading a body
#: at ``A2A_MAX_BODY_BYTES`` (the request's body is then cut short).
BODY_OVER_LIMIT = "a2a.body_over_limit"


def check_body_size(request: HttpRequest) -> None:
    """PayloadTooLargeError (-32600, HTTP 413) when the body's declared Content-Length is
    over ``A2A_MAX_BODY_BYTES`` or the ASGI handler stopped reading it there;
    InvalidRequestError (400) when the Content-Length is not a number. Reads nothing."""
    limit = max_body_bytes()
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise InvalidRequestError("The request's Content-Length header is not a number") from None
    if declared > limit:
        raise _too_large(declared, limit)
    if getattr(request, "scope", {}).get(BODY_OVER_LIMIT):
        raise PayloadTooLargeError(
            f"The request body is larger than this server accepts: more than {limit} bytes (A2A_MAX_BODY_BYTES)"
        )


def read_body(request: HttpRequest) -> bytes:
    """The raw request body, or PayloadTooLargeError (-32600, HTTP 413) when it is longer
    than ``A2A_MAX_BODY_BYTES``. Under :mod:`a2a.asgi` a longer body is not even read
    (:func:`check_body_size`).

    ``A2A_MAX_BODY_BYTES`` is the A2A endpoints' limit, and theirs alone: the body is read
    from the request's stream (at most one byte past the limit), so Django's
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MB by default, meant for form posts to other
    views) neither refuses a message the agent accepts nor needs raising for it.
    ``request.body`` holds the body afterwards, as Django's own reading would leave it."""
    check_body_size(request)
    limit = max_body_bytes()
    body = getattr(request, "_body", None)  # already read (by a middleware, say)
    if body is None:
        body = request.read(limit + 1)
        # As HttpRequest.body leaves it: later readers see the same bytes.
        request._body = body  # Django's own cache of the body (HttpRequest.body)
        request._stream = io.BytesIO(body)
    if len(body) > limit:
        raise _too_large(len(body), limit)
    return body


#: The media types an A2A request body may have (parameters such as ``charset`` aside).
JSON_MEDIA_TYPES = frozenset({"application/json", "application/a2a+json"})


def check_media_type(request: HttpRequest, body: bytes | None = None) -> None:
    """UnsupportedMediaTypeError (-32600, HTTP 415) unless the request says its body is
    JSON (``application/json`` or ``application/a2a+json``, any parameters).

    A browser sends ``text/plain``, form and multipart bodies cross-site without a CORS
    preflight (a "simple request"), so executing them would let any web page drive an
    agent that has no authentication. Where the body is optional (REST POSTs such as a
    v0.3 client's ``:cancel``), pass it: an empty ``body`` may come without a
    Content-Type; a non-JSON Content-Type is refused all the same."""
    raw = request.META.get("CONTENT_TYPE") or ""
    media_type = raw.split(";", 1)[0].strip().lower()
    if media_type in JSON_MEDIA_TYPES:
        return
    if not media_type and body is not None and not body.strip():
        return
    shown = f"'{raw[:100]}'" if raw else "none"
    raise UnsupportedMediaTypeError(
        f"The request body must be JSON: Content-Type application/json or application/a2a+json, not {shown}"
    )


def _too_large(size: int, limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"The request body is larger than this server accepts: {size} bytes, at most {limit} (A2A_MAX_BODY_BYTES)"
    )


def keep_history(task: Task) -> Task:
    """Drop the oldest messages of ``task``'s history (in place) beyond ``A2A_MAX_HISTORY``."""
    history = task.get("history")
    limit = max_history()
    if isinstance(history, list) and len(history) > limit:
        task["history"] = history[-limit:]
    return task


#: Levels of nesting a request's params (or REST body) may have. Not a setting: orjson
#: serializes at most 255 levels, and a stored task and each answer add their own
#: levels around the client's free-form JSON (metadata, data parts).
MAX_NESTING = 100


def check_nesting(value: Any, field: str = "params") -> None:
    """InvalidParamsError when ``value`` is nested more than :data:`MAX_NESTING` levels
    deep (checked without recursion: the JSON parser allows 1024 levels)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            raise InvalidParamsError(f"is nested more than {MAX_NESTING} levels deep", field=field)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
