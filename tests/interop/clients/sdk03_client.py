"""Drive an A2A server with a2a-sdk 0.3 (the v0.3 generation's own Python client) over
HTTP+JSON, and report what it saw, for tests/interop/test_interop.py.

Run with .venv-interop03's Python (never imported by our test process)::

    .venv-interop03/bin/python sdk03_client.py BASE_URL SCENARIO [--webhook URL]

The card is resolved from BASE_URL with the SDK's ``A2ACardResolver`` (the v0.3 card:
``url``, ``preferredTransport``, ``additionalInterfaces``) and the client made by its
``ClientFactory`` for the one transport ``HTTP+JSON``: its ``RestTransport`` appends
``/v1/...`` to the interface URL and parses every answer with ``ParseDict`` into the
v0.3 protos, strictly (an unknown field is an error). Prints one JSON line (what the
client observed); exits 1 with the error on stderr when a step fails.
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

import httpx
from a2a.types import (
    GetTaskPushNotificationConfigParams,
    Message,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskStatusUpdateEvent,
    TextPart,
    TransportProtocol,
)

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

TERMINAL = {"completed", "failed", "canceled", "rejected"}


class ScenarioError(AssertionError):
    """A step of a scenario did not go as the protocol says it should."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ScenarioError(message)


def text_of(parts: list[Part] | None) -> str:
    return "".join(p.root.text for p in parts or () if isinstance(p.root, TextPart))


def describe(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "contextId": task.context_id,
        "state": task.status.state.value,
        "artifacts": [text_of(a.parts) for a in task.artifacts or ()],
        "statusText": text_of(task.status.message.parts) if task.status.message else "",
        "historyRoles": [m.role.value for m in task.history or ()],
    }


def event(item: Any) -> dict[str, Any]:
    """One item of a stream as the SDK gives it: a Message, or (Task, update or None)."""
    if isinstance(item, Message):
        return {"kind": "message", "text": text_of(item.parts)}
    task, update = item
    if update is None:
        return {"kind": "task", "id": task.id, "state": task.status.state.value}
    if isinstance(update, TaskStatusUpdateEvent):
        text = text_of(update.status.message.parts) if update.status.message else ""
        return {"kind": "status-update", "state": update.status.state.value, "final": update.final, "text": text}
    check(isinstance(update, TaskArtifactUpdateEvent), f"an unknown update {update!r}")
    return {
        "kind": "artifact-update",
        "artifactId": update.artifact.artifact_id,
        "text": text_of(update.artifact.parts),
        "append": bool(update.append),
        "lastChunk": bool(update.last_chunk),
    }


def user_message(text: str, **ids: Any) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.user, parts=[Part(root=TextPart(text=text))], **ids)


class Session:
    """Clients made by the SDK's factory from the server's card: blocking, polling
    (non-blocking sends) and streaming."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    async def __aenter__(self) -> Session:
        self.http = httpx.AsyncClient(timeout=30)
        self.card = await A2ACardResolver(self.http, self.base_url).get_agent_card()
        self.blocking = self._client(streaming=False)
        self.polling = self._client(streaming=False, polling=True)
        self.streaming = self._client(streaming=True)
        return self

    def _client(self, **config: Any) -> Any:
        transports = [TransportProtocol.http_json]
        return ClientFactory(ClientConfig(httpx_client=self.http, supported_transports=transports, **config)).create(
            self.card
        )

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    @property
    def transport(self) -> str:
        transport = self.blocking._transport
        return f"{type(transport).__name__} {transport.url}"

    async def send(self, client: Any, text: str, **ids: Any) -> list[Any]:
        return [item async for item in client.send_message(user_message(text, **ids))]

    async def send_task(self, text: str, *, blocking: bool = True, **ids: Any) -> Task:
        items = await self.send(self.blocking if blocking else self.polling, text, **ids)
        check(len(items) == 1 and isinstance(items[0], tuple), f"send answered {items!r}, not one task")
        return items[0][0]

    async def get(self, task_id: str, history_length: int | None = None) -> Task:
        return await self.blocking.get_task(TaskQueryParams(id=task_id, history_length=history_length))

    async def wait(self, task_id: str, states: set[str] = TERMINAL, timeout: float = 15) -> tuple[Task, int]:
        deadline = time.monotonic() + timeout
        polls = 0
        while True:
            task = await self.get(task_id)
            polls += 1
            if task.status.state.value in states:
                return task, polls
            check(time.monotonic() < deadline, f"task {task_id} still {task.status.state.value}")
            await asyncio.sleep(0.05)


async def error_of(call: Any) -> dict[str, Any]:
    """The SDK exception an awaitable raises (it must raise), with its HTTP status."""
    try:
        await call
    except Exception as exc:
        return {"type": type(exc).__name__, "status": getattr(exc, "status_code", None)}
    raise ScenarioError("expected an error")


async def _drain(stream: Any) -> list[Any]:
    return [item async for item in stream]


# --- scenarios ---------------------------------------------------------------------------------


async def send_blocking(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("progress:thinking;artifact:first")
    return {"task": describe(task), "fetched": describe(await s.get(task.id, history_length=10))}


async def send_nonblocking(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("sleep:0.3;artifact:later", blocking=False)
    done, polls = await s.wait(task.id)
    return {"submitted": describe(task), "final": describe(done), "polls": polls}


async def reply(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    return {"response": [event(i) for i in await s.send(s.blocking, "reply:hi there")]}


async def errors(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("quick")
    missing = str(uuid.uuid4())
    return {
        "getUnknown": await error_of(s.get(missing)),
        "cancelUnknown": await error_of(s.blocking.cancel_task(TaskIdParams(id=missing))),
        "cancelCompleted": await error_of(s.blocking.cancel_task(TaskIdParams(id=task.id))),
        "streamToUnknown": await error_of(_drain(s.streaming.send_message(user_message("x", task_id=missing)))),
        "failed": describe(await s.send_task("fail:boom")),
    }


async def cancel(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("sleep:5", blocking=False)
    await s.wait(task.id, {"working"}, timeout=5)
    canceled = await s.blocking.cancel_task(TaskIdParams(id=task.id))
    return {"submitted": describe(task), "canceled": describe(canceled), "fetched": describe(await s.get(task.id))}


async def stream(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    items = await s.send(s.streaming, "progress:step one;chunk:c1:Hello, ;last:c1:world;progress:done")
    events = [event(i) for i in items]
    return {"events": events, "final": describe(await s.get(events[0]["id"]))}


async def resubscribe(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("sleep:1;progress:woke;artifact:late", blocking=False)
    await s.wait(task.id, {"working"}, timeout=5)
    events = [event(i) for i in await _drain(s.streaming.resubscribe(TaskIdParams(id=task.id)))]
    return {"taskId": task.id, "events": events, "final": describe(await s.get(task.id))}


async def multi_turn(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    asked = await s.send_task("ask:Which city?")
    answered = await s.send_task("artifact:Paris", task_id=asked.id, context_id=asked.context_id)
    return {"asked": describe(asked), "answered": describe(answered), "final": describe(await s.get(asked.id))}


def describe_config(config: TaskPushNotificationConfig) -> dict[str, Any]:
    inner = config.push_notification_config
    return {"taskId": config.task_id, "id": inner.id, "url": inner.url, "token": inner.token}


async def push(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    """Set two configs on a task waiting for input (the 0.3 client has set and get; no
    list or delete), get one, then let the task complete: the webhook hears it."""
    check(bool(args.webhook), "--webhook is required")
    task = await s.send_task("ask:Shall I?")
    created = []
    for name in ("one", "two"):
        config = PushNotificationConfig(id=name, url=f"{args.webhook}/{name}", token=f"tok-{name}")
        created.append(
            await s.blocking.set_task_callback(
                TaskPushNotificationConfig(task_id=task.id, push_notification_config=config)
            )
        )
    got = await s.blocking.get_task_callback(
        GetTaskPushNotificationConfigParams(id=task.id, push_notification_config_id="two")
    )
    missing = GetTaskPushNotificationConfigParams(id=task.id, push_notification_config_id="nope")
    done = await s.send_task("artifact:pushed", task_id=task.id, context_id=task.context_id)
    return {
        "taskId": task.id,
        "created": [describe_config(c) for c in created],
        "got": describe_config(got),
        "getUnknown": await error_of(s.blocking.get_task_callback(missing)),
        "final": describe(done),
    }


async def card(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    got = await s.blocking.get_card()
    return {
        "name": got.name,
        "preferred": got.preferred_transport,
        "interfaces": [i.transport for i in got.additional_interfaces or ()],
    }


SCENARIOS = {
    "send-blocking": send_blocking,
    "send-nonblocking": send_nonblocking,
    "reply": reply,
    "errors": errors,
    "cancel": cancel,
    "stream": stream,
    "resubscribe": resubscribe,
    "multi-turn": multi_turn,
    "push": push,
    "card": card,
}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    import a2a

    async with Session(args.base_url) as s:
        observed = await SCENARIOS[args.scenario](s, args)
        sdk = {"module": a2a.__file__, "transport": s.transport, "agent": s.card.name}
        return {"scenario": args.scenario, "sdk": sdk, **observed}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--webhook", default="", help="base URL of the test's webhook receiver")
    arguments = parser.parse_args()
    try:
        result = asyncio.run(main(arguments))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    print(json.dumps(result))
