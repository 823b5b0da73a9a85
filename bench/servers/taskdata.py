"""Task payloads for the store benchmarks, shared by every virtualenv (plain Python).

A task in the stored shape our stores and toolnexus's write (A2A v0.3 JSON):
``small`` is about 1 KB (one user message, one artifact), ``large`` about 64 KB (a
history of 100 messages). :func:`sizes` reports the exact JSON sizes.
"""

from __future__ import annotations

import json

TEXT = "The quick brown fox jumps over the lazy dog. " * 10  # 450 characters
SHAPES = {"small": 1, "large": 100}


def message(task_id: str, context_id: str, n: int) -> dict:
    return {
        "kind": "message",
        "role": "user" if n % 2 == 0 else "agent",
        "messageId": f"{task_id}-m{n}",
        "taskId": task_id,
        "contextId": context_id,
        "parts": [{"kind": "text", "text": TEXT}],
    }


def task(task_id: str, shape: str = "small", state: str = "completed", when: str = "2026-01-01T00:00:00.000Z") -> dict:
    """A task with ``SHAPES[shape]`` history messages and one text artifact."""
    context_id = f"ctx-{task_id}"
    return {
        "id": task_id,
        "contextId": context_id,
        "kind": "task",
        "status": {"state": state, "timestamp": when},
        "history": [message(task_id, context_id, n) for n in range(SHAPES[shape])],
        "artifacts": [{"artifactId": f"{task_id}-a", "parts": [{"kind": "text", "text": TEXT[:120].upper()}]}],
        "metadata": {},
        "_version": 1,
    }


def sizes() -> dict[str, int]:
    return {shape: len(json.dumps(task("0123456789abcdef0123456789abcdef", shape))) for shape in SHAPES}
