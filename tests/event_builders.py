"""Tasks and artifacts as the event tests build them (test_events.py, test_events_follow.py)."""

from __future__ import annotations


def task(task_id: str, version: int, state: str = "working", **extra) -> dict:
    """A task at ``version`` in ``state``."""
    return {"id": task_id, "contextId": "c", "status": {"state": state}, "_version": version, **extra}


def art(artifact_id: str, *texts: str) -> dict:
    return {"artifactId": artifact_id, "parts": [{"kind": "text", "text": t} for t in texts]}
