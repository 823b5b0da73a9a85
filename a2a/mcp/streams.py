"""The calls answered with an SSE response stream (reusing :mod:`a2a.http.sse`'s frames
and :func:`a2a.service.operations.stream_message`): a call with a ``progressToken``
(each saved status message and artifact chunk a ``notifications/progress``), and every
2025-11-25 call, whose question goes out as an ``elicitation/create`` on the stream.

That elicitation's id is signed (:func:`a2a.mcp.state.elicitation_id`): the client's
response, POSTed to any process, continues the A2A task it names, and this stream, which
follows the task on the event bus, hears the rest. On 2026-07-28 closing the stream
cancels the call (the transport says so): its task is canceled. A 2025-11-25 client
cancels with ``notifications/cancelled``, which this process maps to the call's task.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson

from a2a.http.sse import SSE, frame
from a2a.mcp import results, state, tools
from a2a.mcp.calls import Call, answer, mcp_error, outcome
from a2a.mcp.wire import Request, complete, notification, response
from a2a.protocol.model import SETTLED_STATES, CancelParams, GetParams, SendParams, StreamItem, Task, task_state
from a2a.service import operations
from a2a.service.context import load_task

logger = logging.getLogger(__name__)

#: The running 2025-11-25 calls of this process: (session, request id) -> task id, for
#: ``notifications/cancelled``.
_running: dict[tuple[str, str], str] = {}


def streams(call: Call) -> bool:
    """Whether this ``tools/call`` is answered with a stream."""
    if call.takes_task_handles() or "requestState" in call.params:
        return False
    return call.legacy or call.progress_token() is not None


def _frame(payload: dict[str, Any]) -> bytes:
    return frame(orjson.dumps(payload))


def _note(item: StreamItem) -> str:
    """What a stream item says, for a progress notification ("" for nothing)."""
    if item.kind == "status" and item.task is not None and task_state(item.task) not in SETTLED_STATES:
        parts = ((item.task.get("status") or {}).get("message") or {}).get("parts") or ()
    elif item.kind == "artifact" and item.artifact is not None:
        parts = item.artifact.get("parts") or ()
    else:
        return ""
    return "\n".join(p["text"] for p in parts if p.get("kind") == "text" and isinstance(p.get("text"), str))


async def call_stream(call: Call) -> SSE:
    """The call's stream, started: a bad call (unknown tool, wrong arguments, refused
    message) is an error raised here, answered as JSON."""
    tool = tools.find(call.ctx.agent, call.params.get("name"))
    message = tools.message(tool, call.params.get("arguments"))
    items = operations.stream_message(SendParams(message, history_length=0), call.ctx)
    try:
        first = await anext(items)
    except Exception as exc:
        raise mcp_error(exc, "MCP tools/call") from None
    return _events(call, tool, first, items)


async def _events(call: Call, tool: tools.Tool, first: StreamItem, items: AsyncIterator[StreamItem]) -> SSE:
    progress = _Progress(call.progress_token())
    task_id = (first.task or first.message or {}).get("id") if first.kind == "task" else None
    key = (call.session or "", str(call.request_id))
    finished = False
    try:
        if task_id is None:  # a direct reply: the one message
            finished = True
            yield _frame(response(call.request_id, complete(results.tool_result(first.message or {}), call.version)))
            return
        if call.legacy:
            _running[key] = task_id
        async for item in items:
            if (note := progress.note(item)) is not None:
                yield _frame(note)
        task = await load_task(task_id, call.ctx)
        while call.legacy and task_state(task) == "input-required" and call.can_elicit():
            yield _frame(_elicit(call, task))
            async for note, latest in _after_question(call, task, progress):
                task = latest  # the last is the task as it settled again
                if note is not None:
                    yield _frame(note)
        result = outcome(call, tool, task)
        finished = True
        yield _frame(response(call.request_id, complete(result, call.version)))
    except Exception as exc:
        finished = True
        yield _frame(mcp_error(exc, "MCP tools/call").body(call.request_id))
    finally:
        _running.pop(key, None)
        with contextlib.suppress(Exception):
            await items.aclose()  # type: ignore[attr-defined]
        if not finished and task_id is not None and not call.legacy:  # the client closed the stream
            await _cancel(call, task_id)


class _Progress:
    """The call's ``notifications/progress``: ``progress`` grows by one with each."""

    def __init__(self, token: str | int | None) -> None:
        self.token, self.count = token, 0

    def note(self, item: StreamItem) -> dict[str, Any] | None:
        text = _note(item)
        if self.token is None or not text:
            return None
        self.count += 1
        return notification(
            "notifications/progress", {"progressToken": self.token, "progress": self.count, "message": text}
        )


def _elicit(call: Call, task: Task) -> dict[str, Any]:
    """The ``elicitation/create`` request asking the task's question (2025-11-25)."""
    request_id = state.elicitation_id(task["id"], results.turn(task), call.ctx.caller, call.ctx.agent_name)
    params = results.elicitation(task)
    params["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": task["id"]}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "elicitation/create", "params": params}


async def _after_question(
    call: Call, asked: Task, progress: _Progress
) -> AsyncIterator[tuple[dict[str, Any] | None, Task]]:
    """The task's progress once the question is answered, until it settles again (the
    answer may come to another process: this follows the task on the event bus)."""
    async for item in operations.subscribe_to_task(GetParams(asked["id"], history_length=0), call.ctx):
        task = item.task
        if task is None or (results.turn(task) == results.turn(asked) and task_state(task) == "input-required"):
            continue  # the question still waits
        yield progress.note(item), task
        if task_state(task) in SETTLED_STATES:
            break
    yield None, await load_task(asked["id"], call.ctx)


async def _cancel(call: Call, task_id: str) -> None:
    try:
        await operations.cancel_task(CancelParams(task_id), call.ctx)
    except Exception:  # already ended: nothing to cancel
        logger.debug("MCP: task %s not canceled", task_id, exc_info=True)


async def take_response(call: Call, message: Request) -> None:
    """A 2025-11-25 client's response to an ``elicitation/create``: the answer continues
    the task its id names (an error response, or a decline of a question, cancels it);
    a response to anything else is ignored."""
    found = state.read_elicitation_id(message.id, call.ctx.caller, call.ctx.agent_name)
    if found is None:
        return
    task_id, turn = found
    try:
        task = await load_task(task_id, call.ctx)
    except Exception:
        return
    if task_state(task) != "input-required" or results.turn(task) != turn:
        return  # answered already
    result = (
        message.result if isinstance(message.result, dict) and "error" not in message.result else {"action": "cancel"}
    )
    await answer(call.ctx, task, result, blocking=False)


async def notified(call: Call, message: Request) -> None:
    """A notification: ``notifications/cancelled`` of a running 2025-11-25 call cancels its
    task; the others (``notifications/initialized``...) need nothing."""
    if message.method != "notifications/cancelled" or not call.legacy:
        return
    task_id = _running.get((call.session or "", str(message.params.get("requestId"))))
    if task_id is not None:
        await _cancel(call, task_id)
