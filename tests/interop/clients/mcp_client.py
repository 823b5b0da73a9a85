"""Drive our MCP endpoint with the official MCP Python SDK (``mcp``, in .venv-mcp).

``python mcp_client.py ENDPOINT SCENARIO --revision R [--token T] [--state FILE]``
prints one JSON line of what the SDK observed (tests/interop/test_mcp_interop.py checks
it). R is 2026-07-28 (``server/discover``, stateless) or 2025-11-25 (``initialize``).
Nothing of this repository is importable here: the client is the SDK alone.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import sys
import time
from pathlib import Path
from typing import Any, ClassVar, Literal

import mcp
import mcp_types as types
from mcp.client.client import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"
TOOL = "echo"  # the site's default agent's one skill


class CreateTaskResult(types.Result):
    """The tasks extension's task handle (``resultType: "task"``)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class AnyResult(types.Result):
    """A result kept whole (``types.Result`` drops the fields it does not name)."""

    model_config = ConfigDict(extra="allow")


class Tasks(ClientExtension):
    """The tasks extension as this script uses it: declared, and its handle claimed (the
    scenarios poll it themselves)."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        async def resolve(result: Any, ctx: Any) -> types.CallToolResult:  # not used: allow_claimed
            raise AssertionError("claimed results are handled by the scenario")

        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=resolve)]


class Raw(types.Request[dict[str, Any] | None, str]):
    """A request by its method name (the tasks methods, which the SDK has no verb for)."""

    method: str
    params: dict[str, Any] | None = None


class TaskRequest(Raw):
    """A tasks method: the extension says its ``Mcp-Name`` header mirrors ``params.taskId``."""

    name_param: ClassVar[str | None] = "taskId"


def client(args: argparse.Namespace, **options: Any) -> Client:
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    transport = streamable_http_client(args.endpoint, http_client=create_mcp_http_client(headers=headers))
    mode = "auto" if args.revision == "2026-07-28" else "legacy"
    return Client(transport, mode=mode, cache=None, **options)


def text_of(result: Any) -> list[str]:
    return [c.text for c in result.content if getattr(c, "type", "") == "text"]


def observed_result(result: types.CallToolResult) -> dict[str, Any]:
    task = (result.meta or {}).get("a2a/taskId")
    return {
        "isError": bool(result.is_error),
        "text": text_of(result),
        "structured": result.structured_content,
        "taskId": task,
    }


def error_of(exc: MCPError) -> dict[str, Any]:
    return {"code": exc.error.code, "message": exc.error.message}


async def raw(session: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``method`` with ``params``: its result as a dict, or ``{"error": ...}``."""
    try:
        if method == "tools/call" and "task" in params:  # a 2025-11-25 task-augmented call
            return await _task_augmented(session, params)
        kind = TaskRequest if method in ("tasks/get", "tasks/update", "tasks/cancel") else Raw
        result = await session.send_request(kind(method=method, params=params), AnyResult)
    except MCPError as exc:
        return {"error": error_of(exc)}
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def _task_augmented(session: Any, params: dict[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 task-augmented ``tools/call``. The SDK (2.3.0) has no verb for it and
    checks every ``tools/call`` result as a ``CallToolResult``, which a ``CreateTaskResult``
    is not: the request goes out on the session's own dispatcher (its transport, session
    id and version header, stamped as ``send_request`` stamps them), its check skipped."""
    data: dict[str, Any] = {"method": "tools/call", "params": params}
    opts: dict[str, Any] = {}
    session._stamp(data, opts)
    try:
        return dict(await session._dispatcher.send_raw_request("tools/call", data["params"], opts))
    except MCPError as exc:
        return {"error": error_of(exc)}


def answering(
    approve: bool | None = None,
    answer: str | None = None,
    *,
    seen: list[Any],
    gate: Path | None = None,
    opened: asyncio.Event | None = None,
):
    """An elicitation callback: records what was asked, answers the approval form with
    ``approve`` (or the question with ``answer``), after ``gate`` exists when given (then
    sets ``opened``)."""

    async def callback(context: Any, params: Any) -> types.ElicitResult:
        related = (getattr(params, "meta", None) or {}).get("io.modelcontextprotocol/related-task") or {}
        seen.append({"message": params.message, "schema": params.requested_schema, "taskId": related.get("taskId")})
        if gate is not None:
            gate.with_suffix(".asked").write_text("asked")
            while not gate.exists():
                await asyncio.sleep(0.05)
            if opened is not None:
                opened.set()
        content = {"approved": approve} if approve is not None else {"answer": answer}
        return types.ElicitResult(action="accept", content=content)

    return callback


# --- the scenarios ---------------------------------------------------------------------


async def connect(args: argparse.Namespace) -> dict[str, Any]:
    async with client(args) as c:
        tools = await c.list_tools()
        again = await c.list_tools()
        caps = c.server_capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
        return {
            "protocolVersion": c.protocol_version,
            "server": c.server_info.name if c.server_info else None,
            "capabilities": caps,
            "tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools.tools],
            "deterministic": [t.name for t in tools.tools] == [t.name for t in again.tools],
        }


async def call(args: argparse.Namespace) -> dict[str, Any]:
    """complete / fail: one blocking call of ``--text``."""
    async with client(args) as c:
        return observed_result(await c.call_tool(args.tool, {"message": args.text}))


async def progress(args: argparse.Namespace) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append({"progress": value, "message": message})

    async with client(args) as c:
        result = await c.call_tool(args.tool, {"message": args.text}, progress_callback=on_progress)
    return {"progress": seen, **observed_result(result)}


async def approval(args: argparse.Namespace) -> dict[str, Any]:
    """approve / deny: a call that asks for an approval, answered through elicitation (a
    2026-07-28 InputRequiredResult retried by the SDK; a 2025-11-25 elicitation/create)."""
    seen: list[Any] = []
    callback = answering(approve=args.scenario == "approve", seen=seen)
    async with client(args, elicitation_callback=callback) as c:
        result = await c.call_tool(args.tool, {"message": "approve:deploy"})
    return {"asked": seen, **observed_result(result)}


async def ask(args: argparse.Namespace) -> dict[str, Any]:
    """The first half of a restart (2026-07-28): the question and its requestState, kept
    in ``--state`` for :func:`answer`, which runs in another process after the restart."""
    async with client(args, elicitation_callback=answering(approve=True, seen=[])) as c:  # declares elicitation
        result = await c.session.call_tool(args.tool, {"message": "approve:deploy"}, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult), result
    kept = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    Path(args.state).write_text(json.dumps(kept))
    return {"resultType": kept.get("resultType"), "inputRequests": kept.get("inputRequests")}


async def answer(args: argparse.Namespace) -> dict[str, Any]:
    kept = json.loads(Path(args.state).read_text())
    responses = {key: {"action": "accept", "content": {"approved": True}} for key in kept["inputRequests"]}
    async with client(args, elicitation_callback=answering(approve=True, seen=[])) as c:
        try:
            result = await c.call_tool(
                args.tool, {"message": "approve:deploy"}, input_responses=responses, request_state=kept["requestState"]
            )
        except MCPError as exc:
            return {"error": error_of(exc)}
    return observed_result(result)


async def restart_legacy(args: argparse.Namespace) -> dict[str, Any]:
    """A 2025-11-25 restart: the elicitation/create answered only after the test restarted
    the server (it opens ``--state``'s gate then); the answer goes to the new process. The
    call's own response stream died with the old process: the session (signed, so the new
    process knows it) then follows the task the question named with ``tasks/get`` until the
    answer has continued it."""
    seen: list[Any] = []
    opened = asyncio.Event()
    callback = answering(approve=True, seen=seen, gate=Path(args.state), opened=opened)
    async with client(args, elicitation_callback=callback, read_timeout_seconds=20) as c:
        try:
            result = await c.call_tool(args.tool, {"message": "approve:deploy"})
            return {"asked": seen, **observed_result(result)}
        except Exception as exc:  # the old process's stream is gone: the SDK says so its way
            outcome: dict[str, Any] = {"callError": type(exc).__name__}
        await opened.wait()  # the new process listens: a request now reaches it
        statuses: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and statuses[-1:] not in (["completed"], ["failed"], ["cancelled"]):
            got = await raw(c.session, "tasks/get", {"taskId": seen[0]["taskId"]})
            statuses.append(got.get("status", str(got.get("error"))))
            await asyncio.sleep(0.1)
    return {"asked": seen, "statuses": statuses, **outcome}


async def task_poll(args: argparse.Namespace) -> dict[str, Any]:
    """A call answered with a task handle, polled to its end (``--text`` sleeps a little);
    cancel: the handle cancelled while it runs."""
    async with client(args, extensions=[Tasks()]) as c:
        if args.revision == "2026-07-28":
            handle = await c.session.call_tool(args.tool, {"message": args.text}, allow_claimed=True)
            task_id = handle.task_id
            first = handle.model_dump(by_alias=True, mode="json", exclude_none=True)
        else:  # 2025-11-25: a task-augmented call
            params = {"name": args.tool, "arguments": {"message": args.text}, "task": {"ttl": 60000}}
            first = await raw(c.session, "tools/call", params)
            task_id = first.get("task", {}).get("taskId")
        statuses: list[str] = []
        cancelled = None
        if args.scenario == "task-cancel":
            cancelled = await raw(c.session, "tasks/cancel", {"taskId": task_id})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = await raw(c.session, "tasks/get", {"taskId": task_id})
            status = got.get("status") or got.get("task", {}).get("status")
            statuses.append(status)
            if status in ("completed", "failed", "cancelled"):
                break
            await asyncio.sleep(0.1)
        final: Any = got.get("result")
        if args.revision == "2025-11-25" and status == "completed":
            final = await raw(c.session, "tasks/result", {"taskId": task_id})
        return {"handle": first, "taskId": task_id, "cancelled": cancelled, "statuses": statuses, "final": final}


async def isolation(args: argparse.Namespace) -> dict[str, Any]:
    """The caller of ``--token`` asks (a question left open; a task handle left running);
    the caller of ``--other`` tries to read, continue and cancel them."""
    state = None
    if args.revision == "2026-07-28":  # a client without the tasks extension is asked in the call
        async with client(args, elicitation_callback=answering(approve=True, seen=[])) as c:
            asked = await c.session.call_tool(args.tool, {"message": "approve:deploy"}, allow_input_required=True)
            state = asked.request_state
    async with client(args, extensions=[Tasks()]) as c:
        if args.revision == "2026-07-28":
            running = await c.session.call_tool(args.tool, {"message": "sleep:20"}, allow_claimed=True)
            task_id = running.task_id
        else:
            params = {"name": args.tool, "arguments": {"message": "sleep:20"}, "task": {"ttl": 60000}}
            task_id = (await raw(c.session, "tools/call", params))["task"]["taskId"]
    other = argparse.Namespace(**{**vars(args), "token": args.other})
    found: dict[str, Any] = {"taskId": task_id}
    async with client(other, extensions=[Tasks()]) as c:
        found["get"] = await raw(c.session, "tasks/get", {"taskId": task_id})
        found["cancel"] = await raw(c.session, "tasks/cancel", {"taskId": task_id})
        if state is not None:
            responses = {"a2a-turn-1": {"action": "accept", "content": {"approved": True}}}
            try:
                await c.session.call_tool(
                    args.tool,
                    {"message": "approve:deploy"},
                    input_responses=responses,
                    request_state=state,
                    allow_input_required=True,
                )
                found["continue"] = {"error": None}
            except MCPError as exc:
                found["continue"] = {"error": error_of(exc)}
    async with client(args, extensions=[Tasks()]) as c:  # the owner still sees it running
        found["ownerGet"] = await raw(c.session, "tasks/get", {"taskId": task_id})
        await raw(c.session, "tasks/cancel", {"taskId": task_id})
    return found


async def bad(args: argparse.Namespace) -> dict[str, Any]:
    """Bad input through the SDK: an unknown tool, wrong arguments, a forged requestState."""
    found: dict[str, Any] = {}
    async with client(args) as c:
        for name, tool, arguments in [
            ("unknownTool", "no-such-tool", {"message": "hi"}),
            ("wrongArguments", args.tool, {"text": "hi"}),
            ("notAString", args.tool, {"message": 42}),
        ]:
            try:
                found[name] = {"result": observed_result(await c.session.call_tool(tool, arguments))}
            except MCPError as exc:
                found[name] = {"error": error_of(exc)}
        if args.revision == "2026-07-28":
            try:
                await c.session.call_tool(
                    args.tool,
                    {"message": "approve:deploy"},
                    input_responses={"a2a-turn-1": {"action": "accept", "content": {"approved": True}}},
                    request_state="forged." + "A" * 40,
                    allow_input_required=True,
                )
                found["forgedState"] = {"error": None}
            except MCPError as exc:
                found["forgedState"] = {"error": error_of(exc)}
    return found


async def suite(args: argparse.Namespace) -> dict[str, Any]:
    """Several scenarios at once (``--state``: a JSON list of ``{"name", "scenario",
    "text"?, "other"?}``), each with its own client, concurrently: what each observed, by
    name (a scenario that raised: ``{"crashed": ...}``). One process for them all: the
    SDK's import is most of a scenario's time."""
    plan = json.loads(Path(args.state).read_text())

    async def one(step: dict[str, Any]) -> tuple[str, Any]:
        options = argparse.Namespace(**{**vars(args), **{k: v for k, v in step.items() if k != "name"}})
        try:
            return step["name"], await SCENARIOS[step["scenario"]](options)
        except Exception as exc:
            return step["name"], {"crashed": repr(exc)}

    return {"runs": dict(await asyncio.gather(*(one(step) for step in plan)))}


SCENARIOS = {
    "connect": connect,
    "complete": call,
    "fail": call,
    "progress": progress,
    "approve": approval,
    "deny": approval,
    "ask": ask,
    "answer": answer,
    "restart-legacy": restart_legacy,
    "task-poll": task_poll,
    "task-cancel": task_poll,
    "isolation": isolation,
    "bad": bad,
    "suite": suite,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--revision", choices=["2026-07-28", "2025-11-25"], required=True)
    parser.add_argument("--token", default="")
    parser.add_argument("--other", default="")
    parser.add_argument("--tool", default=TOOL)
    parser.add_argument("--text", default="")
    parser.add_argument("--state", default="")
    args = parser.parse_args()
    observed = asyncio.run(SCENARIOS[args.scenario](args))
    sdk = {"version": importlib.metadata.version("mcp"), "module": mcp.__file__}
    print(json.dumps({"scenario": args.scenario, "revision": args.revision, "sdk": sdk, **observed}, default=str))


if __name__ == "__main__":
    sys.exit(main())
