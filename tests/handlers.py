"""Handlers the tests (and test servers) run: a scripted one that does what its
message says, step by step."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from typing import Any

from a2a.core.files import open_part
from a2a.handlers import AuthRequired, HandlerRequest, InputRequired, Reply, TaskFailed
from a2a.handlers.frameworks.awaiting import Question, approval


def scripted(request: HandlerRequest) -> object:
    """Runs the ';'-separated steps of the message text, then answers "done: <text>":

    ``progress:X`` a status update; ``artifact:X`` an artifact; ``chunk:ID:X`` /
    ``last:ID:X`` chunks of artifact ID (the second and later appended);
    ``sleep:S`` wait S seconds (stopping early when canceled); ``wait:PATH`` wait
    until the file PATH exists (a gate the test opens); ``ask:X`` input
    required; ``approve:TOOL`` input required as a framework agent's approval of a call
    of TOOL (the reply, yes or no, answers "approved: TOOL" or "denied: TOOL"); ``auth:X``
    auth required; ``fail:X`` raise TaskFailed(X); ``reply:X`` a direct
    Message; ``data:JSON`` answer with a data part. After an ``ask``, the follow-up
    message's text is the script.
    """
    if (asked := _approval_asked(request)) is not None:
        return f"{'approved' if approval(request) else 'denied'}: {asked}"
    started_chunks: set[str] = set()
    for step in request.text.split(";"):
        verb, _, arg = step.strip().partition(":")
        if verb == "progress":
            request.progress(arg)
        elif verb == "artifact":
            request.artifact(arg, name="step")
        elif verb in ("chunk", "last"):
            artifact_id, _, text = arg.partition(":")
            request.artifact(
                text, artifact_id=artifact_id, append=artifact_id in started_chunks, last_chunk=verb == "last"
            )
            started_chunks.add(artifact_id)
        elif verb == "sleep":
            request.cancelled.wait(float(arg))
        elif verb == "wait":  # until the test creates the file ARG (or 30 s, or cancel)
            for _ in range(3000):
                if os.path.exists(arg) or request.cancelled.wait(0.01):
                    break
        elif verb == "ask":
            raise InputRequired(arg)
        elif verb == "approve":
            raise InputRequired(Question([{"id": "call-1", "tool": arg, "args": {}}], []).parts())
        elif verb == "auth":
            raise AuthRequired(arg)
        elif verb == "fail":
            raise TaskFailed(arg)
        elif verb == "reply":
            return Reply(arg)
        elif verb == "data":
            return {"kind": "data", "data": json.loads(arg)}
    return f"done: {request.text}"


def _approval_asked(request: HandlerRequest) -> str | None:
    """The tool whose approval the task's last question asked (``approve:TOOL``), or None."""
    if not request.is_continuation or not request.history:
        return None
    for message in reversed(request.history):
        if message.get("role") in ("agent", "ROLE_AGENT"):
            for part in message.get("parts", []):
                awaiting = (part.get("data") or {}).get("a2a.awaiting") if isinstance(part.get("data"), dict) else None
                if isinstance(awaiting, dict) and awaiting.get("approvals"):
                    return str(awaiting["approvals"][0]["tool"])
            return None
    return None


def slow(request: HandlerRequest) -> str:
    time.sleep(0.05)
    return request.text


def recording(request: HandlerRequest) -> str:
    """Appends this process's pid to the file ``$A2A_TEST_RUNS_FILE`` (one line per
    run), then works for ``sleep:S`` seconds (default 0.3), or until the file PATH of
    ``wait:PATH`` exists (a gate the test opens, however slow the machine): who ran what,
    how often. A cancel ends the work at once."""
    import os

    with open(os.environ["A2A_TEST_RUNS_FILE"], "a") as runs:
        runs.write(f"{os.getpid()} {request.task_id}\n")
    verb, _, arg = request.text.partition(":")
    if verb == "wait":
        while not os.path.exists(arg) and not request.cancelled.wait(0.02):
            pass
    else:
        request.cancelled.wait(float(arg) if verb == "sleep" else 0.3)
    return f"done: {request.text}"


def journaled(request: HandlerRequest) -> str:
    """Like :func:`recording`, but a journal of each run's start and end, one line each
    (``start|end <pid> <task id> <unix time> <canceled>``) in ``$A2A_TEST_RUNS_FILE``
    (appends of one short line are atomic across processes): which process ran what,
    when, and whether two runs of one task ever overlapped."""
    import os

    def note(what: str) -> None:
        with open(os.environ["A2A_TEST_RUNS_FILE"], "a") as runs:
            runs.write(f"{what} {os.getpid()} {request.task_id} {time.time():.6f} {int(request.cancelled.is_set())}\n")

    note("start")
    verb, _, arg = request.text.partition(":")
    request.cancelled.wait(float(arg) if verb == "sleep" else 0.05)
    note("end")
    return f"done: {request.text}"


def demo(request: HandlerRequest) -> list[dict[str, Any]]:
    """A handler for tests that drive a real server: "fail..." fails; anything else is
    echoed, with the skill the message named as a data part."""
    if request.text.startswith("fail"):
        raise TaskFailed(f"asked to fail: {request.text}")
    skill = (request.message.get("metadata") or {}).get("skill")
    return [{"kind": "text", "text": f"echo: {request.text}"}, {"kind": "data", "data": {"skill": skill}}]


def loud(request: HandlerRequest) -> object:
    """:func:`scripted`, its final answer in capitals and naming the agent it ran for:
    the second agent's handler in the agents' tests (a2a.agents)."""
    answer = scripted(request)
    return f"{request.agent.name}: {answer.upper()}" if isinstance(answer, str) else answer


def digest(request: HandlerRequest) -> str:
    """Answers with the SHA-256 and size of each file part of the message, read as a handler
    reads one, inline or offloaded (a2a.core.files.open_part): "<hex> <size>" per part.
    "big:N" answers with a file artifact of N bytes (``b"x" * N``)."""
    if request.text.startswith("big:"):
        content = base64.b64encode(b"x" * int(request.text[4:])).decode()
        return [{"kind": "file", "file": {"bytes": content, "name": "out.bin", "mimeType": "application/octet-stream"}}]
    answers = []
    for part in request.message.get("parts") or ():
        if part.get("kind") == "file":
            sha, size = hashlib.sha256(), 0
            with open_part(part, request.task_id) as handle:
                while chunk := handle.read(1 << 20):
                    sha.update(chunk)
                    size += len(chunk)
            answers.append(f"{sha.hexdigest()} {size}")
    return "; ".join(answers) or request.text


def stubborn(request: HandlerRequest) -> str:
    """Sleeps the seconds its message's text says, deaf to a cancel (a sync handler
    blocked in a call it cannot interrupt)."""
    time.sleep(float(request.text))
    return "woke up"
