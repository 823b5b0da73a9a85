"""Drive an A2A server with pydantic's fasta2a client (``fasta2a.client.A2AClient``, the
A2A client of pydantic-ai) and report what it read, for tests/interop/test_interop_fasta2a.py.

Run with the interop venv's Python (never imported by our test process)::

    .venv-interop/bin/python fasta2a_client.py BASE_URL SCENARIO

The client reads the Agent Card (``fetch_card=True``: its first ``supportedInterfaces``
entry is the endpoint), then speaks JSON-RPC with v0.3's method names (``message/send``,
``message/stream``, ``tasks/get``) and no ``A2A-Version``. What it reports is what its
own response types validated (``SendMessageResponse`` and the others are TypedDicts that
drop the keys they do not know): that is what a fasta2a user gets. Prints one JSON line;
exits 1 with the error on stderr when a step fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
import uuid
from typing import Any

from fasta2a.client import A2AClient
from fasta2a.schema import Message, MessageSendConfiguration

TERMINAL = ("completed", "canceled", "failed", "rejected")


def message(*parts: dict[str, Any], **ids: str) -> Message:
    """A user message as fasta2a's users write it (its TypedDict, snake_case keys)."""
    return Message(role="user", parts=list(parts), message_id=str(uuid.uuid4()), **ids)


async def send(client: A2AClient, text: str, **options: Any) -> dict[str, Any]:
    """``message/send`` of one text part: the ``result`` fasta2a read (``{"task": ...}`` or
    ``{"message": ...}``); the JSON-RPC error raises."""
    ids = {k: v for k, v in options.items() if k in ("task_id", "context_id")}
    configuration = options.get("configuration")
    answer = await client.send_message(message({"text": text}, **ids), configuration=configuration)
    if "error" in answer:
        raise RuntimeError(f"message/send: {answer['error']}")
    return dict(answer["result"])


async def poll(client: A2AClient, task_id: str, timeout: float = 15) -> list[dict[str, Any]]:
    """``tasks/get`` until the task is terminal: every Task fasta2a read."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = await client.get_task(task_id)
        if "error" in answer:
            raise RuntimeError(f"tasks/get: {answer['error']}")
        seen.append(dict(answer["result"]))
        if seen[-1]["status"]["state"] in TERMINAL:
            return seen
        await asyncio.sleep(0.05)
    raise RuntimeError(f"task {task_id} not terminal after {timeout}s: {seen[-1]['status']}")


async def scenario(client: A2AClient, name: str) -> dict[str, Any]:
    """What the scenario ``name`` observed."""
    if name == "send":
        parts = ({"text": "hello from fasta2a", "media_type": "text/plain"}, {"data": {"n": 1}})
        answer = await client.send_message(message(*parts))
        return {"result": answer.get("result"), "error": answer.get("error")}
    if name == "get":
        later = MessageSendConfiguration(accepted_output_modes=["text/plain"], blocking=False)
        sent = await send(client, "sleep:0.3;artifact:one", configuration=later)
        return {"sent": sent, "polled": await poll(client, sent["task"]["id"])}
    if name == "fail":
        return {"result": await send(client, "fail:boom")}
    if name == "multi-turn":
        asked = (await send(client, "ask:Which city?"))["task"]
        ids = {"task_id": asked["id"], "context_id": asked["context_id"]}
        return {"asked": asked, "answered": (await send(client, "Paris", **ids))["task"]}
    if name == "stream":
        events = client.stream_message(message({"text": "progress:thinking;artifact:one"}))
        return {"events": [{"result": e.get("result"), "error": e.get("error")} async for e in events]}
    raise RuntimeError(f"unknown scenario {name!r}")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    import fasta2a

    # fetch_card reads the card with a blocking httpx.get: off the event loop.
    client = await asyncio.to_thread(A2AClient, args.base_url, fetch_card=True)
    async with client.http_client:
        card = client.agent_card or {}
        return {
            "scenario": args.scenario,
            "fasta2a": {"module": fasta2a.__file__, "endpoint": str(client.http_client.base_url)},
            "agent": card.get("name"),
            **await scenario(client, args.scenario),
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("scenario", choices=["send", "get", "fail", "multi-turn", "stream"])
    arguments = parser.parse_args()
    try:
        observed = asyncio.run(main(arguments))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    print(json.dumps(observed))
