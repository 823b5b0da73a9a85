"""Interoperability with pydantic's fasta2a client (``fasta2a.client.A2AClient`` 2.1, the
A2A client of pydantic-ai), run as a subprocess of .venv-interop
(tests/interop/clients/fasta2a_client.py).

fasta2a sends v0.3's method names and roles with v1.0's parts (no ``kind``) and no
``A2A-Version``, and reads v1.0's objects with v0.3's enum values: the payload rule
"v0.3 names, v1.0 objects" of docs/protocol.md answers it in that shape.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.interop.support import VENV, server_env
from tests.server import running_server

pytestmark = [pytest.mark.slow, pytest.mark.interop]

#: fasta2a's AgentCard requires each skill's inputModes and outputModes (optional in A2A).
SKILLS = [{"id": "echo", "name": "Echo", "tags": ["echo"], "inputModes": ["text/plain"], "outputModes": ["text/plain"]}]


@pytest.fixture(scope="module")
def fasta2a_server(tmp_path_factory):
    """The site on the memory store, its skills declaring their modes (as fasta2a's card needs)."""
    tmp = tmp_path_factory.mktemp("interop-fasta2a")
    env = {**server_env(tmp, "memory"), "A2A_SKILLS": json.dumps(SKILLS)}
    with running_server(env, log=tmp / "server.log") as base:
        base.log = tmp / "server.log"
        yield base


def fasta2a(run_client, base: str, scenario: str) -> dict[str, Any]:
    observed = run_client("fasta2a_client.py", base, scenario)
    assert observed["fasta2a"]["module"].startswith(str(VENV))
    assert observed["agent"] == "toolnexus-agent"  # it read the card
    assert observed["fasta2a"]["endpoint"] == f"{base}/a2a/"  # and took its first interface
    return observed


def texts(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if "text" in p]


def test_send_blocks_and_reads_the_task(run_client, fasta2a_server):
    observed = fasta2a(run_client, fasta2a_server, "send")
    assert observed["error"] is None
    task = observed["result"]["task"]  # not the empty object a bare v0.3 Task validated to
    assert task["status"]["state"] == "completed"
    [sent] = task["history"]
    assert sent["role"] == "user"
    assert sent["parts"] == [{"text": "hello from fasta2a"}, {"data": {"n": 1}}]  # a text part keeps no media type
    assert texts(task["artifacts"][-1]["parts"]) == ["done: hello from fasta2a"]


def test_get_task_polls_a_task_sent_without_blocking(run_client, fasta2a_server):
    observed = fasta2a(run_client, fasta2a_server, "get")
    sent = observed["sent"]["task"]
    assert sent["status"]["state"] == "submitted"
    polled = observed["polled"]
    assert {t["id"] for t in polled} == {sent["id"]}
    assert polled[-1]["status"]["state"] == "completed"
    assert set(t["status"]["state"] for t in polled) <= {"submitted", "working", "completed"}
    assert [texts(a["parts"]) for a in polled[-1]["artifacts"]] == [["one"], ["done: sleep:0.3;artifact:one"]]


def test_a_failed_task(run_client, fasta2a_server):
    task = fasta2a(run_client, fasta2a_server, "fail")["result"]["task"]
    assert task["status"]["state"] == "failed"
    assert texts(task["status"]["message"]["parts"]) == ["boom"]
    assert task["status"]["message"]["role"] == "agent"


def test_multi_turn(run_client, fasta2a_server):
    observed = fasta2a(run_client, fasta2a_server, "multi-turn")
    asked, answered = observed["asked"], observed["answered"]
    assert asked["status"]["state"] == "input-required"
    assert texts(asked["status"]["message"]["parts"]) == ["Which city?"]
    assert answered["id"] == asked["id"] and answered["context_id"] == asked["context_id"]
    assert answered["status"]["state"] == "completed"
    assert [texts(m["parts"]) for m in answered["history"] if m["role"] == "user"] == [["ask:Which city?"], ["Paris"]]


def test_stream(run_client, fasta2a_server):
    events = [e["result"] for e in fasta2a(run_client, fasta2a_server, "stream")["events"]]
    assert all(e is not None for e in events)
    assert list(events[0]) == ["task"] and events[0]["task"]["status"]["state"] == "submitted"
    kinds = [next(iter(e)) for e in events[1:]]
    assert set(kinds) == {"status_update", "artifact_update"}
    states = [e["status_update"]["status"]["state"] for e in events[1:] if "status_update" in e]
    assert states[0] == "working" and states[-1] == "completed"
    progress = [e["status_update"]["status"].get("message") for e in events[1:] if "status_update" in e]
    assert any(m and texts(m["parts"]) == ["thinking"] for m in progress)
    artifacts = [texts(e["artifact_update"]["artifact"]["parts"]) for e in events if "artifact_update" in e]
    assert artifacts == [["one"], ["done: progress:thinking;artifact:one"]]
