"""A sync httpx transport to an ASGI application in this process (no server, no socket).

httpx has :class:`httpx.ASGITransport` for async clients only; :class:`ASGIAppTransport`
runs it on an event loop of its own, in a thread, so that a sync :class:`~a2a.client.Client`
(a test, a management command) can speak to the project's ASGI app as an async one does.
As with httpx's transport, a response (a stream too) is handed over once the application
has finished it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx


class ASGIAppTransport(httpx.BaseTransport):
    """``Client("http://testserver", transport=ASGIAppTransport(get_asgi_application()))``."""

    def __init__(self, app: Any, **options: Any) -> None:
        self._transport = httpx.ASGITransport(app=app, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="a2a-client-asgi", daemon=True)
        self._thread.start()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def send() -> httpx.Response:
            response = await self._transport.handle_async_request(request)
            body = await response.aread()
            return httpx.Response(response.status_code, headers=response.headers, content=body)

        return asyncio.run_coroutine_threadsafe(send(), self._loop).result()

    def close(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._loop.close()
