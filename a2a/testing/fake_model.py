"""A fake model server on a loopback port (a real HTTP server in a thread, never the
internet) that speaks the chat-completions format (OpenAI-compatible) and the Messages
format (Anthropic): scripted replies, tool calls among them, and every request recorded.
The built-in LLM handler reads ``A2A_LLM_BASE_URL``; :attr:`FakeModel.url` is the value."""

from __future__ import annotations

import contextlib
import json
import re
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


def pieces(text: str) -> list[str]:
    """``text`` as a model streams it: word by word (each with the space after it)."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def openai_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat completion as the chunks of its stream: the text word by word, each tool
    call in two pieces (its name, then its arguments), the usage in a last chunk."""
    message = body["choices"][0]["message"]
    base = {"id": body.get("id", "chatcmpl-1"), "object": "chat.completion.chunk", "model": body.get("model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant"})] + [chunk({"content": p}) for p in pieces(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function", "function": {"name": function["name"]}}
        chunks += [chunk({"tool_calls": [head]})]
        chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": function["arguments"]}}]})]
    chunks.append(chunk({}, body["choices"][0].get("finish_reason") or "stop"))
    return [*chunks, base | {"choices": [], "usage": body.get("usage")}]


def anthropic_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Messages answer as its stream's events: each text block word by word, each
    tool_use block's input as JSON in two pieces, the usage split as Anthropic sends it."""
    usage = body.get("usage") or {}
    start = {k: v for k, v in body.items() if k not in ("content", "usage")} | {"content": []}
    start["usage"] = {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(body.get("content") or ()):
        if block.get("type") == "tool_use":
            events.append({"type": "content_block_start", "index": index, "content_block": block | {"input": {}}})
            text = json.dumps(block.get("input") or {})
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in (text[: len(text) // 2], text[len(text) // 2 :])
            ]
        else:
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block.get("text") or "")]
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    stop = {"stop_reason": body.get("stop_reason"), "stop_sequence": None}
    events.append({"type": "message_delta", "delta": stop, "usage": {"output_tokens": usage.get("output_tokens", 0)}})
    return [*events, {"type": "message_stop"}]


def stream_events(body: Any) -> list[dict[str, Any]] | None:
    """The events a streamed request gets instead of ``body`` (a whole answer in either
    format, or an Anthropic ``error`` event); None for anything else (an error body,
    raw bytes), sent as it is."""
    if isinstance(body, dict) and isinstance(body.get("choices"), list) and body["choices"]:
        return openai_events(body)
    if isinstance(body, dict) and body.get("type") == "message":
        return anthropic_events(body)
    if isinstance(body, dict) and body.get("type") == "error":  # Anthropic's error event, mid-stream
        return [{"type": "message_start", "message": {"id": "msg_1", "model": "claude-mock", "usage": {}}}, body]
    return None


class FakeModel:
    """Answers each POST with the next queued :class:`Reply` (the last one repeats),
    or with ``responder(seen)`` when set; records every request in ``requests``. A
    request that asks for a stream (``"stream": true``) gets a successful reply as
    server-sent events, ``chunk_delay`` seconds apart (the answer grows word by word)."""

    def __init__(self) -> None:
        self.replies: list[Reply] = [openai_reply("stub answer")]
        self.responder: Callable[[Seen], Reply] | None = None
        self.chunk_delay = 0.0
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
                seen = self.seen()
                reply = stub._next(seen)
                if reply.delay:
                    time.sleep(reply.delay)
                streamed = isinstance(seen.body, dict) and seen.body.get("stream") is True and reply.status == 200
                events = stream_events(reply.body) if streamed else None
                if events is None:
                    self.answer(reply.status, reply.body, reply.headers)
                else:
                    self.stream(events, stub.chunk_delay)

            def stream(self, events: list[dict[str, Any]], delay: float) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")  # the stream ends with the connection
                    self.end_headers()
                    for event in events:
                        self.wfile.write(f"event: {event.get('type', 'chunk')}\ndata: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(delay)
                    if events and "type" not in events[-1]:
                        self.wfile.write(b"data: [DONE]\n\n")  # the chat-completions stream's end
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a cancel test)
                self.close_connection = True

        return Handler


@contextlib.contextmanager
def fake_model() -> Iterator[FakeModel]:
    """A :class:`FakeModel` serving on 127.0.0.1 (a random port) until the block ends."""
    stub = FakeModel()
    with serving(stub.handler_class(), "fake-model") as server:
        stub.server = server
        yield stub
