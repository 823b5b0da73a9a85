"""a2a.client against an agent nobody here wrote: the official a2a-sdk (1.x) server of
tests/interop/servers/sdk_server.py (run by the interop venv's Python), on JSON-RPC and
HTTP+JSON, in v1.0 and in the SDK's v0.3 compatibility mode."""

from __future__ import annotations

import os

import pytest

from a2a.client import (
    AgentUnavailableError,
    Client,
    MethodNotFound,
    PushNotificationNotSupported,
    UnsupportedOperation,
    apply,
)
from tests.interop.support import HERE
from tests.ports import free_port
from tests.server import running_process

pytestmark = [pytest.mark.slow, pytest.mark.interop]

INTERFACES = [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "0.3")]


@pytest.fixture(scope="module")
def sdk_agent(interop_python, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sdk-agent")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the SDK's `a2a`, not ours
    command = [str(interop_python), str(HERE / "servers" / "sdk_server.py"), str(port)]
    with running_process(command, port, env=env, cwd=tmp, log=tmp / "server.log") as base:
        yield base


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_the_sdk_agent(sdk_agent, binding, version):
    with Client(sdk_agent, binding=binding, version=version, timeout=10) as client:
        task = client.send("hello")
        assert (client.interface.binding, client.interface.version) == (binding, version)
        assert task["status"]["state"] == "completed"
        assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: hello"}]
        assert client.get_task(task["id"])["status"]["state"] == "completed"

        folded = None
        for item in client.stream("streamed"):
            folded = apply(folded, item)
        assert folded["status"]["state"] == "completed"
        assert folded["artifacts"][0]["parts"][0]["text"] == "echo: streamed"

        working = client.send("sleep", blocking=False)
        assert client.get_task(working["id"])["status"]["state"] in ("submitted", "working")
        assert client.cancel_task(working["id"])["status"]["state"] == "canceled"

        asked = client.send("ask")
        assert asked["status"]["state"] == "input-required"
        assert asked["status"]["message"]["parts"][0]["text"] == "which one?"
        answered = client.send("thanks", task_id=asked["id"], context_id=asked["contextId"])
        assert answered["id"] == asked["id"] and answered["status"]["state"] == "completed"

        with pytest.raises(PushNotificationNotSupported):
            client.list_push_configs(task["id"])
        with pytest.raises(UnsupportedOperation):
            client.extended_card()
        if version == "1.0":
            assert task["id"] in [t["id"] for t in client.list_tasks(page_size=100).tasks]
        else:  # v0.3 has no ListTasks: the SDK's compatibility layer does not serve it
            with pytest.raises((MethodNotFound, AgentUnavailableError)):
                client.list_tasks()
