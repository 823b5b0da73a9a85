"""Delegation to agents nobody here wrote: the official a2a-sdk (1.x) server of
tests/interop/servers/sdk_server.py, and toolnexus's own ``serve``
(tests/interop/servers/toolnexus_server.py), each run by the interop venv's Python."""

from __future__ import annotations

import asyncio
import os

import pytest

from a2a.client import Client
from a2a.handlers.delegation import METADATA_KEY
from a2a.protocol.model import CancelParams
from a2a.service import operations
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import send_direct, wait_for_state, wait_until
from tests.interop.support import HERE
from tests.ports import free_port
from tests.server import running_process
from tests.test_delegation import message, run

pytestmark = [pytest.mark.slow, pytest.mark.interop]


def serve(interop_python, tmp_path_factory, script: str):
    tmp = tmp_path_factory.mktemp(script.removesuffix(".py"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's `a2a`, not ours
    command = [str(interop_python), str(HERE / "servers" / script), str(port)]
    return running_process(command, port, env=env, cwd=tmp, log=tmp / "server.log")


@pytest.fixture(scope="module")
def sdk_agent(interop_python, tmp_path_factory):
    with serve(interop_python, tmp_path_factory, "sdk_server.py") as base:
        yield base


@pytest.fixture(scope="module")
def toolnexus_agent(interop_python, tmp_path_factory):
    with serve(interop_python, tmp_path_factory, "toolnexus_server.py") as base:
        yield base


@pytest.fixture(autouse=True)
def local(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.test_delegation.delegator"


@pytest.mark.parametrize(("binding", "version"), [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3")])
@pytest.mark.parametrize("stream", [True, False])
def test_delegating_to_the_sdk_agent(settings, sdk_agent, binding, version, stream):
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": sdk_agent, "BINDING": binding, "VERSION": version}}
    task = run("hello", stream=stream, poll_interval=0.05)
    assert task["status"]["state"] == "completed", task["status"]
    assert [a["parts"][0]["text"] for a in task["artifacts"]] == ["echo: hello"]
    assert task["metadata"][METADATA_KEY][0]["state"] == "completed"

    asked = run("ask", stream=stream, poll_interval=0.05)
    assert asked["status"]["state"] == "input-required"
    assert asked["status"]["message"]["parts"][0]["text"] == "which one?"
    send_direct(message("that one", taskId=asked["id"], contextId=asked["contextId"]))
    done = wait_for_state(get_task_store(), asked["id"], {"completed", "failed"}, timeout=20)
    assert done["status"]["state"] == "completed", done["status"]
    assert [r["state"] for r in done["metadata"][METADATA_KEY]] == ["completed"]


def test_a_local_cancel_cancels_the_sdk_task(settings, sdk_agent):
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": sdk_agent}}
    task = send_direct(message("sleep"), blocking=False)
    store = get_task_store()
    wait_until(lambda: (store.get(task["id"]) or {}).get("metadata", {}).get(METADATA_KEY), timeout=10, what="remote")
    remote_id = store.get(task["id"])["metadata"][METADATA_KEY][0]["taskId"]
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    with Client(sdk_agent) as client:
        wait_until(lambda: client.get_task(remote_id)["status"]["state"] == "canceled", timeout=10, what="cancel")


def test_delegating_to_toolnexus_serve(settings, toolnexus_agent):
    """toolnexus's ``serve`` publishes a v0.3 card but answers only the v1.0 method names
    (``SendMessage``, ``GetTask``) with v0.3 payloads (the toolnexus dialect): the client's
    ``message/send`` is refused with Method not found, and it speaks the v1.0 names from
    there on, so the delegation completes."""
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": toolnexus_agent, "TIMEOUT": 5}}
    task = run("hello", poll_interval=0.05, timeout=10)
    assert task["status"]["state"] == "completed", task["status"]
    assert [a["parts"][0]["text"] for a in task["artifacts"]] == ["echo: hello"]
    assert task["metadata"][METADATA_KEY][0]["state"] == "completed"
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": toolnexus_agent, "VERSION": "1.0"}}
    task = run("hello")
    assert "has no card this server accepts" in task["status"]["message"]["parts"][0]["text"]
