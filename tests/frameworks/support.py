"""What the framework tests share: a client of the project's ASGI application (the real
JSON-RPC path, v1.0 unless asked), and readers for what it answers."""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType
from typing import Any

from a2a.handlers import loading
from a2a.protocol.model import new_id
from a2a.runtime import runner
from a2a.testing import WireClient
from stores.base import TaskStore
from stores.memory import MemoryTaskStore
from tests.conftest import STORE_KINDS, make_store
from tests.helpers import send_wire

CLIENT = WireClient()


def message(text: str, *, task_id: str | None = None, context_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "ROLE_USER", "messageId": new_id(), "parts": [{"text": text}]}
    if task_id:
        msg["taskId"] = task_id
    if context_id:
        msg["contextId"] = context_id
    return msg


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


def assert_streams(prompt: str, expected: str) -> None:
    """A stream of ``prompt`` carries the answer in growing chunks, then the whole of it
    (``lastChunk``); a poller reads the same single-part artifact. Three chunks at least,
    however loaded the machine: the first word goes out alone, the words that come while
    it is saved go out together in the next, then the whole."""
    events = stream(prompt)
    parts = chunks(events)
    assert len(parts) >= 3 and parts[-1]["lastChunk"] and all(c["append"] for c in parts[1:-1])
    assert streamed_text(events).strip() == expected
    task = WireClient().result("GetTask", {"id": events[0]["task"]["id"]})
    assert state(task) == "completed"
    assert [[text.strip() for text in artifact] for artifact in answer(task)] == [[expected]]


#: The stores that keep a paused run across a restart.
DURABLE = [kind for kind in STORE_KINDS if kind != "memory"]


def restart(settings: Any, kind: str, tmp_path: Path) -> None:
    """As if the server restarted: no runner, no handler, no store object survives;
    only what the store saved."""
    runner._runner.shutdown(grace=5)
    runner._runner = None
    loading._instances.clear()
    loading.load_handler.cache_clear()
    settings.TASK_STORE = make_store(kind, tmp_path)


def assert_tool_progress(prompt: str = "weather", expected: str = "The tool said: sunny in Paris") -> None:
    """The tool the prompt makes the model call shows as progress, then its answer streams."""
    events = stream(prompt)
    assert progress(events) == ["Calling weather", "weather answered"]
    assert streamed_text(events).strip() == expected


def assert_resumes_after_restart(settings: Any, tmp_path: Path, kind: str, question: str, reply: str) -> None:
    """The run paused by ``question`` goes on with ``reply`` after a restart."""
    settings.TASK_STORE = make_store(kind, tmp_path)
    asked = send_wire(question)
    assert state(asked) == "input-required"
    restart(settings, kind, tmp_path)
    assert state(send_wire(reply, task_id=asked["id"])) == "completed"


def assert_cancel_stops(settings: Any, words: list[str]) -> None:
    """A client's CancelTask mid-stream stops the run: the model (appending to ``words``
    as it streams "slow") is asked for no more."""
    words.clear()
    task = WireClient().send("slow", blocking=False)["task"]
    wait_for(settings.TASK_STORE, task["id"], lambda t: t.get("artifacts"))
    assert state(WireClient().result("CancelTask", {"id": task["id"]})) == "canceled"
    time.sleep(0.2)
    streamed = len(words)
    time.sleep(0.3)
    assert len(words) == streamed < 400
    assert state(WireClient().result("GetTask", {"id": task["id"]})) == "canceled"


def serve(settings: Any, agent: ModuleType) -> ModuleType:
    """Serve the test agent of ``agent`` (a module with ``HANDLER`` and ``DELETED``) on a
    fresh memory store; the module."""
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = agent.HANDLER
    agent.DELETED.clear()
    return agent
