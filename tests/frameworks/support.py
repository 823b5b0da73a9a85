"""What the framework tests share: a client of the project's ASGI application (the real
JSON-RPC path, v1.0 unless asked), and readers for what it answers."""

from __future__ import annotations

import time
from typing import Any

from a2a.protocol.model import new_id
from a2a.testing import WireClient
from stores.base import TaskStore

CLIENT = WireClient()


def message(text: str, *, task_id: str | None = None, context_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "ROLE_USER", "messageId": new_id(), "parts": [{"text": text}]}
    if task_id:
        msg["taskId"] = task_id
    if context_id:
        msg["contextId"] = context_id
    return msg


def send(text: str, **ids: Any) -> dict[str, Any]:
    """A blocking SendMessage: the task as answered."""
    return WireClient().send(message(text, **ids))["task"]


def stream(text: str, **ids: Any) -> list[dict[str, Any]]:
    """A SendStreamingMessage: every event's result."""
    return WireClient().send_stream(message(text, **ids))


def state(task: dict[str, Any]) -> str:
    return task["status"]["state"].removeprefix("TASK_STATE_").lower().replace("_", "-")


def status_text(task: dict[str, Any]) -> str:
    return "\n".join(p["text"] for p in (task["status"].get("message") or {}).get("parts", ()) if "text" in p)


def answer(task: dict[str, Any]) -> list[list[Any]]:
    """The task's artifacts, each as its parts' texts (or data)."""
    return [[p.get("text", p.get("data")) for p in a["parts"]] for a in task.get("artifacts", ())]


def chunks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["artifactUpdate"] for e in events if "artifactUpdate" in e]


def progress(events: list[dict[str, Any]]) -> list[str]:
    """The texts of the ``working`` status updates with a message."""
    found = []
    for e in events:
        status = e.get("statusUpdate", {}).get("status", {})
        if status.get("state") == "TASK_STATE_WORKING" and status.get("message"):
            found.append(status["message"]["parts"][0].get("text", ""))
    return found


def streamed_text(events: list[dict[str, Any]]) -> str:
    """The answer as a streaming client rebuilds it from the chunks (append or replace)."""
    text = ""
    for chunk in chunks(events):
        piece = "".join(p.get("text", "") for p in chunk["artifact"]["parts"])
        text = text + piece if chunk.get("append") else piece
    return text


def wait_for(store: TaskStore, task_id: str, predicate: Any, timeout: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = store.get(task_id)
        if task is not None and predicate(task):
            return task
        assert time.monotonic() < deadline, f"timed out: {task}"
        time.sleep(0.01)
