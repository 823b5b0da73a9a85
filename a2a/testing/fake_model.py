"""A fake model server on a loopback port (a real HTTP server in a thread, never the
internet) that speaks the chat-completions format (OpenAI-compatible) and the Messages
format (Anthropic): scripted replies, tool calls among them, and every request recorded.
The built-in LLM handler reads ``A2A_LLM_BASE_URL``; :attr:`FakeModel.url` is the value."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from a2a.testing.loopback import QuietHandler, Seen, serving


@dataclass
class Reply:
    """One scripted answer: HTTP status, JSON body (or raw bytes/str), headers, delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (to make the client time out)


def openai_reply(text: str, *, prompt_tokens: int = 7, completion_tokens: int = 3, model: str = "mock") -> Reply:
    """A chat-completions answer with ``text`` and token usage."""
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
    """A Messages answer with ``text`` and token usage."""
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


def openai_tool_call(name: str, arguments: dict[str, Any], *, call_id: str = "call_1") -> Reply:
    """A chat-completions answer that calls the function ``name`` with ``arguments``."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(
        body={
            "id": "chatcmpl-tool",
            "object": "chat.completion",
            "model": "mock",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }
    )


def anthropic_tool_use(name: str, tool_input: dict[str, Any], *, use_id: str = "toolu_1") -> Reply:
    """A Messages answer that uses the tool ``name`` with ``tool_input``."""
    return Reply(
        body={
            "id": "msg_tool",
            "type": "message",
            "role": "assistant",
            "model": "claude-mock",
            "content": [{"type": "tool_use", "id": use_id, "name": name, "input": tool_input}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 11, "output_tokens": 5},
        }
    )


class FakeModel:
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
        """The base URL for ``A2A_LLM_BASE_URL`` (``http://127.0.0.1:<port>/v1``)."""
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies`` in order (the last one repeats)."""
        self.replies = list(replies)

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            if self.responder is not None:
                return self.responder(seen)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The ``http.server`` handler that answers for this fake."""
        stub = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                reply = stub._next(self.seen())
                if reply.delay:
                    time.sleep(reply.delay)
                self.answer(reply.status, reply.body, reply.headers)

        return Handler


@contextlib.contextmanager
def fake_model() -> Iterator[FakeModel]:
    """A :class:`FakeModel` serving on 127.0.0.1 (a random port) until the block ends."""
    stub = FakeModel()
    with serving(stub.handler_class(), "fake-model") as server:
        stub.server = server
        yield stub
