"""uvicorn's httptools HTTP protocol with the slow-client limits uvicorn lacks.

uvicorn times out an idle keep-alive connection (``--timeout-keep-alive``) but not a
request that is still arriving: a client that sends half a request line or half its
headers, or stops in the middle of a body, holds its connection (and a file
descriptor) for ever. A few hundred of them exhaust the process's file limit and every
new request fails. Serve with::

    uvicorn myproject.asgi:application --http a2a.http.protocol:HttpToolsProtocol

(uvicorn 0.35+ and httptools: the ``uvicorn`` extra; ``make run`` does) and each worker process

- closes a connection whose request line and headers have not all arrived within
  ``A2A_HEADER_TIMEOUT`` seconds of its first byte (or of the connection; answered
  ``408`` when nothing else is under way on it);
- closes one whose body stops for ``A2A_BODY_TIMEOUT`` seconds (between two reads, as
  nginx's ``client_body_timeout``; not while the server itself has paused reading);
- keeps at most ``A2A_MAX_CONNECTIONS`` connections open (0: three quarters of the
  process's file limit): over it, the connection that has been reading its request the
  longest is closed to make room (a slow client, never a request being answered), and
  a new one is refused only when all are being answered.

Once a request has been read, nothing here times it out: an SSE stream lasts as long
as it streams. Behind a reverse proxy, set its own limits too (docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _HttpToolsProtocol
except ImportError:  # the server's packages, not the apps' (the "uvicorn" extra): usable only with them
    _HttpToolsProtocol = object  # type: ignore[assignment,misc]

from a2a.conf import a2a_settings
from a2a.ops.deployment import file_limit

logger = logging.getLogger(__name__)

TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class HttpToolsProtocol(_HttpToolsProtocol):
    """See the module doc."""

    #: This process's connections still reading a request, oldest first.
    reading: dict[HttpToolsProtocol, None] = {}
    _cap: int | None = None
    _last_warning = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timer: asyncio.TimerHandle | None = None
        self._in_headers = False

    @classmethod
    def max_connections(cls) -> int:
        if cls._cap is None:
            configured = a2a_settings.MAX_CONNECTIONS
            soft = file_limit()
            cls._cap = configured if configured > 0 else max(16, soft * 3 // 4 if soft else 10_000)
        return cls._cap

    # --- the timers ------------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        if not self._in_headers and self.flow.read_paused:  # the server is not reading: not the client's fault
            self._arm(a2a_settings.BODY_TIMEOUT)
            return
        if self._in_headers and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(TIMEOUT_RESPONSE)
        self._warn("closed a connection whose request did not arrive in time")
        self.transport.close()

    def _start_reading(self) -> None:
        self._in_headers = True
        HttpToolsProtocol.reading[self] = None
        self._arm(a2a_settings.HEADER_TIMEOUT)

    def _done_reading(self) -> None:
        self._in_headers = False
        self._disarm()
        HttpToolsProtocol.reading.pop(self, None)

    @classmethod
    def _warn(cls, message: str) -> None:
        now = time.monotonic()
        if now - cls._last_warning > 10:  # a flood of slow clients logs once in a while
            cls._last_warning = now
            logger.warning("%s (A2A_HEADER_TIMEOUT, A2A_BODY_TIMEOUT, A2A_MAX_CONNECTIONS)", message)

    # --- uvicorn's hooks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_reading()
        if len(self.connections) > self.max_connections():
            victim = next((c for c in HttpToolsProtocol.reading if c is not self), self)
            self._warn(f"over {self.max_connections()} connections: closed the one reading its request longest")
            victim._done_reading()
            victim.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._done_reading()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._in_headers:  # the next request on a kept-alive connection
            self._start_reading()

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._in_headers = False
        self._arm(a2a_settings.BODY_TIMEOUT)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if self in HttpToolsProtocol.reading:
            self._arm(a2a_settings.BODY_TIMEOUT)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._done_reading()
