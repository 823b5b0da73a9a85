"""Handlers the tests (and test servers) run: a scripted one that does what its
message says, step by step."""

from __future__ import annotations

import json
import time

from a2a.handlers import AuthRequired, HandlerRequest, InputRequired, Reply


def scripted(request: HandlerRequest) -> object:
    """Runs the ';'-separated steps of the message text, then answers "done: <text>":

    ``progress:X`` a status update; ``artifact:X`` an artifact; ``chunk:ID:X`` /
    ``last:ID:X`` chunks of artifact ID (the second and later appended);
    ``sleep:S`` wait S seconds (stopping early when canceled); ``ask:X`` input
    required; ``auth:X`` auth required; ``fail:X`` raise; ``reply:X`` a direct
    Message; ``data:JSON`` answer with a data part. After an ``ask``, the follow-up
    message's text is the script.
    """
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
        elif verb == "ask":
            raise InputRequired(arg)
        elif verb == "auth":
            raise AuthRequired(arg)
        elif verb == "fail":
            raise RuntimeError(arg)
        elif verb == "reply":
            return Reply(arg)
        elif verb == "data":
            return {"kind": "data", "data": json.loads(arg)}
    return f"done: {request.text}"


def slow(request: HandlerRequest) -> str:
    time.sleep(0.05)
    return request.text
