"""``tools/call``: an A2A ``SendMessage`` through :mod:`a2a.service.operations` (the same
handler, store, owner rules and admin), answered as MCP asks.

Blocking by default (the settled task's result). With a ``progressToken``, an SSE response
whose ``notifications/progress`` carry the task's status messages and artifact chunks as
they are saved. A task that asks a question: a 2026-07-28 ``InputRequiredResult`` (the
question as a form elicitation, ``requestState`` signed: :mod:`a2a.mcp.state`), whose
retry with ``inputResponses`` is the A2A follow-up message; a 2025-11-25 client gets an
``elicitation/create`` on the call's response stream (:mod:`a2a.mcp.streams`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from a2a.mcp import results, state, tools
from a2a.mcp.wire import LEGACY, TASKS_EXTENSION, McpError, invalid_params, missing_capability
from a2a.protocol.errors import A2AError, TaskNotFoundError
from a2a.protocol.model import SETTLED_STATES, CancelParams, GetParams, Message, SendParams, Task, new_id, task_state
from a2a.service import operations
from a2a.service.context import CallContext, load_task
from a2a.service.errors import client_error


@dataclass
class Call:
    """One MCP request as the methods see it: its A2A call context, revision, params and
    the client's capabilities (the request's ``_meta``, or the 2025-11-25 session's)."""

    ctx: CallContext
    version: str
    params: dict[str, Any]
    capabilities: dict[str, Any] = field(default_factory=dict)
    request_id: Any = None
    session: str | None = None

    @property
    def legacy(self) -> bool:
        return self.version == LEGACY

    def can_elicit(self) -> bool:
        return isinstance(self.capabilities.get("elicitation"), dict)

    def takes_task_handles(self) -> bool:
        if self.legacy:
            return isinstance(self.params.get("task"), dict)
        extensions = self.capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION in extensions

    def progress_token(self) -> str | int | None:
        meta = self.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def mcp_error(exc: Exception, what: str) -> McpError:
    """The MCP error of an operation's exception: an unknown (or another caller's) task
    and every refusal of the client's input are -32602; anything else -32603."""
    if isinstance(exc, McpError):
        return exc
    error = client_error(exc, what)
    if isinstance(error, TaskNotFoundError):
        return invalid_params(
            f"Unknown task: {error.metadata.get('taskId', '') if error.metadata else ''}".rstrip(": ")
        )
    if error.code == -32603:
        return McpError(-32603, str(error))
    return invalid_params(str(error))


async def settled(ctx: CallContext, answer: Task | Message) -> Task | Message:
    """``answer`` once it settles: a blocking send that outlived ``A2A_BLOCKING_TIMEOUT``
    keeps following the task (an MCP call is answered with its outcome)."""
    if answer.get("kind") == "message" or task_state(answer) in SETTLED_STATES:
        return answer
    async for item in operations.subscribe_to_task(GetParams(answer["id"], history_length=0), ctx):
        if item.task is not None and task_state(item.task) in SETTLED_STATES:
            break
    return await load_task(answer["id"], ctx)


def outcome(call: Call, tool: tools.Tool, answer: Task | Message) -> dict[str, Any]:
    """The result of a settled call: its tool result, or (2026-07-28) the task's question."""
    if answer.get("kind") != "message" and task_state(answer) == "input-required" and not call.legacy:
        if not call.can_elicit():  # the question cannot be put: say what would let it be
            raise missing_capability({"elicitation": {"form": {}}})
        token = state.request_state(answer["id"], results.turn(answer), call.ctx.caller, call.ctx.agent_name, tool.name)
        return {"resultType": "input_required", "inputRequests": results.input_requests(answer), "requestState": token}
    return results.tool_result(answer)


async def send(call: Call, message: Message, *, blocking: bool) -> Task | Message:
    try:
        return await operations.send_message(SendParams(message, blocking=blocking, history_length=0), call.ctx)
    except Exception as exc:
        raise mcp_error(exc, "MCP tools/call") from None


async def call_tool(call: Call) -> dict[str, Any]:
    """A blocking ``tools/call``, a retry with ``inputResponses``, or one answered with a
    task handle (the tasks extension; 2025-11-25 ``params.task``)."""
    tool = tools.find(call.ctx.agent, call.params.get("name"))
    if "requestState" in call.params and not call.legacy:
        return await _retry(call, tool)
    message = tools.message(tool, call.params.get("arguments"))
    if call.takes_task_handles():
        task = await send(call, message, blocking=False)
        if task.get("kind") == "message":  # a direct reply: nothing to wait for
            return results.tool_result(task)
        handle = results.mcp_task(task, legacy=call.legacy)
        return {"task": handle} if call.legacy else {"resultType": "task", **handle}
    return outcome(call, tool, await settled(call.ctx, await send(call, message, blocking=True)))


async def _retry(call: Call, tool: tools.Tool) -> dict[str, Any]:
    """The client's retry of a call that asked a question: its answer continues the task
    ``requestState`` names (signed for this caller, agent and tool); a retry of a question
    already answered gets the task's outcome."""
    task_id, turn = state.read_request_state(
        call.params.get("requestState"), call.ctx.caller, call.ctx.agent_name, tool.name
    )
    try:
        task = await load_task(task_id, call.ctx)
    except A2AError as exc:
        raise mcp_error(exc, "MCP tools/call") from None
    if task_state(task) == "input-required" and results.turn(task) == turn:
        responses = call.params.get("inputResponses")
        key = results.question_key(task)
        if not isinstance(responses, dict) or key not in responses:
            return outcome(call, tool, task)  # asked again: the answer is still missing
        answered = await answer(call.ctx, task, responses[key], blocking=True)
        return outcome(call, tool, await settled(call.ctx, answered))
    return outcome(call, tool, await settled(call.ctx, task))


async def answer(ctx: CallContext, task: Task, response: Any, *, blocking: bool) -> Task | Message:
    """Continue ``task`` (waiting in ``input-required``) with an elicitation's response:
    the follow-up message, or a cancel when the person cancelled."""
    try:
        parts = results.answer_parts(task, response)
    except ValueError as exc:
        raise invalid_params(f"inputResponses: {exc}") from None
    try:
        if parts is None:
            return await operations.cancel_task(CancelParams(task["id"]), ctx)
        message: Message = {"kind": "message", "messageId": new_id(), "role": "user", "parts": parts}
        message["taskId"] = task["id"]
        return await operations.send_message(SendParams(message, blocking=blocking, history_length=0), ctx)
    except Exception as exc:
        raise mcp_error(exc, "MCP input") from None
