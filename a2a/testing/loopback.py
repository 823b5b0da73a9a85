"""A real HTTP server on 127.0.0.1 (a random port) in a daemon thread, for the kit's
fakes: the code under test makes real connections, and no request leaves the machine."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    """One request a fake received: its path, headers (names lower-cased) and JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing, reads a JSON body and writes a whole answer."""

    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse the connection as with real servers

    def read_json(self) -> Any:
        """The request's body as JSON (its text when it is not JSON)."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def answer(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        """Write ``status`` and ``body`` (bytes or str as they are, anything else as JSON)."""
        data = body if isinstance(body, bytes | str) else json.dumps(body)
        data = data.encode() if isinstance(data, str) else data
        try:
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def seen(self) -> Seen:
        """This request, read (its body consumed)."""
        return Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, self.read_json())

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: the tests' output stays the tests'."""


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler], name: str) -> Iterator[ThreadingHTTPServer]:
    """``handler`` served on 127.0.0.1 at a free port until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
