"""A model's streamed answer, read as it comes and put together: the server-sent events
of an OpenAI-compatible chat completion (``stream: true``, a ``data:`` line per chunk,
``[DONE]`` last) and of Anthropic's Messages API (``message_start``,
``content_block_*``, ``message_delta``, ``error``). Each piece of text goes to the
caller as it arrives; the whole is the body the provider would have sent unstreamed, so
the rest of the handler (the tool calls, the usage) reads one shape either way."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

#: Told each piece of the answer's text as it arrives.
OnText = Callable[[str], None]


class StreamError(ValueError):
    """The stream said it failed (Anthropic's ``error`` event) or is not the events it should be."""


async def events(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of the stream's ``data:`` lines (comments, ``event:`` lines and
    ``[DONE]`` skipped: each object names its own type)."""
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        try:
            event = json.loads(data)
        except ValueError:
            raise StreamError(f"a streamed event that is not JSON: {data[:200]}") from None
        if isinstance(event, dict):
            yield event


async def openai_answer(lines: AsyncIterator[str], on_text: OnText, model: str) -> dict[str, Any]:
    """A chat completion's chunks as the completion: the content's deltas joined (each
    told to ``on_text``), the tool calls' pieces joined by index, the usage of the last
    chunk (``stream_options.include_usage``)."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    answer: dict[str, Any] = {"model": model}
    finish = None
    async for chunk in events(lines):
        if isinstance(chunk.get("error"), dict):
            raise StreamError(str(chunk["error"].get("message") or chunk["error"]))
        answer["model"] = chunk.get("model") or answer["model"]
        if isinstance(chunk.get("usage"), dict):
            answer["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            finish = choice.get("finish_reason") or finish
            if isinstance(delta.get("content"), str) and delta["content"]:
                text.append(delta["content"])
                on_text(delta["content"])
            for piece in delta.get("tool_calls") or ():
                _add_call_piece(calls, piece)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return answer | {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def _add_call_piece(calls: dict[int, dict[str, Any]], piece: Any) -> None:
    """One streamed piece of a tool call: its id and name come first, its arguments in parts."""
    if not isinstance(piece, dict):
        return
    index: int = piece["index"] if isinstance(piece.get("index"), int) else len(calls)
    call = calls.setdefault(index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
    call["id"] = piece.get("id") or call["id"]
    function: dict[str, Any] = piece["function"] if isinstance(piece.get("function"), dict) else {}
    call["function"]["name"] += function.get("name") or ""
    call["function"]["arguments"] += function.get("arguments") or ""


async def anthropic_answer(lines: AsyncIterator[str], on_text: OnText, model: str) -> dict[str, Any]:
    """A Messages stream as the message: text blocks' deltas joined (each told to
    ``on_text``), tool_use blocks' input from their JSON pieces, the usage of
    ``message_start`` and ``message_delta``."""
    message: dict[str, Any] = {"type": "message", "role": "assistant", "model": model, "content": []}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    usage: dict[str, Any] = {}
    async for event in events(lines):
        kind = event.get("type")
        if kind == "error":
            error: dict[str, Any] = event["error"] if isinstance(event.get("error"), dict) else {}
            raise StreamError(f"{error.get('message') or event} ({error.get('type') or 'error'})")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            start = event["message"]
            message["id"], message["model"] = start.get("id"), start.get("model") or model
            usage.update(start.get("usage") or {})
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[int(event.get("index") or 0)] = dict(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            _add_block_piece(blocks, partial, int(event.get("index") or 0), event["delta"], on_text)
        elif kind == "message_delta":
            message["stop_reason"] = (event.get("delta") or {}).get("stop_reason")
            usage.update(event.get("usage") or {})
    for index, pieces in partial.items():
        blocks[index]["input"] = _tool_input("".join(pieces))
    message["content"] = [blocks[index] for index in sorted(blocks)]
    return message | {"usage": usage}


def _tool_input(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        raise StreamError(f"a tool's streamed input that is not JSON: {text[:200]}") from None


def _add_block_piece(
    blocks: dict[int, dict[str, Any]], partial: dict[int, list[str]], index: int, delta: dict[str, Any], on_text: OnText
) -> None:
    block = blocks.setdefault(index, {"type": "text", "text": ""})
    if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
        block["text"] = block.get("text", "") + delta["text"]
        on_text(delta["text"])
    elif delta.get("type") == "input_json_delta" and isinstance(delta.get("partial_json"), str):
        partial.setdefault(index, []).append(delta["partial_json"])
