"""Server-Sent Events, shared by both bindings: frames, keepalives, a clean end."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

from ..protocol.errors import A2AError, InternalError
from ..protocol.model import StreamItem

logger = logging.getLogger(__name__)

SSE = AsyncIterator[bytes]


async def sse_stream(
    first: StreamItem,
    items: AsyncIterator[StreamItem],
    render: Callable[[StreamItem], bytes],
    render_error: Callable[[A2AError], bytes],
) -> SSE:
    """``first`` and then ``items`` as SSE ``data:`` frames (``render`` gives each one's
    JSON); an error mid-stream becomes a last frame; the operation is always closed,
    so a client that goes away leaves no subscription behind."""
    try:
        yield b"data: " + render(first) + b"\n\n"
        async for item in items:
            yield b": keepalive\n\n" if item.kind == "keepalive" else b"data: " + render(item) + b"\n\n"
    except A2AError as exc:
        yield b"data: " + render_error(exc) + b"\n\n"
    except Exception:
        logger.exception("a stream failed")
        yield b"data: " + render_error(InternalError("Internal error; the server logged the details")) + b"\n\n"
    finally:
        await items.aclose()  # type: ignore[attr-defined]
