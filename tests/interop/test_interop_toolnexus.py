"""Interoperability with toolnexus's A2A agent tools, and the official SDK on the file store (see test_interop.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.interop.support import V10_JSONRPC, V10_REST, VENV, sdk

pytestmark = [pytest.mark.slow, pytest.mark.interop]

# --- the SDK on the file store -----------------------------------------------------------------


def test_sdk_on_the_file_store(run_client, file_server, receiver):
    base, tasks = file_server
    sent = sdk(run_client, base, "send-nonblocking", V10_JSONRPC)["final"]
    turns = sdk(run_client, base, "multi-turn", V10_REST)["answered"]
    hook = receiver.hook()
    pushed = sdk(run_client, base, "push", V10_JSONRPC, "--webhook", hook)
    receiver.wait_for(f"{hook}/keep", "TASK_STATE_COMPLETED")
    for task in (sent, turns, pushed["final"]):
        assert task["state"] == "completed"
        on_disk = json.loads((tasks / f"{task['id']}.json").read_text())
        assert on_disk["status"]["state"] == "completed"
    assert pushed["afterDelete"] == ["keep"]


# --- toolnexus --------------------------------------------------------------------------------

TOOL = "toolnexus-agent_echo"  # sanitize(card name) + "_" + sanitize(skill id)


def toolnexus(run_client, base: str, scenario: str) -> dict[str, Any]:
    observed = run_client("toolnexus_client.py", base, scenario)
    assert observed["toolnexus"]["module"].startswith(str(VENV))
    return observed


def test_toolnexus_makes_a_tool_per_skill(run_client, server):
    observed = toolnexus(run_client, server, "tools")
    [tool] = observed["tools"]
    assert tool["name"] == TOOL
    assert tool["description"].startswith("Replies with the text it was sent")
    assert tool["schema"]["required"] == ["task"]


def test_toolnexus_round_trip(run_client, server):
    result = toolnexus(run_client, server, "echo")["result"]
    assert result["isError"] is False
    assert result["output"] == "done: hello from toolnexus"
    assert result["metadata"]["state"] == "completed"
    assert result["metadata"]["agent"] == "toolnexus-agent"


def test_toolnexus_reads_every_artifact(run_client, server):
    result = toolnexus(run_client, server, "artifacts")["result"]
    assert result["isError"] is False
    assert result["output"] == "one\ntwo\ndone: progress:thinking;artifact:one;artifact:two"


def test_toolnexus_failed_task_is_a_tool_error(run_client, server):
    result = toolnexus(run_client, server, "fail")["result"]
    task_id = result["metadata"]["taskId"]
    assert result["isError"] is True
    assert result["output"] == f"A2A task {task_id} failed: boom"
    assert result["metadata"]["state"] == "failed"


def test_toolnexus_task_canceled_elsewhere_is_a_tool_error(run_client, server):
    observed = toolnexus(run_client, server, "canceled")
    result = observed["result"]
    assert result["metadata"]["taskId"] == observed["canceledTaskId"]
    assert result["isError"] is True
    assert result["output"] == f"A2A task {observed['canceledTaskId']} canceled"


def test_toolnexus_input_required_is_not_terminal(run_client, server):
    """toolnexus polls until a terminal state, so a task that asks for input runs into
    the tool's timeout (1 s here) and is reported with the state it is in."""
    result = toolnexus(run_client, server, "ask")["result"]
    assert result["isError"] is True
    assert result["metadata"]["state"] == "input-required"
    assert "timed out" in result["output"] and "state=input-required" in result["output"]


def test_toolnexus_on_the_file_store(run_client, file_server):
    base, tasks = file_server
    result = toolnexus(run_client, base, "echo")["result"]
    assert result["output"] == "done: hello from toolnexus"
    on_disk = json.loads((tasks / f"{result['metadata']['taskId']}.json").read_text())
    assert on_disk["status"]["state"] == "completed"
