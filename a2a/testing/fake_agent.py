"""A scripted fake remote A2A agent, for delegation tests: a real server on loopback that
serves an Agent Card at ``/.well-known/agent-card.json`` and answers v1.0 JSON-RPC
``SendMessage``, ``SendStreamingMessage`` (SSE), ``GetTask`` and ``CancelTask``.

Each message the agent receives plays the next script (the last one repeats): a list of
:class:`Step` (a state, a status text, an artifact chunk, a delay, a dropped connection).
A message that names a task waiting in ``input-required`` plays the next script on that
task. :meth:`FakeAgent.fail_next` answers the next requests with an HTTP error.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from a2a.testing.envelopes import rpc_error, rpc_result, sse_event
from a2a.testing.loopback import QuietHandler, Seen, serving

#: The states after which a task changes no more, and those that wait for the client.
TERMINAL = {"completed", "failed", "canceled", "rejected"}
INTERRUPTED = {"input-required", "auth-required"}


@dataclasses.dataclass(frozen=True)
class Step:
    """One thing the remote task does: wait ``delay`` seconds, then move to ``state`` (with
    ``text`` as its status message) and/or add an ``artifact`` chunk, or drop the connection."""

    state: str | None = None
    text: str | None = None
    artifact: str | None = None
    artifact_id: str = "result"
    append: bool = False
    last_chunk: bool = True
    delay: float = 0.0
    disconnect: bool = False


def working(text: str | None = None, *, delay: float = 0.0) -> Step:
    """The task is working (``text`` as its progress message)."""
    return Step("working", text, delay=delay)


def completed(text: str | None = None, *, delay: float = 0.0) -> Step:
    """The task completes (``text`` as its final status message)."""
    return Step("completed", text, delay=delay)


def failed(text: str = "the fake agent failed", *, delay: float = 0.0) -> Step:
    """The task fails with ``text``."""
    return Step("failed", text, delay=delay)


def input_required(question: str, *, delay: float = 0.0) -> Step:
    """The task asks the client ``question`` and waits for its answer."""
    return Step("input-required", question, delay=delay)


def auth_required(text: str = "sign in first", *, delay: float = 0.0) -> Step:
    """The task needs the client's credentials before it goes on."""
    return Step("auth-required", text, delay=delay)


def canceled(*, delay: float = 0.0) -> Step:
    """The remote agent cancels the task itself."""
    return Step("canceled", delay=delay)


def artifact(text: str, *, append: bool = False, last_chunk: bool = True, artifact_id: str = "result") -> Step:
    """An artifact chunk (``append`` to the artifact of the same id; ``last_chunk`` ends it)."""
    return Step(artifact=text, artifact_id=artifact_id, append=append, last_chunk=last_chunk)


def pause(seconds: float) -> Step:
    """Wait ``seconds`` (past a client's timeout, say)."""
    return Step(delay=seconds)


def disconnect() -> Step:
    """Drop the connection without a word (a stream ends mid-way, a send gets no answer)."""
    return Step(disconnect=True)


def proto_state(state: str) -> str:
    """``input-required`` -> ``TASK_STATE_INPUT_REQUIRED``."""
    return "TASK_STATE_" + state.upper().replace("-", "_")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text_message(text: str, task: dict[str, Any]) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_AGENT", "parts": [{"text": text}],
            "taskId": task["id"], "contextId": task["contextId"]}  # fmt: skip


class Dropped(Exception):
    """A :func:`disconnect` step: the handler closes the connection without answering."""


class FakeAgent:
    """The fake agent's scripts, tasks and received requests (``requests``, each a
    :class:`~a2a.testing.loopback.Seen`). ``url`` is its base URL once it serves."""

    def __init__(self, name: str = "fake-agent", skills: list[dict[str, Any]] | None = None) -> None:
        self.name = name
        self.skills = skills or [{"id": "echo", "name": "Echo", "description": "Answers.", "tags": ["test"]}]
        self.scripts: list[list[Step]] = [[artifact("fake answer"), completed()]]
        self.requests: list[Seen] = []
        self.tasks: dict[str, dict[str, Any]] = {}
        self.failures: list[tuple[int, Any]] = []
        self.server: Any = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The base URL (``http://127.0.0.1:<port>``)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def card_url(self) -> str:
        """Where the Agent Card is served."""
        return self.url + "/.well-known/agent-card.json"

    @property
    def interface(self) -> dict[str, str]:
        """The card's one interface: v1.0 JSON-RPC at ``/a2a/``."""
        return {"url": self.url + "/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}

    def script(self, *scripts: list[Step]) -> None:
        """Play ``scripts`` for the next messages, one each (the last one repeats)."""
        self.scripts = [list(s) for s in scripts]

    def fail_next(self, status: int = 503, times: int = 1, body: Any = None) -> None:
        """Answer the next ``times`` requests with HTTP ``status`` (and ``body``)."""
        self.failures.extend([(status, body if body is not None else {"error": "fake failure"})] * times)

    def card(self) -> dict[str, Any]:
        """The v1.0 Agent Card: one JSON-RPC interface, streaming, the skills."""
        return {
            "name": self.name,
            "description": "A scripted fake A2A agent (a2a.testing).",
            "version": "1.0.0",
            "supportedInterfaces": [
                {"url": self.url + "/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": True, "pushNotifications": False},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": self.skills,
        }

    # --- Tasks -----------------------------------------------------------------------------

    def _next_script(self) -> list[Step]:
        with self._lock:
            return self.scripts.pop(0) if len(self.scripts) > 1 else list(self.scripts[0])

    def start(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[Step]]:
        """The task a message starts (or continues) and the script it plays."""
        with self._lock:
            task = self.tasks.get(message.get("taskId") or "")
            if task is None:
                task_id = str(uuid.uuid4())
                context = message.get("contextId") or str(uuid.uuid4())
                task = {"id": task_id, "contextId": context, "artifacts": [], "history": [],
                        "status": {"state": proto_state("submitted"), "timestamp": _now()}}  # fmt: skip
                self.tasks[task_id] = task
            elif task["status"]["state"] in {proto_state(s) for s in TERMINAL}:
                raise RpcError(-32004, f"Task {task['id']} is in a terminal state")
            else:  # the client's answer to input-required: the task moves on
                task["status"] = {"state": proto_state("working"), "timestamp": _now()}
            task["history"].append(message)
        return task, self._next_script()

    def apply(self, task: dict[str, Any], step: Step) -> list[dict[str, Any]]:
        """Play one step on ``task``; the stream events it makes (v1.0 stream responses)."""
        if step.delay:
            time.sleep(step.delay)
        if step.disconnect:
            raise Dropped
        events = []
        with self._lock:
            if step.artifact is not None:
                events.append({"artifactUpdate": self._add_chunk(task, step)})
            if step.state is not None and not self.is_done(task):
                task["status"] = {"state": proto_state(step.state), "timestamp": _now()}
                if step.text:
                    task["status"]["message"] = _text_message(step.text, task)
                update = {"taskId": task["id"], "contextId": task["contextId"], "status": task["status"]}
                events.append({"statusUpdate": copy.deepcopy(update)})
        return events

    def _add_chunk(self, task: dict[str, Any], step: Step) -> dict[str, Any]:
        part = {"text": step.artifact}
        found = next((a for a in task["artifacts"] if a["artifactId"] == step.artifact_id), None)
        if step.append and found is not None:
            found["parts"].append(part)
        else:
            task["artifacts"] = [a for a in task["artifacts"] if a is not found]
            task["artifacts"].append({"artifactId": step.artifact_id, "parts": [part]})
        chunk = {"artifactId": step.artifact_id, "parts": [part]}
        return {"taskId": task["id"], "contextId": task["contextId"], "artifact": chunk,
                "append": step.append, "lastChunk": step.last_chunk}  # fmt: skip

    def play(self, task: dict[str, Any], steps: list[Step]) -> Iterator[dict[str, Any]]:
        """Every event of ``steps`` on ``task``, in order, until the task stops or is canceled."""
        for step in steps:
            if self.is_done(task):
                return
            yield from self.apply(task, step)

    def is_done(self, task: dict[str, Any]) -> bool:
        """True once the task is terminal or waits for its client."""
        return task["status"]["state"] in {proto_state(s) for s in TERMINAL | INTERRUPTED}

    def cancel(self, task_id: str) -> dict[str, Any] | None:
        """Cancel a task that is not terminal (the task; None when unknown)."""
        with self._lock:
            task = self.tasks.get(task_id)
            terminal = {proto_state(s) for s in TERMINAL}
            if task is not None and task["status"]["state"] not in terminal:
                task["status"] = {"state": proto_state("canceled"), "timestamp": _now()}
            return task

    def snapshot(self, task: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``task`` as the wire shows it."""
        with self._lock:
            return copy.deepcopy(task)


class RpcError(Exception):
    """A JSON-RPC error the fake agent answers with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def dispatch(agent: FakeAgent, method: str, params: dict[str, Any]) -> Any:
    """The result of one unary JSON-RPC call."""
    if method == "SendMessage":
        task, steps = agent.start(params["message"])
        if (params.get("configuration") or {}).get("returnImmediately"):
            submitted = agent.snapshot(task)
            threading.Thread(target=_play_quietly, args=(agent, task, steps), daemon=True).start()
            return {"task": submitted}
        for _ in agent.play(task, steps):
            pass
        return {"task": agent.snapshot(task)}
    if method in ("GetTask", "CancelTask"):
        found = agent.tasks.get(params.get("id", "")) if method == "GetTask" else agent.cancel(params.get("id", ""))
        if found is None:
            raise RpcError(-32001, f"Task not found: {params.get('id')}")
        return agent.snapshot(found)
    raise RpcError(-32601, f"Method not found: {method}")


def _play_quietly(agent: FakeAgent, task: dict[str, Any], steps: list[Step]) -> None:
    with contextlib.suppress(Dropped):
        for _ in agent.play(task, steps):
            pass


def handler_for(agent: FakeAgent) -> type[QuietHandler]:
    """The HTTP handler that serves ``agent``."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            agent.requests.append(self.seen())
            if self.path.split("?")[0] == "/.well-known/agent-card.json":
                self.answer(200, agent.card())
            else:
                self.answer(404, {"error": "not found"})

        def do_POST(self) -> None:
            seen = self.seen()
            agent.requests.append(seen)
            with agent._lock:
                failure = agent.failures.pop(0) if agent.failures else None
            if failure is not None:
                self.answer(*failure)
                return
            body = seen.body if isinstance(seen.body, dict) else {}
            request_id, params = body.get("id"), body.get("params") or {}
            try:
                if body.get("method") == "SendStreamingMessage":
                    self.stream(request_id, params)
                    return
                result = dispatch(agent, str(body.get("method")), params)
                self.answer(200, rpc_result(result, request_id))
            except Dropped:
                self.close_connection = True
            except RpcError as error:
                self.answer(200, rpc_error(error.code, str(error), request_id))

        def stream(self, request_id: Any, params: dict[str, Any]) -> None:
            task, steps = agent.start(params["message"])
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            with contextlib.suppress(Dropped, BrokenPipeError, ConnectionResetError):
                for event in itertools.chain([{"task": agent.snapshot(task)}], agent.play(task, steps)):
                    self.wfile.write(sse_event(rpc_result(event, request_id)))
                    self.wfile.flush()

    return Handler


@contextlib.contextmanager
def fake_agent(name: str = "fake-agent") -> Iterator[FakeAgent]:
    """A :class:`FakeAgent` serving on 127.0.0.1 (a random port) until the block ends."""
    agent = FakeAgent(name)
    with serving(handler_for(agent), "fake-agent") as server:
        agent.server = server
        yield agent
