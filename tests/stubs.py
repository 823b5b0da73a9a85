"""A stub model server on a loopback port that speaks the chat-completions format
(OpenAI) and the Messages format (Anthropic), as the seeds' example stubs the model:
the tests never reach the internet."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from a2a.handlers import TaskFailed


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (to make the client time out)


def openai_reply(text: str, *, prompt_tokens: int = 7, completion_tokens: int = 3, model: str = "mock") -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def anthropic_reply(text: str, *, input_tokens: int = 11, output_tokens: int = 5) -> Reply:
    return Reply(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-mock",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    )


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class StubModel:
    """Answers each POST with the next queued :class:`Reply` (the last one repeats),
    or with ``responder(seen)`` when set; records every request in ``requests``."""

    def __init__(self) -> None:
        self.replies: list[Reply] = [openai_reply("stub answer")]
        self.responder: Callable[[Seen], Reply] | None = None
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            if self.responder is not None:
                return self.responder(seen)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                reply = stub._next(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if reply.delay:
                    time.sleep(reply.delay)
                data = reply.body if isinstance(reply.body, bytes | str) else json.dumps(reply.body)
                data = data.encode() if isinstance(data, str) else data
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextlib.contextmanager
def stub_model() -> Iterator[StubModel]:
    stub = StubModel()
    server = ThreadingHTTPServer(("127.0.0.1", 0), stub.handler_class())
    server.daemon_threads = True
    stub.server = server
    thread = threading.Thread(target=server.serve_forever, name="stub-model", daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def demo_handler(request: Any) -> list[dict[str, Any]]:
    """A handler for tests that drive a real server: "fail..." fails; anything else is
    echoed, with the skill the message named as a data part."""
    if request.text.startswith("fail"):
        raise TaskFailed(f"asked to fail: {request.text}")
    skill = (request.message.get("metadata") or {}).get("skill")
    return [{"kind": "text", "text": f"echo: {request.text}"}, {"kind": "data", "data": {"skill": skill}}]
