"""The example site's second agent ("shout": its own card, handler and skills, at
/agents/shout/, toolnexus_site/settings.py) reached by third-party clients from its card
URL: the official SDK (v1.0 and v0.3, JSON-RPC and HTTP+JSON) and toolnexus. Its tasks
are its own: the default agent's endpoint answers for them as for an unknown task."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from a2a.testing.client import rpc_body
from tests.interop.support import V03_JSONRPC, V03_REST, V10_JSONRPC, V10_REST, VENV, sdk

pytestmark = [pytest.mark.slow, pytest.mark.interop]

CARD = "/agents/shout/.well-known/agent-card.json"


def get_task(endpoint: str, task_id: str) -> dict:
    body = json.dumps(rpc_body("GetTask", {"id": task_id})).encode()
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    with urllib.request.urlopen(urllib.request.Request(endpoint, data=body, headers=headers), timeout=10) as answer:
        return json.loads(answer.read())


@pytest.mark.parametrize(
    "version",
    [V10_JSONRPC, V10_REST, V03_JSONRPC, V03_REST],
    ids=["v1.0-jsonrpc", "v1.0-rest", "v0.3-jsonrpc", "v0.3-rest"],
)
def test_the_sdk_reaches_the_second_agent_from_its_card(run_client, server, version):
    observed = sdk(run_client, server + CARD, "send-nonblocking", version, agent="toolnexus-shout")
    assert f"{server}/agents/shout/a2a" in observed["sdk"]["transport"]
    final = observed["final"]
    assert final["state"] == "completed"
    assert final["artifacts"] == ["SLEEP:0.3;ARTIFACT:LATER"]  # its own handler (a2a.handlers.upper)
    # Its task is its own: the default agent answers as for an unknown task.
    assert get_task(f"{server}/agents/shout/a2a/", final["id"])["result"]["id"] == final["id"]
    assert get_task(f"{server}/a2a/", final["id"])["error"]["code"] == -32001


def test_toolnexus_reaches_the_second_agent_from_its_card(run_client, server):
    tools = run_client("toolnexus_client.py", server + CARD, "tools")
    assert tools["toolnexus"]["module"].startswith(str(VENV))
    assert [tool["name"] for tool in tools["tools"]] == ["toolnexus-shout_shout"]
    echoed = run_client("toolnexus_client.py", server + CARD, "echo")
    assert echoed["result"]["isError"] is False
    assert "HELLO FROM TOOLNEXUS" in echoed["result"]["output"]
