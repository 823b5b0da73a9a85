"""Every MCP method the endpoint answers, by name: each takes the :class:`~a2a.mcp.calls.Call`
and returns its result (an SSE answer is :mod:`a2a.mcp.streams`'); the revision decides
what the answer looks like (``resultType`` and the caching hints for 2026-07-28)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from a2a.mcp import results, tools
from a2a.mcp.calls import Call, answer, call_tool, mcp_error, settled
from a2a.mcp.wire import LEGACY, META_SERVER_INFO, MODERN, SUPPORTED, TASKS_EXTENSION, invalid_params
from a2a.protocol.errors import A2AError, TaskNotCancelableError
from a2a.protocol.model import TERMINAL_STATES, CancelParams, ListParams, task_state
from a2a.service import operations
from a2a.service.context import load_task

Method = Callable[[Call], Awaitable[dict[str, Any]]]

#: How long a client may keep the tool list and the discovery result (ms): the tools are
#: the card's skills, which change with a deployment.
LIST_TTL_MS = 300_000


def server_info(call: Call) -> dict[str, Any]:
    from a2a import __version__

    settings = call.ctx.agent.settings
    return {
        "name": str(settings.AGENT_NAME or call.ctx.agent.name),
        "version": __version__,
        "title": "django-a2a-agent",
    }


def capabilities(call: Call) -> dict[str, Any]:
    if call.legacy:
        tasks: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return {"tools": {"listChanged": False}, "tasks": tasks}
    return {"tools": {"listChanged": False}, "extensions": {TASKS_EXTENSION: {}}}


def _cached(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """A cacheable result: public (the tools are the same for every caller of the agent)."""
    return result if call.legacy else {**result, "ttlMs": LIST_TTL_MS, "cacheScope": "public"}


async def discover(call: Call) -> dict[str, Any]:
    result = {"supportedVersions": list(SUPPORTED), "capabilities": capabilities(call)}
    result["_meta"] = {META_SERVER_INFO: server_info(call)}
    if description := call.ctx.agent.settings.AGENT_DESCRIPTION:
        result["instructions"] = str(description)
    return _cached(result, call)


async def initialize(call: Call) -> dict[str, Any]:
    """2025-11-25's handshake: the server's version (its own when the client asks for one
    it does not speak), capabilities and identity; the view mints the session."""
    result = {"protocolVersion": LEGACY, "capabilities": capabilities(call), "serverInfo": server_info(call)}
    if description := call.ctx.agent.settings.AGENT_DESCRIPTION:
        result["instructions"] = str(description)
    return result


async def ping(call: Call) -> dict[str, Any]:
    return {}


async def list_tools(call: Call) -> dict[str, Any]:
    if call.params.get("cursor") is not None:
        raise invalid_params("Unknown cursor: the tool list is one page")
    return _cached({"tools": [tool.definition(call.legacy) for tool in tools.tools(call.ctx.agent)]}, call)


async def _task(call: Call) -> Any:
    task_id = call.params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise invalid_params("taskId must be a string")
    try:
        return await load_task(task_id, call.ctx)
    except A2AError as exc:
        raise mcp_error(exc, "MCP tasks") from None


async def get_task(call: Call) -> dict[str, Any]:
    task = await _task(call)
    return results.mcp_task(task, legacy=True) if call.legacy else results.detailed_task(task)


async def update_task(call: Call) -> dict[str, Any]:
    """The extension's ``tasks/update``: the answer to the task's current question (a
    response to any other key is ignored); acknowledged at once."""
    task = await _task(call)
    responses = call.params.get("inputResponses")
    if not isinstance(responses, dict):
        raise invalid_params("inputResponses must be an object")
    key = results.question_key(task)
    if task_state(task) == "input-required" and key in responses:
        await answer(call.ctx, task, responses[key], blocking=False)
    return {}


async def cancel_task(call: Call) -> dict[str, Any]:
    """Cancels the A2A task. The extension acknowledges a task that has ended already;
    2025-11-25 refuses it (-32602) and answers with the canceled task."""
    task = await _task(call)
    try:
        task = await operations.cancel_task(CancelParams(task["id"]), call.ctx)
    except TaskNotCancelableError as exc:
        if call.legacy:
            raise invalid_params(str(exc)) from None
    return results.mcp_task(task, legacy=True) if call.legacy else {}


async def task_result(call: Call) -> dict[str, Any]:
    """2025-11-25's ``tasks/result``: the call's result once the task has ended."""
    task = await _task(call)
    while task_state(task) not in TERMINAL_STATES:
        if task_state(task) in ("input-required", "auth-required"):
            break  # a question: tasks/get says so, and its answer comes by elicitation
        task = await settled(call.ctx, task)
    result = results.tool_result(task)
    result["_meta"] = {**result.get("_meta", {}), "io.modelcontextprotocol/related-task": {"taskId": task["id"]}}
    return result


async def list_tasks(call: Call) -> dict[str, Any]:
    cursor = call.params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise invalid_params("cursor must be a string")
    try:
        page = await operations.list_tasks(ListParams(page_token=cursor or None, history_length=0), call.ctx)
    except Exception as exc:
        raise mcp_error(exc, "MCP tasks/list") from None
    found: dict[str, Any] = {"tasks": [results.mcp_task(t, legacy=True) for t in page.tasks]}
    if page.next_page_token:
        found["nextCursor"] = page.next_page_token
    return found


#: Each revision's methods. The tasks extension's (2026-07-28) and 2025-11-25's tasks share
#: their names; their answers differ by the call's revision.
METHODS: dict[str, dict[str, Method]] = {
    MODERN: {
        "server/discover": discover,
        "tools/list": list_tools,
        "tools/call": call_tool,
        "tasks/get": get_task,
        "tasks/update": update_task,
        "tasks/cancel": cancel_task,
    },
    LEGACY: {
        "initialize": initialize,
        "ping": ping,
        "tools/list": list_tools,
        "tools/call": call_tool,
        "tasks/get": get_task,
        "tasks/result": task_result,
        "tasks/list": list_tasks,
        "tasks/cancel": cancel_task,
    },
}
