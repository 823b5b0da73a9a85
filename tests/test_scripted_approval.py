"""The scripted test handler's ``approve:TOOL`` step (the MCP interop tests' approval): the
task asks as a framework agent's approval does, and the reply, yes or no, is the answer."""

from __future__ import annotations

import pytest

from a2a.testing.client import WireClient, message
from stores.memory import MemoryTaskStore


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.handlers.scripted"


@pytest.mark.parametrize(("reply", "answer"), [("yes", "approved: deploy"), ("no", "denied: deploy")])
def test_approve_asks_for_an_approval_and_the_reply_answers_it(reply, answer):
    wire = WireClient()
    asked = wire.rpc("SendMessage", {"message": message("approve:deploy")})["result"]["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    parts = asked["status"]["message"]["parts"]
    assert parts[0]["text"] == "deploy({}) needs your approval: reply yes or no."
    assert parts[1]["data"]["a2a.awaiting"]["approvals"][0]["tool"] == "deploy"
    follow_up = message(reply, taskId=asked["id"], contextId=asked["contextId"])
    done = wire.rpc("SendMessage", {"message": follow_up})["result"]["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][-1]["parts"][0]["text"] == answer


def test_a_reply_after_a_question_that_is_no_approval_is_still_the_script():
    wire = WireClient()
    asked = wire.rpc("SendMessage", {"message": message("ask:Which city?")})["result"]["task"]
    follow_up = message("yes", taskId=asked["id"], contextId=asked["contextId"])
    done = wire.rpc("SendMessage", {"message": follow_up})["result"]["task"]
    assert done["artifacts"][-1]["parts"][0]["text"] == "done: yes"
