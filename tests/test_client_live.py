"""a2a.client (sync) against this project's server under uvicorn: every operation on
JSON-RPC and HTTP+JSON, v1.0 and v0.3, streams as they happen; remote agents by name,
``manage.py a2a_agents`` and the setting's check."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import CommandError, call_command

from a2a.client import Client, TaskNotFound, UnknownRemoteAgent, apply, remote_agent, remote_client
from a2a.client.remote import check_setting
from a2a.ops.checks import check_remote_agents
from tests.server import running_server, site_env

pytestmark = pytest.mark.slow

INTERFACES = [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "0.3")]


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    log = tmp_path_factory.mktemp("client-live") / "server.log"
    env = site_env(TASK_STORE="memory", A2A_HANDLER="tests.handlers.scripted", A2A_PUSH_ALLOW_PRIVATE_URLS="true")
    with running_server(env, log=log) as base:
        yield base


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_every_operation(agent, binding, version):
    with Client(agent, binding=binding, version=version, timeout=10) as client:
        task = client.send("artifact:one")
        assert client.interface.url.startswith(agent)
        assert task["status"]["state"] == "completed" and task["artifacts"][0]["parts"][0]["text"] == "one"
        assert client.get_task(task["id"])["id"] == task["id"]
        assert task["id"] in [t["id"] for t in client.list_tasks(context_id=task["contextId"]).tasks]

        started = time.monotonic()
        arrivals = []
        for item in client.stream("progress:working on it;sleep:0.5;chunk:a:x;last:a:y"):
            arrivals.append((item, time.monotonic() - started))
        progress = next(t for i, t in arrivals if i.kind == "status" and i.task["status"].get("message"))
        assert progress < arrivals[-1][1] - 0.3  # the progress came before the work was done
        folded = None
        for item, _ in arrivals:
            folded = apply(folded, item)
        chunked = next(a for a in folded["artifacts"] if a["artifactId"] == "a")
        assert [p["text"] for p in chunked["parts"]] == ["x", "y"]

        long = client.send("sleep:30", blocking=False)
        config = client.set_push_config(long["id"], "http://127.0.0.1:9/hook", id="c1")
        assert client.get_push_config(long["id"], "c1") == config
        assert [c["id"] for c in client.list_push_configs(long["id"])] == ["c1"]
        client.delete_push_config(long["id"], "c1")
        assert client.list_push_configs(long["id"]) == []
        events = client.subscribe(long["id"])
        assert next(events).kind == "task"
        assert client.cancel_task(long["id"])["status"]["state"] == "canceled"
        assert [i.task["status"]["state"] for i in events if i.kind == "status"][-1] == "canceled"
        with pytest.raises(TaskNotFound):
            client.get_task("missing")


@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_an_async_client_on_the_live_server(agent, version):
    import asyncio

    from a2a.client import AsyncClient

    async def go():
        async with AsyncClient(agent, version=version, binding="HTTP+JSON") as client:
            kinds = [i.kind async for i in client.stream("progress:p;artifact:a")]
            task = await client.send("ask:more?")
            answered = await client.send("artifact:more", task_id=task["id"], context_id=task["contextId"])
            return kinds, task, answered

    kinds, task, answered = asyncio.run(go())
    assert kinds[0] == "task" and kinds[-1] == "status" and "artifact" in kinds
    assert task["status"]["state"] == "input-required" and answered["status"]["state"] == "completed"


def test_remote_agents_by_name(agent, settings):
    settings.A2A_REMOTE_AGENTS = {"here": {"URL": agent, "TIMEOUT": 5, "VERSION": "0.3"}}
    client = remote_client("here")
    assert client is remote_client("here")
    assert client.send("hello")["status"]["state"] == "completed"
    assert client.interface.version == "0.3"
    assert remote_agent("here").forward_caller_credentials is False
    settings.A2A_REMOTE_AGENTS = {"here": {"URL": agent, "FORWARD_CALLER_CREDENTIALS": True}}
    assert remote_client("here") is not client  # built again from the new setting
    assert remote_agent("here").forward_caller_credentials is True
    with pytest.raises(UnknownRemoteAgent, match="No remote agent 'there' in A2A_REMOTE_AGENTS"):
        remote_client("there")


def test_a2a_agents_checks_each_agent(agent, settings):
    settings.A2A_REMOTE_AGENTS = {"here": {"URL": agent}, "down": {"URL": "http://127.0.0.1:9"}}
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of 2 remote agents failed the check"):
        call_command("a2a_agents", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("here  ") and "ok" in lines[0]
    assert (
        f"JSONRPC 1.1 at {agent}/a2a/ (offers JSONRPC 1.0, HTTP+JSON 1.0, JSONRPC 1.1, HTTP+JSON 1.1, "
        "JSONRPC 0.3, HTTP+JSON 0.3)" in lines[0]
    )
    assert lines[1].startswith("down  ") and "FAIL" in lines[1] and "Cannot reach http://127.0.0.1:9/" in lines[1]
    out = io.StringIO()
    call_command("a2a_agents", "here", stdout=out)
    assert "signature not required" in out.getvalue()
    call_command("a2a_agents", "--list", stdout=out)
    assert "down  http://127.0.0.1:9" in out.getvalue()


def test_the_setting_is_checked(settings):
    assert check_setting({"ok": {"URL": "https://agent.example.com"}}) == []
    problems = check_setting(
        {
            "a": {"URL": "agent.example.com", "COLOUR": "blue"},
            "b": {"URL": "http://b", "AUTH": {"TYPE": "magic"}, "VERSION": "2.0"},
            "c": {"URL": "http://c", "VERIFY_SIGNATURE": True, "TIMEOUT": 0},
        }
    )
    assert problems == [
        "A2A_REMOTE_AGENTS['a']: unknown key 'COLOUR' (known: URL, AUTH, TIMEOUT, STREAM_TIMEOUT, RETRIES, "
        "RETRY_WRITES, BINDING, VERSION, VERIFY_SIGNATURE, SIGNATURE_KEYS, HEADERS, FORWARD_CALLER_CREDENTIALS)",
        "A2A_REMOTE_AGENTS['a']: URL must be an absolute http(s) URL, not 'agent.example.com'",
        "A2A_REMOTE_AGENTS['b']: AUTH TYPE must be one of 'bearer', 'api_key', 'headers', 'oauth2', not 'magic'",
        "A2A_REMOTE_AGENTS['b']: VERSION must be one of 1.1, 1.0, 0.3, not '2.0'",
        "A2A_REMOTE_AGENTS['c']: TIMEOUT must be a positive number, not 0",
        "A2A_REMOTE_AGENTS['c']: VERIFY_SIGNATURE needs SIGNATURE_KEYS (the card's public keys)",
    ]
    settings.A2A_REMOTE_AGENTS = ["not", "a", "dict"]
    [error] = check_remote_agents()
    assert error.id == "a2a.E100" and "A2A_REMOTE_AGENTS must be a dict" in error.msg
