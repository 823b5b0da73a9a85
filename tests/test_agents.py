"""Many agents in one project (a2a.agents, A2A_AGENTS, a2a.urls.agents): each agent has its
own card, handler, skills, input modes and authentication, every operation works on each
over JSON-RPC, HTTP+JSON and gRPC, and a project without A2A_AGENTS sees no difference.
The two cards are written to /tmp/a2a-agents-cards.json for the closing note."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from django.test import Client, override_settings

from a2a.agents import DEFAULT_AGENT, UnknownAgent, agents, default_agent, get_agent
from a2a.handlers import HandlerRequest
from a2a.handlers.llm import LLMHandler
from a2a.ops.checks import check_agents
from a2a.service.context import CallContext
from a2a.testing.client import message, rpc_body
from stores.memory import MemoryTaskStore
from tests.agents_support import AGENTS, BILLING, PREFIX, V10, client, grpc_calls
from tests.helpers import call
from tests.test_executor import queue  # noqa: F401  (the fixture)

CARDS = Path("/tmp/a2a-agents-cards.json")


@pytest.fixture(autouse=True)
def _agents(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_AGENTS = AGENTS
    settings.A2A_PUSH_NOTIFICATIONS = True
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True


def answer_text(task: dict) -> str:
    return task["artifacts"][-1]["parts"][0]["text"]


# --- the registry --------------------------------------------------------------------------


def test_the_registry_reads_each_agents_own_settings_else_the_projects(settings):
    assert list(agents()) == [DEFAULT_AGENT, "billing"]
    billing = get_agent("billing")
    assert not billing.is_default and billing.listed and default_agent().is_default
    assert billing.settings.HANDLER == "tests.handlers.loud"
    assert billing.settings.WORKERS == 32 == default_agent().settings.WORKERS  # not its own: the project's
    assert default_agent().settings.HANDLER == "tests.handlers.scripted"
    settings.A2A_AGENTS = {"support": {"LISTED": False, "LLM_TIMEOUT": 5}}  # rebuilt on setting_changed
    support = get_agent("support")
    assert support.settings.AGENT_NAME == "support"  # named after its key unless it sets AGENT_NAME
    assert support.settings.LLM_TIMEOUT == 5.0 and not support.listed  # converted as A2A_LLM_TIMEOUT is
    with pytest.raises(UnknownAgent, match="billing"):
        get_agent("billing")
    assert CallContext().agent.is_default and CallContext(agent_name="support").agent is support


def test_a_project_without_agents_sees_no_difference(settings):
    with_agents = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    settings.A2A_AGENTS = {}
    assert list(agents()) == [DEFAULT_AGENT]
    without = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    assert with_agents == without
    assert [i["url"] for i in without["supportedInterfaces"]] == [
        "http://testserver/a2a/",
        "http://testserver/a2a/rest",
    ] * 3  # 1.0, 1.1, 0.3
    task = client("default").send("hi")["task"]
    assert answer_text(task) == "done: hi"
    assert "_agent" not in settings.TASK_STORE.get(task["id"])
    assert call("GET", "/agents/billing/.well-known/agent-card.json").status_code == 404


# --- the cards -------------------------------------------------------------------------------


def test_each_agent_has_its_own_card_naming_its_own_urls():
    cards = {agent: call("GET", f"{PREFIX[agent]}/.well-known/agent-card.json", headers=V10).json() for agent in PREFIX}
    billing = cards["billing"]
    assert billing["name"] == "Billing" and billing["version"] == "2.0.0"
    assert billing["description"] == BILLING["AGENT_DESCRIPTION"]
    assert [s["id"] for s in billing["skills"]] == ["invoice"]
    assert billing["defaultInputModes"] == ["text/plain"]
    assert billing["provider"] == {"organization": "Example Billing", "url": "https://billing.example.com"}
    assert {(i["protocolBinding"], i["url"]) for i in billing["supportedInterfaces"]} == {
        ("JSONRPC", "http://testserver/agents/billing/a2a/"),
        ("HTTP+JSON", "http://testserver/agents/billing/a2a/rest"),
    }
    assert cards["default"]["name"] != "Billing" and "provider" not in cards["default"]
    v03 = call("GET", "/agents/billing/.well-known/agent-card.json").json()
    assert v03["url"] == "http://testserver/agents/billing/a2a/" and v03["protocolVersion"] == "0.3.0"
    assert call("GET", "/agents/billing/.well-known/agent.json").json() == v03  # the pre-0.3 location
    CARDS.write_text(json.dumps(cards, indent=2) + "\n")


def test_an_unknown_agent_and_the_default_under_the_prefix_are_404():
    for path in ("/agents/nobody/.well-known/agent-card.json", "/agents/default/a2a/", "/agents/nobody/a2a/rest/tasks"):
        response = call("GET" if "rest" in path or "card" in path else "POST", path, json={})
        assert response.status_code == 404, path
        assert "No agent named" in response.json()["error"]["message"]


def test_openapi_and_the_browse_page_are_the_agents(settings):
    doc = call("GET", "/agents/billing/a2a/rest/openapi.json").json()
    assert doc["info"]["title"].startswith("Billing") and doc["info"]["version"] == "2.0.0"
    assert doc["servers"][0]["url"] == "http://testserver/agents/billing/a2a/rest"
    settings.A2A_BROWSABLE_AGENT = "public"
    client = Client()
    page = client.get("/agents/billing/a2a/browse/").content.decode()
    assert "Invoices" in page and "/agents/billing/a2a/browse/stream" in page
    answered = client.post("/agents/billing/a2a/browse/", {"text": "hello"})
    assert answered.status_code == 200 and "billing: DONE: HELLO" in answered.content.decode()


# --- every operation on each agent -----------------------------------------------------------


@pytest.mark.parametrize("agent", ["default", "billing"])
def test_every_jsonrpc_operation_on_each_agent(agent, settings):
    done = client(agent).send("hi", context_id="c1")["task"]
    assert answer_text(done) == ("done: hi" if agent == "default" else "billing: DONE: HI")  # the agent's handler
    asked = client(agent).send("ask:more?", context_id="c1")["task"]
    task_id = asked["id"]
    assert client(agent).rpc("GetTask", {"id": task_id})["result"]["id"] == task_id
    listed = client(agent).rpc("ListTasks", {"contextId": "c1"})["result"]["tasks"]
    assert {t["id"] for t in listed} == {done["id"], task_id}
    hook = {"taskId": task_id, "id": "c1", "url": "http://127.0.0.1:9/hook"}
    assert client(agent).rpc("CreateTaskPushNotificationConfig", hook)["result"]["id"] == "c1"
    assert client(agent).rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})["result"]["id"] == "c1"
    configs = client(agent).rpc("ListTaskPushNotificationConfigs", {"taskId": task_id})["result"]["configs"]
    assert [c["id"] for c in configs] == ["c1"]
    assert "result" in client(agent).rpc("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})
    resumed = client(agent).rpc("SendMessage", {"message": message("ask:again", taskId=task_id)})["result"]["task"]
    assert resumed["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert client(agent).rpc("CancelTask", {"id": task_id})["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    v03 = client(agent, "0.3").rpc("message/send", {"message": message("hi", "0.3")})["result"]
    assert v03["kind"] == "task" and client(agent, "0.3").rpc("tasks/get", {"id": v03["id"]})["result"]["id"]
    stored = settings.TASK_STORE.get(task_id)
    assert stored.get("_agent") == (None if agent == "default" else agent)
    streamed = call(
        "POST",
        f"{PREFIX[agent]}/a2a/",
        json=rpc_body("SendStreamingMessage", {"message": message("x")}),
        headers=V10,
    )
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert ("billing: DONE: X" if agent == "billing" else "done: x") in streamed.text


@pytest.mark.parametrize("agent", ["default", "billing"])
def test_every_rest_operation_on_each_agent(agent):
    base = f"{PREFIX[agent]}/a2a/rest"
    sent = call("POST", f"{base}/message:send", json={"message": message("ask:more?")}, headers=V10)
    assert sent.status_code == 200, sent.text
    task_id = sent.json()["task"]["id"]
    assert call("GET", f"{base}/tasks/{task_id}", headers=V10).json()["id"] == task_id
    assert [t["id"] for t in call("GET", f"{base}/tasks", headers=V10).json()["tasks"]] == [task_id]
    made = call(
        "POST", f"{base}/tasks/{task_id}/pushNotificationConfigs", json={"url": "http://127.0.0.1:9/h"}, headers=V10
    )
    assert made.status_code == 200, made.text
    assert call("GET", f"{base}/v1/tasks/{task_id}", headers={"A2A-Version": "0.3"}).json()["id"] == task_id
    canceled = call("POST", f"{base}/tasks/{task_id}:cancel", headers=V10)
    assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"
    tenant = call("POST", f"{base}/acme/message:send", json={"message": message("hi")}, headers=V10)
    tenant_id = tenant.json()["task"]["id"]
    assert call("GET", f"{base}/acme/tasks/{tenant_id}", headers=V10).status_code == 200
    assert call("GET", f"{base}/tasks/{tenant_id}", headers=V10).status_code == 404  # the tenant scopes it too


@pytest.mark.parametrize("agent", ["default", "billing"])
def test_every_grpc_operation_on_each_agent(agent, settings):
    task = client(agent).send("ask:more?")["task"]
    task_id = task["id"]
    operations = [
        "GetTask",
        "ListTasks",
        "CreatePushConfig",
        "ListPushConfigs",
        "SubscribeToTask",
        "SendMessage (continuation)",
    ]
    answers = grpc_calls(agent, [(op, task_id) for op in operations])
    assert answers == [("ok",), ("listed", True), ("ok",), ("ok",), ("ok",), ("ok",)]
    assert settings.TASK_STORE.get(task_id)["status"]["state"] == "completed"
    answer = settings.TASK_STORE.get(task_id)["artifacts"][-1]["parts"][0]["text"]
    assert answer == ("done: yes" if agent == "default" else "billing: DONE: YES")


def test_grpc_names_the_agent_by_metadata_and_refuses_an_unknown_one():
    [answer] = grpc_calls("nobody", [("GetTask", "x")])
    assert answer == (
        "error",
        grpc.StatusCode.INVALID_ARGUMENT.name,
        "No agent named 'nobody' here (metadata a2a-agent)",
    )
    assert grpc_calls("default", [("ListTasks", "x")]) == [("listed", False)]


def test_the_direct_asgi_path_serves_the_agents_routes(settings):
    settings.A2A_DIRECT_ASGI = True
    task = client("billing").send("hi")["task"]
    assert answer_text(task) == "billing: DONE: HI"
    assert call("GET", "/agents/nobody/a2a/rest/tasks", headers=V10).status_code == 404


def test_input_modes_and_authentication_are_per_agent(settings):
    data = {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"a": 1}}]}
    assert "result" in client("default").rpc("SendMessage", {"message": data})
    refused = client("billing").rpc("SendMessage", {"message": data})["error"]
    assert refused["code"] == -32005 and "text/plain" in refused["message"]
    settings.A2A_AGENTS = {"billing": {**BILLING, "AUTHENTICATION_CLASSES": ["a2a.auth.BearerTokenAuthentication"]}}
    locked = call(
        "POST",
        "/agents/billing/a2a/",
        json=rpc_body("ListTasks", {}),
        headers=V10,
    )
    assert locked.status_code == 401 and locked.headers["WWW-Authenticate"].startswith("Bearer")
    assert call("GET", "/agents/billing/a2a/rest/tasks", headers=V10).status_code == 401
    assert "result" in client("default").rpc("ListTasks", {})  # the default agent stays open
    card = call("GET", "/agents/billing/.well-known/agent-card.json", headers=V10).json()
    assert (
        "bearer" in card["securitySchemes"]
        and "securitySchemes" not in call("GET", "/.well-known/agent-card.json", headers=V10).json()
    )


def test_the_llm_handler_reads_the_agents_settings(settings):
    settings.A2A_AGENTS = {"billing": {**BILLING, "LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m-billing"}}
    request = HandlerRequest(message=message("hi"), task_id="t", context_id="c", agent_name="billing")
    handler = LLMHandler()
    assert handler.client(request.agent.settings).model == "m-billing"
    prompt = handler.system_prompt(None, request.agent.settings)
    assert prompt.startswith("You are Billing,") and BILLING["AGENT_DESCRIPTION"] in prompt


# --- the checks name the agent -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ({"bad name": {}}, "A2A_AGENTS['bad name']: an agent's name must be"),
        ({"billing": {"HANDLERS": "x"}}, "A2A_AGENTS['billing']: unknown option 'HANDLERS'"),
        ({"billing": {"LLM_TIMEOUT": "soon"}}, "A2A_AGENTS['billing']['LLM_TIMEOUT'] must be a number"),
        ({"billing": {"LLM_STYLE": "gemini"}}, "A2A_AGENTS['billing']['LLM_STYLE'] must be one of 'openai'"),
        ({"billing": []}, "A2A_AGENTS['billing'] must be a dict of options"),
        ({"billing": {"TASK_STORE": "nosuch"}}, "A2A_AGENTS['billing']['TASK_STORE']: Unknown TASK_STORE 'nosuch'"),
        ({"billing": {"TASK_STORE": "orm:elsewhere"}}, "A2A_AGENTS['billing']['TASK_STORE']: TASK_STORE \"orm:"),
        ({"billing": {"TASK_STORE": {"BACKEND": 3}}}, "A2A_AGENTS['billing']['TASK_STORE']: TASK_STORE as a dict"),
        ({"billing": {"TASK_STORE": "a2a.nowhere.Store"}}, "A2A_AGENTS['billing']['TASK_STORE']: TASK_STORE backend"),
        ({"default": {"TASK_STORE": "memory"}}, "A2A_AGENTS['default']: the default agent's tasks live in TASK_STORE"),
        (
            {"billing": {"HANDLER": "nowhere.handle"}},
            "A2A_AGENTS['billing']: A2A_HANDLER 'nowhere.handle' cannot be used",
        ),
        ({"billing": {"INPUT_MODES": ["text"]}}, "A2A_AGENTS['billing']: A2A_INPUT_MODES must be a non-empty list"),
        (
            {"billing": {"SKILLS_DIR": "/nowhere"}},
            "A2A_AGENTS['billing']: A2A_SKILLS_DIR '/nowhere' is not a directory",
        ),
    ],
)
def test_the_check_names_the_agent(configured, expected):
    with override_settings(A2A_AGENTS=configured):
        messages = [m.msg for m in check_agents()]
    assert any(m.startswith(expected) for m in messages), messages
    assert all(m.startswith("A2A_AGENTS[") for m in messages), messages


def test_the_check_is_quiet_for_good_agents_and_repeats_no_project_message(settings):
    assert check_agents() == []
    settings.A2A_HANDLER = "nowhere.handle"  # the project's own check says it, once
    assert check_agents() == []
    settings.A2A_AGENTS = "billing"  # not a dict: A2A_AGENTS's declaration says so, once
    assert [m.msg for m in check_agents()] == ["A2A_AGENTS must be a dict, not 'billing'."]


def test_docs_name_every_option():
    from a2a.agents import OPTIONS

    page = (Path(__file__).parent.parent / "docs" / "agents.md").read_text()
    assert [key for key in OPTIONS if f"`{key}`" not in page] == []


def test_the_direct_reply_path_runs_the_agents_handler(settings):
    settings.A2A_AGENTS = {"billing": {**BILLING, "HANDLER": "tests.test_handler_api.pinger"}}
    pong = client("billing").rpc("SendMessage", {"message": message("ping")})["result"]
    assert pong["message"]["parts"][0]["text"] == "pong" and len(settings.TASK_STORE) == 0  # no task
    assert client("default").send("ping")["task"]["status"]["state"] == "TASK_STATE_COMPLETED"  # scripted: a task
    worked = client("billing").send("work")["task"]
    assert settings.TASK_STORE.get(worked["id"])["_agent"] == "billing"
    assert client("default").rpc("GetTask", {"id": worked["id"]})["error"]["code"] == -32001


@pytest.mark.django_db(transaction=True)  # the authentication thread reads the token
def test_the_extended_card_is_the_agents(settings, django_user_model):
    from rest_framework.authtoken.models import Token

    extended = {"skills": [{"id": "refunds", "name": "Refunds", "description": "For customers."}]}
    settings.A2A_AGENTS = {
        "billing": {
            **BILLING,
            "AUTHENTICATION_CLASSES": ["a2a.auth.BearerTokenAuthentication"],
            "EXTENDED_CARD": extended,
        }
    }
    token = Token.objects.create(user=django_user_model.objects.create_user("carol")).key
    headers = {**V10, "Authorization": f"Bearer {token}"}
    card = call("GET", "/agents/billing/a2a/rest/extendedAgentCard", headers=headers).json()
    assert card["name"] == "Billing" and [s["id"] for s in card["skills"]] == ["invoice", "refunds"]
    assert card["supportedInterfaces"][0]["url"] == "http://testserver/agents/billing/a2a/"
    public = call("GET", "/agents/billing/.well-known/agent-card.json", headers=V10).json()
    assert public["capabilities"]["extendedAgentCard"] is True
    default = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    assert default["capabilities"]["extendedAgentCard"] is False


def test_an_agent_no_route_serves_is_a_warning(settings):
    settings.ROOT_URLCONF = "a2a.urls"  # the default agent's routes only
    [warning] = check_agents()
    assert warning.id == "a2a.W110" and "'billing'" in warning.msg and "a2a.urls.agents" in warning.hint


def test_an_agent_name_of_none_is_the_agents_key(settings):
    settings.A2A_AGENTS = {"billing": {"AGENT_NAME": None}, "default": {"AGENT_NAME": None}}
    assert get_agent("billing").settings.AGENT_NAME == "billing"
    assert default_agent().settings.AGENT_NAME == "toolnexus-agent"  # the project's, as without agents


@pytest.mark.django_db  # the worker closes old connections around a job, as Django does around a request
def test_a_queue_worker_runs_the_tasks_agents_handler(queue, settings):  # noqa: F811 (the fixture)
    """With A2A_EXECUTOR = "tasks", the job names only the task: the worker reads its agent from it."""
    from tests.test_executor import run_jobs

    settings.A2A_AGENTS = AGENTS
    task_id = client("billing").rpc(
        "SendMessage", {"message": message("hi"), "configuration": {"returnImmediately": True}}
    )["result"]["task"]["id"]
    assert run_jobs(queue) == [task_id]
    done = settings.TASK_STORE.get(task_id)  # run_jobs returns once the job ran its task to its end
    assert done["status"]["state"] == "completed", done["status"]
    assert done["artifacts"][-1]["parts"][0]["text"] == "billing: DONE: HI"
