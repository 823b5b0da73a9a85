"""Server-Sent Events, shared by both bindings: frames, keepalives, a clean end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from a2a.protocol.errors import A2AError
from a2a.protocol.model import StreamItem
from a2a.service.errors import client_error

SSE = AsyncIterator[bytes]

#: Characters JSON leaves raw that clients splitting lines the Python way
#: (``str.splitlines``, httpx's ``aiter_lines``) take for line ends, cutting a frame in
#: two: each is written as its JSON escape instead (they only occur inside strings).
_LINE_BREAKS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def _data(payload: bytes, seq: int | None = None) -> bytes:
    """One ``data:`` frame of ``payload`` (JSON), with the ``id:`` ``seq`` when it has
    one (the task's number of the event: a client reconnects with it as ``Last-Event-ID``)."""
    for raw, escaped in _LINE_BREAKS:
        if raw in payload:
            payload = payload.replace(raw, escaped)
    frame = b"data: " + payload + b"\n\n"
    return frame if seq is None else b"id: %d\n" % seq + frame


def frame(payload: bytes) -> bytes:
    """One SSE ``data:`` frame of ``payload`` (JSON), for a binding that writes its own events."""
    return _data(payload)


def _frame(item: StreamItem, render: Callable[[StreamItem], bytes]) -> bytes:
    """The SSE frame of ``item``: a comment for a keepalive (a resumed stream with nothing
    to replay opens with one)."""
    return b": keepalive\n\n" if item.kind == "keepalive" else _data(render(item), item.seq)


async def error_stream(payload: bytes) -> SSE:
    """A stream of one ``data:`` frame, ``payload`` (an error raised before the first event)."""
    yield _data(payload)


async def sse_stream(
    first: StreamItem,
    items: AsyncIterator[StreamItem],
    render: Callable[[StreamItem], bytes],
    render_error: Callable[[A2AError], bytes],
) -> SSE:
    """``first`` and then ``items`` as SSE ``data:`` frames (``render`` gives each one's
    JSON; ``id:`` its number, when it has one); an error mid-stream becomes a last
    frame; the operation is always closed, so a client that goes away leaves no
    subscription behind."""
    try:
        yield _frame(first, render)
        async for item in items:
            yield _frame(item, render)
    except Exception as exc:
        yield _data(render_error(client_error(exc, "a stream")))
    finally:
        await items.aclose()  # type: ignore[attr-defined]
