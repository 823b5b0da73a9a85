"""The app in-process for the fuzz tests: a client, the seeded tasks, waiting for the runner to settle."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from a2a.asgi import get_asgi_application
from a2a.runtime.runner import get_runner
from a2a.testing import WireClient
from stores.memory import MemoryTaskStore
from stores.timestamps import now_iso

# The runner's background threads use `random` (lease jitter) while Hypothesis draws.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")


# --- The app, in-process ---------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: httpx.Headers
    content: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0]

    def json(self) -> Any:
        return orjson.loads(self.content)


def leave_idle_streams(app: Any) -> Any:
    """``app``, with a client that goes away from an SSE stream once it is idle (its
    first keepalive: everything there was to send is sent), as a subscription to a task
    waiting for input stays open until the task is terminal; the response is then ended
    (httpx's ASGITransport wants a complete one)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        idle = asyncio.Event()
        state = {"stream": False, "body_read": False, "complete": False}

        async def receive_until_idle() -> Any:
            if state["body_read"]:
                await idle.wait()
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                state["body_read"] = True
            return message

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                state["stream"] = any(
                    k.lower() == b"content-type" and v.startswith(b"text/event-stream") for k, v in message["headers"]
                )
            elif message["type"] == "http.response.body":
                if state["stream"] and message.get("body", b"").startswith(b": keepalive"):
                    idle.set()
                state["complete"] = not message.get("more_body", False)
            await send(message)

        await app(scope, receive_until_idle, watch)
        if idle.is_set() and not state["complete"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    return wrapped


class Client:
    """One event loop and one ASGI app for a whole fuzz test."""

    def __init__(self) -> None:
        self.app = leave_idle_streams(get_asgi_application())
        self.loop = asyncio.new_event_loop()

    def request(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> Answer:
        async def go() -> Answer:
            client = WireClient(app=self.app, version=None)
            response = await asyncio.wait_for(
                client.arequest(method, url, content=content, headers=headers, params=params), 30
            )
            return Answer(response.status_code, response.headers, response.content)

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        self.loop.close()


SEEDED = {"input": "fuzz-input-required", "done": "fuzz-completed", "canceled": "fuzz-canceled"}
CONTEXT = "fuzz-context"


def _message(role: str, text: str, task_id: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": role,
        "parts": [{"kind": "text", "text": text}],
        "taskId": task_id,
        "contextId": CONTEXT,
    }


def seed_tasks(store: MemoryTaskStore, history: int) -> None:
    """Known tasks the generated requests may name: one waiting for input (its history
    full), one completed, one canceled."""
    for key, state in (("input", "input-required"), ("done", "completed"), ("canceled", "canceled")):
        task_id = SEEDED[key]
        messages = [_message("user" if i % 2 == 0 else "agent", f"turn {i}", task_id) for i in range(history)]
        store.save(
            {
                "kind": "task",
                "id": task_id,
                "contextId": CONTEXT,
                "status": {"state": state, "timestamp": now_iso()},
                "history": messages,
                "_version": 1,
            }
        )


def wait_idle(timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while get_runner().active and time.monotonic() < deadline:
        time.sleep(0.01)
