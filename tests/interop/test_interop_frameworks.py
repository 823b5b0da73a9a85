"""A framework's agent (PydanticAI, LangGraph, the OpenAI Agents SDK: the test agents
of tests/frameworks, on their frameworks' own test models) served by the real site and
driven by the official SDK's client (v1.0 and v0.3 over JSON-RPC): the answer streamed in
chunks, a tool call as progress, an approval asked for and given."""

from __future__ import annotations

import importlib

import pytest

from tests.frameworks.test_common import FRAMEWORKS
from tests.interop.support import V03_JSONRPC, V10_JSONRPC, sdk, server_env
from tests.server import running_server

pytestmark = [pytest.mark.slow, pytest.mark.interop]


@pytest.fixture(scope="module", params=sorted(FRAMEWORKS))
def served(request, tmp_path_factory):
    """The site on the file store with the framework's test agent: (its base URL, the agent's module)."""
    agent = importlib.import_module(f"tests.frameworks.{FRAMEWORKS[request.param]}")
    tmp = tmp_path_factory.mktemp(f"interop-{request.param}")
    env = {**server_env(tmp, f"file:{tmp / 'tasks'}"), "A2A_HANDLER": agent.HANDLER}
    with running_server(env, log=tmp / "server.log") as base:
        base.log = tmp / "server.log"
        yield base, agent


@pytest.mark.parametrize("version", [V10_JSONRPC, V03_JSONRPC], ids=["v1.0", "v0.3"])
def test_the_sdk_client_streams_sees_tools_and_approves(run_client, served, version):
    base, agent = served
    observed = sdk(run_client, base, "framework", version, "--approval", agent.APPROVAL)
    chunks = [e for e in observed["streamed"] if e["kind"] == "artifact-update"]
    # At least: the first word alone, those that came while it was saved, the whole (support.assert_streams).
    assert len(chunks) >= 3 and all(c["append"] for c in chunks[1:-1]) and chunks[-1]["lastChunk"]
    assert chunks[-1]["text"].strip() == "The answer is forty two"
    assert observed["streamed"][-1] == {**observed["streamed"][-1], "kind": "status-update", "state": "completed"}
    progress = [e["text"] for e in observed["tools"] if e["kind"] == "status-update" and e["state"] == "working"]
    assert "Calling weather" in progress and "weather answered" in progress
    assert observed["asked"]["state"] == "input-required" and observed["asked"]["statusText"].startswith(agent.QUESTION)
    assert observed["done"]["state"] == "completed"
    assert [t.strip() for t in observed["done"]["artifacts"]] == [agent.ANSWERS["yes"]]
