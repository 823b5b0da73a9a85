"""A framework agent's approval (a PydanticAI deferred tool, an OpenAI Agents
``needs_approval`` tool, a LangGraph ``interrupt``) answered from an MCP client exactly as
from an A2A client: in process for every framework on its own test model (approved and
denied), and through a real server restarted between the question and the answer (file
store; the ORM store on PostgreSQL)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import httpx
import pytest
from django.conf import settings as django_settings

from tests.frameworks.support import serve
from tests.frameworks.test_common import FRAMEWORKS
from tests.mcp.support import ELICIT, modern, modern_body, modern_headers, result
from tests.server import manage, postgres_database, running_server, site_env


@pytest.fixture(params=sorted(FRAMEWORKS))
def served(request, settings) -> ModuleType:
    settings.A2A_MCP = True
    return serve(settings, importlib.import_module(f"tests.frameworks.{FRAMEWORKS[request.param]}"))


def reply(question: dict[str, Any], yes: bool) -> dict[str, Any]:
    """The elicitation response a person gives: the yes/no form of an approval, or the
    text answer of a question (LangGraph's interrupt asks in words)."""
    properties = question["params"]["requestedSchema"]["properties"]
    if "approved" in properties:
        return {"action": "accept", "content": {"approved": yes}}
    return {"action": "accept", "content": {"answer": "yes" if yes else "no"}}


def tool_name() -> str:
    (tool,) = result(modern("tools/list"))["tools"]
    return tool["name"]


@pytest.mark.parametrize("yes", [True, False], ids=["approved", "denied"])
def test_an_approval_is_answered_by_an_mcp_client(served, yes):
    name = tool_name()
    asked = result(modern("tools/call", {"name": name, "arguments": {"message": served.APPROVAL}}, caps=ELICIT))
    assert asked["resultType"] == "input_required", asked
    (question,) = asked["inputRequests"].values()
    assert question["params"]["message"] == served.QUESTION
    assert "approved" in question["params"]["requestedSchema"]["properties"]  # a yes/no form on every framework
    retry = {"name": name, "arguments": {"message": served.APPROVAL}, "requestState": asked["requestState"]}
    retry["inputResponses"] = {key: reply(q, yes) for key, q in asked["inputRequests"].items()}
    done = result(modern("tools/call", retry, caps=ELICIT))
    assert done["resultType"] == "complete" and done["isError"] is False, done
    assert served.ANSWERS["yes" if yes else "no"] in [c["text"].strip() for c in done["content"]]
    assert bool(served.DELETED) == yes  # the tool ran only when approved


# --- through a real server, restarted between the question and the answer --------------------


@pytest.fixture(params=["file", "orm-postgres"])
def durable_env(request, tmp_path) -> Any:
    if request.param == "file":
        yield {"TASK_STORE": f"file:{tmp_path / 'tasks'}", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
        return
    if "postgres" not in django_settings.DATABASES:
        pytest.skip("A2A_TEST_POSTGRES_URL is not set")
    with postgres_database(django_settings.POSTGRES_URL, "a2a_mcp_frameworks") as url:
        manage("migrate", "--noinput", env=site_env(TASK_STORE="orm", DATABASE_URL=url))
        yield {"TASK_STORE": "orm", "DATABASE_URL": url}


def served_call(base: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = modern_body(method, params, caps=ELICIT)
    response = httpx.post(f"{base}/mcp", json=body, headers=modern_headers(body), timeout=60)
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.mark.slow
def test_a_pydantic_ai_approval_answered_after_a_restart(durable_env, tmp_path):
    agent = importlib.import_module("tests.frameworks.pydantic_ai_agent")
    env = site_env(A2A_HANDLER=agent.HANDLER, A2A_MCP="true", **durable_env)
    with running_server(env, log=tmp_path / "server.log") as base:
        (tool,) = served_call(base, "tools/list", {})["tools"]
        name = tool["name"]
        call = {"name": name, "arguments": {"message": agent.APPROVAL}}
        asked = served_call(base, "tools/call", call)
        assert asked["resultType"] == "input_required", asked
    with running_server(env, log=tmp_path / "server.log") as base:  # a new process: nothing but the store
        retry = call | {"requestState": asked["requestState"]}
        retry["inputResponses"] = {key: reply(q, True) for key, q in asked["inputRequests"].items()}
        done = served_call(base, "tools/call", retry)
        assert done["resultType"] == "complete" and done["isError"] is False, done
        assert [c["text"].strip() for c in done["content"]] == [agent.ANSWERS["yes"]]
