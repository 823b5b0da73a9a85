"""``manage.py a2a_send`` against the real site under uvicorn: v1.0 and v0.3, the card
or the bare endpoint, skills, failures and bad input."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.server import running_server, site_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    log = tmp_path_factory.mktemp("a2a-send") / "server.log"
    env = site_env(TASK_STORE="memory", A2A_HANDLER="tests.handlers.demo", A2A_INPUT_MODES='["*/*"]')
    with running_server(env, log=log) as base:
        yield base


def a2a_send(*args: str) -> tuple[str, str]:
    """`manage.py a2a_send` with ``args``: what it wrote to stdout and to stderr."""
    out, err = io.StringIO(), io.StringIO()
    call_command("a2a_send", *args, "--interval", "0.05", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_v10_through_the_card(agent):
    out, err = a2a_send(agent, "hello", "--skill", "greet")
    assert out.splitlines()[0] == "echo: hello"
    assert json.loads("\n".join(out.splitlines()[1:])) == {"skill": "greet"}
    assert f"at {agent}/a2a/ (A2A 1.0)" in err
    assert "completed" in err and "submitted" in err


def test_v03_and_json_output(agent):
    out, err = a2a_send(agent + "/.well-known/agent-card.json", "old school", "--v03", "--json")
    task = json.loads(out)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0] == {"kind": "text", "text": "echo: old school"}
    assert "(A2A 0.3)" in err


def test_the_bare_endpoint_and_a_data_part(agent):
    out, err = a2a_send(f"{agent}/a2a/", "with data", "--data", '{"n": 1}')
    assert "echo: with data" in out
    assert "using it as the JSON-RPC endpoint" in err or "A2A 1.0" in err


def test_a_failed_task_is_an_error(agent):
    with pytest.raises(CommandError, match="Task failed: asked to fail: fail now"):
        a2a_send(agent, "fail now")


def test_no_wait_prints_the_task_id_and_continuing_a_context(agent):
    out, _ = a2a_send(agent, "later", "--no-wait")
    task_id = out.strip()
    assert len(task_id) == 36
    out, _ = a2a_send(agent, "same context", "--context", "ctx-send", "--json")
    assert json.loads(out)["contextId"] == "ctx-send"


def test_errors_are_reported(agent):
    with pytest.raises(CommandError, match="is not 'Name: value'"):
        a2a_send(agent, "x", "-H", "nonsense")
    with pytest.raises(CommandError, match="--data is not JSON"):
        a2a_send(agent, "x", "--data", "{")
    with pytest.raises(CommandError, match="error -32001"):  # answering a task that does not exist
        a2a_send(agent, "x", "--task", "no-such-task")
    with pytest.raises(CommandError, match="Cannot reach"):
        a2a_send("http://127.0.0.1:9", "x")


def test_to_the_sites_second_agent(agent, settings):
    """--agent: the site's second agent (toolnexus_site/settings.py), from its own card and endpoint."""
    settings.A2A_AGENTS = {"shout": {}}  # the name is all this process needs: the route is the agent's
    out, err = a2a_send(agent, "hello there", "--agent", "shout")
    assert out.strip() == "HELLO THERE"
    assert f"→ toolnexus-shout at {agent}/agents/shout/a2a/ (A2A 1.0)" in err
    with pytest.raises(CommandError, match="No agent named 'nobody'"):
        a2a_send(agent, "hi", "--agent", "nobody")
