"""The null server: the ceiling the machine and the load generator allow.

A minimal HTTP/1.1 responder on raw asyncio (uvloop when installed): keep-alive, no
framework, no store, no JSON parsing. Every ``POST`` is answered with one fixed
JSON-RPC response, a *completed* task (v1.0 shapes when the request has
``A2A-Version: 1.0``, v0.3 shapes otherwise), so a client's loop ends with its
``SendMessage``; every ``GET`` with a tiny agent card (the harness's readiness probe).
Nothing is parsed but the header block and ``Content-Length``.

    python bench/servers/null_server.py 8000
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys

_TASK = {"id": "null", "contextId": "null", "status": {"state": "completed"}, "kind": "task"}
_TASK_V10 = {"task": {"id": "null", "contextId": "null", "status": {"state": "TASK_STATE_COMPLETED"}}}


def _response(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


RPC_V03 = _response({"jsonrpc": "2.0", "id": 1, "result": _TASK})
RPC_V10 = _response({"jsonrpc": "2.0", "id": 1, "result": _TASK_V10})
_LENGTH = re.compile(rb"content-length:\s*(\d+)")
CARD = _response({"name": "null", "url": "/", "protocolVersion": "0.3.0"})


class NullProtocol(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            match = _LENGTH.search(head)
            length = int(match.group(1)) if match else 0
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            self.buffer = self.buffer[total:]
            if head.startswith(b"get"):
                self.transport.write(CARD)  # type: ignore[attr-defined]
            else:
                self.transport.write(RPC_V10 if b"a2a-version: 1.0" in head else RPC_V03)  # type: ignore[attr-defined]


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(NullProtocol, "127.0.0.1", port, backlog=1024)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"null server on http://127.0.0.1:{port}", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    try:
        import uvloop
    except ImportError:
        asyncio.run(main(port))
    else:
        uvloop.run(main(port))
