"""Drive an A2A server with toolnexus's A2A agent tools (``toolnexus.a2a``) and report
what they saw, for tests/interop/test_interop.py.

Run with the interop venv's Python (never imported by our test process)::

    .venv-interop/bin/python toolnexus_client.py BASE_URL|CARD_URL SCENARIO

A toolkit is made with ``create_toolkit(agents=[agent(card URL)])``: toolnexus fetches
the Agent Card, makes one tool per skill (named ``<agent name>_<skill id>``,
sanitized), and each call is a non-blocking JSON-RPC ``SendMessage`` then ``GetTask``
polls until the task is terminal. Prints one JSON line; exits 1 with the error on
stderr when a step fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
import urllib.request
import uuid
from typing import Any

from toolnexus import agent, create_toolkit
from toolnexus.types import ToolResult

POLL_EVERY_MS = 50


def result(tool_result: ToolResult) -> dict[str, Any]:
    return {"output": tool_result.output, "isError": tool_result.is_error, "metadata": tool_result.metadata or {}}


def rpc(endpoint: str, method: str, params: dict[str, Any]) -> Any:
    """A plain v1.0 JSON-RPC call (the scenario's own plumbing, not toolnexus)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(
        endpoint, data=body, headers={"Content-Type": "application/json", "A2A-Version": "1.0"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


async def cancel_when_working(endpoint: str, marker: str, timeout: float = 10) -> str:
    """Find the working task whose message is ``marker`` and cancel it (as another
    client would): its id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = await asyncio.to_thread(rpc, endpoint, "ListTasks", {"status": "TASK_STATE_WORKING", "historyLength": 1})
        for task in page["tasks"]:
            if task["history"][0]["parts"][0].get("text") == marker:
                await asyncio.to_thread(rpc, endpoint, "CancelTask", {"id": task["id"]})
                return task["id"]
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no working task with the message {marker!r}")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    import toolnexus

    # BASE_URL, or a card's own URL (one ending in .json, such as a second agent's)
    card_url = args.base_url if args.base_url.endswith(".json") else f"{args.base_url}/.well-known/agent-card.json"
    timeout_ms = 1000 if args.scenario == "ask" else 20_000
    toolkit = await create_toolkit(
        agents=[agent(card_url, poll_every=POLL_EVERY_MS, timeout=timeout_ms)], builtins=False
    )
    async with toolkit:
        tools = [t for t in toolkit.tools() if t.source == "a2a"]
        out: dict[str, Any] = {
            "scenario": args.scenario,
            "toolnexus": {"module": toolnexus.__file__},
            "tools": [{"name": t.name, "description": t.description, "schema": t.input_schema} for t in tools],
        }
        if not tools:
            raise RuntimeError("toolnexus made no tool from the card")
        name = args.tool or tools[0].name
        if args.scenario == "tools":
            return out
        if args.scenario == "echo":
            out["result"] = result(await toolkit.execute(name, {"task": "hello from toolnexus"}))
        elif args.scenario == "artifacts":
            out["result"] = result(await toolkit.execute(name, {"task": "progress:thinking;artifact:one;artifact:two"}))
        elif args.scenario == "fail":
            out["result"] = result(await toolkit.execute(name, {"task": "fail:boom"}))
        elif args.scenario == "ask":
            # toolnexus polls until a terminal state: a task waiting for input times out.
            out["result"] = result(await toolkit.execute(name, {"task": "ask:Which city?"}))
        elif args.scenario == "canceled":
            endpoint = json.loads(urllib.request.urlopen(card_url, timeout=10).read())["url"]
            marker = f"sleep:5;progress:{uuid.uuid4()}"
            call = asyncio.create_task(toolkit.execute(name, {"task": marker}))
            out["canceledTaskId"] = await cancel_when_working(endpoint, marker)
            out["result"] = result(await call)
        else:
            raise RuntimeError(f"unknown scenario {args.scenario!r}")
        return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("scenario", choices=["tools", "echo", "artifacts", "fail", "ask", "canceled"])
    parser.add_argument("--tool", default="", help="the tool to call (default: the first A2A tool)")
    arguments = parser.parse_args()
    try:
        observed = asyncio.run(main(arguments))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    print(json.dumps(observed))
