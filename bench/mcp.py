"""A blocking MCP ``tools/call`` against a blocking A2A ``SendMessage``, on the same
server in the same run: the server's CPU per call of each, and their ratio (issue 43's
target: MCP <= 1.3x). The handler is trivial (``tests.handlers.scripted``: "done: hi"),
so the ratio is the protocol path's cost. Rounds alternate the two, so a neighbour's
load falls on both alike; the ratio is of the medians.

    .venv/bin/python -m bench.mcp [--calls 300] [--rounds 5] [--json out.json]

On a shared machine say so beside the numbers; for a quiet rerun, run it alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import uuid
from pathlib import Path

import httpx

from bench.loadgen import cpu_seconds
from tests.server import running_server, site_env

MODERN = "2026-07-28"


def a2a_body() -> dict:
    message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": "hi"}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def mcp_body() -> dict:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "echo", "arguments": {"message": "hi"}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def calls(client: httpx.Client, base: str, kind: str, n: int) -> None:
    for _ in range(n):
        if kind == "a2a":
            answer = client.post(f"{base}/a2a/", json=a2a_body(), headers={"A2A-Version": "1.0"})
            assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer.text
        else:
            headers = {
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "echo",
                "Accept": "application/json, text/event-stream",
            }
            answer = client.post(f"{base}/mcp", json=mcp_body(), headers=headers)
            assert answer.status_code == 200 and "done: hi" in answer.text, answer.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = site_env(
            TASK_STORE="memory",
            DATABASE_URL=f"sqlite:///{tmp}/db.sqlite3",
            A2A_HANDLER="tests.handlers.scripted",
            A2A_MCP="true",
            A2A_LOG_LEVEL="WARNING",
        )
        per_call: dict[str, list[float]] = {"a2a": [], "mcp": []}
        with running_server(env) as base, httpx.Client(timeout=30) as client:
            for kind in per_call:  # warm up both paths
                calls(client, base, kind, 20)
            for _ in range(args.rounds):
                for kind in per_call:
                    before = cpu_seconds(base.pid)
                    calls(client, base, kind, args.calls)
                    per_call[kind].append((cpu_seconds(base.pid) - before) / args.calls)
    a2a, mcp = (statistics.median(per_call[k]) for k in ("a2a", "mcp"))
    result = {"a2a_ms": a2a * 1000, "mcp_ms": mcp * 1000, "ratio": mcp / a2a, "rounds": per_call}
    print(f"server CPU per blocking call: SendMessage {a2a * 1000:.2f} ms, tools/call {mcp * 1000:.2f} ms")
    print(f"ratio MCP / A2A: {mcp / a2a:.2f}x (target <= 1.3x)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
