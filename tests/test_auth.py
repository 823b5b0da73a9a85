"""Authentication (bearer token, API key) and ownership: each caller sees only its own
tasks, another caller's task answers like an unknown one; the extended card."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from rest_framework.authtoken.models import Token

from a2a.testing import v10_message as message
from a2a.testing.client import rpc_body
from stores.memory import MemoryTaskStore
from tests.helpers import call
from tests.helpers import rpc10 as rpc

pytestmark = pytest.mark.django_db(transaction=True)

CLASSES = ["a2a.auth.BearerTokenAuthentication", "a2a.auth.APIKeyAuthentication"]
V10 = {"A2A-Version": "1.0"}


@pytest.fixture
def agent(settings):
    settings.A2A_AUTHENTICATION_CLASSES = CLASSES
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.handlers.scripted"
    alice = Token.objects.create(user=User.objects.create_user("alice")).key
    bob = Token.objects.create(user=User.objects.create_user("bob")).key
    return {"alice": {"Authorization": f"Bearer {alice}"}, "bob": {"X-API-Key": bob}}


def test_no_credentials_is_401_with_a_challenge(agent):
    response = call("POST", "/a2a/", json=rpc_body("GetTask", {"id": "x"}))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32000
    assert "Authentication required" in response.json()["error"]["message"]
    assert "Bearer" in response.headers["www-authenticate"]
    assert 'APIKey header="X-API-Key"' in response.headers["www-authenticate"]
    bad = call(
        "POST",
        "/a2a/",
        json=rpc_body("GetTask", {"id": "x"}),
        headers={"Authorization": "Bearer not-a-token"},
    )
    assert bad.status_code == 401 and "Invalid token" in bad.json()["error"]["message"]
    rest = call("GET", "/a2a/rest/tasks", headers=V10)
    assert rest.status_code == 401
    assert rest.json()["error"]["status"] == "UNAUTHENTICATED"
    assert call("GET", "/.well-known/agent-card.json").status_code == 200  # the card stays public


def test_each_caller_sees_only_its_own_tasks(agent):
    alice, bob = agent["alice"], agent["bob"]
    task = rpc("SendMessage", {"message": message("ask:more?")}, alice)["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert rpc("GetTask", {"id": task["id"]}, alice)["result"]["id"] == task["id"]
    # Bob: exactly as if the task did not exist.
    for method, params in [
        ("GetTask", {"id": task["id"]}),
        ("CancelTask", {"id": task["id"]}),
        ("SendMessage", {"message": message("answer", taskId=task["id"])}),
    ]:
        error = rpc(method, params, bob)["error"]
        assert error["code"] == -32001 and error["message"] == f"Task not found: {task['id']}"
    assert rpc("ListTasks", {}, bob)["result"]["tasks"] == []
    assert [t["id"] for t in rpc("ListTasks", {}, alice)["result"]["tasks"]] == [task["id"]]
    assert call("GET", f"/a2a/rest/tasks/{task['id']}", headers={**V10, **bob}).status_code == 404
    subscribe = call("POST", f"/a2a/rest/tasks/{task['id']}:subscribe", headers={**V10, **bob})
    assert subscribe.status_code == 404
    # Alice can continue her own task.
    done = rpc("SendMessage", {"message": message("yes", taskId=task["id"])}, alice)["result"]["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


def test_card_declares_the_schemes(agent):
    v10 = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    assert v10["securitySchemes"] == {
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "A DRF token as a bearer token"}},
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
    }
    assert v10["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}, {"schemes": {"apiKey": {"list": []}}}]
    combined = call("GET", "/.well-known/agent-card.json").json()
    assert combined["securitySchemes"]["bearer"]["type"] == "http"
    assert combined["securitySchemes"]["apiKey"]["in"] == "header"
    assert combined["security"] == [{"bearer": []}, {"apiKey": []}]


def test_v10_card_with_security_validates_against_the_schema(agent):
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    from tests.jsonrpc.support import V10_SCHEMA

    schema = json.loads(V10_SCHEMA.read_text())
    resources = [
        (f"{package}.{title.replace(' ', '')}.jsonschema.json", referencing.Resource.from_contents(definition))
        for title, definition in schema["definitions"].items()
        for package in ("lf.a2a.v1", "google.protobuf")
    ]
    validator = jsonschema.Draft202012Validator(
        schema["definitions"]["Agent Card"], registry=referencing.Registry().with_resources(resources)
    )
    card = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    assert [e.message for e in validator.iter_errors(card)] == []


def test_extended_card_for_authenticated_callers_only(agent, settings):
    error = rpc("GetExtendedAgentCard", {}, agent["alice"])["error"]
    assert error["code"] == -32004 and "no extended agent card" in error["message"]  # not declared
    settings.A2A_EXTENDED_CARD = {
        "description": "The full story.",
        "skills": [{"id": "secret", "name": "Secret", "description": "For members", "tags": ["members"]}],
    }
    public = call("GET", "/.well-known/agent-card.json", headers=V10).json()
    assert public["capabilities"]["extendedAgentCard"] is True
    assert "secret" not in [s["id"] for s in public["skills"]]
    extended = rpc("GetExtendedAgentCard", {}, agent["alice"])["result"]
    assert extended["description"] == "The full story."
    assert [s["id"] for s in extended["skills"]] == [*(s["id"] for s in public["skills"]), "secret"]
    rest = call("GET", "/a2a/rest/extendedAgentCard", headers={**V10, **agent["bob"]})
    assert rest.status_code == 200 and rest.json()["description"] == "The full story."
    assert call("GET", "/a2a/rest/extendedAgentCard", headers=V10).status_code == 401
    # v0.3 HTTP+JSON: GET /v1/card, the v0.3 card.
    v03 = call("GET", "/a2a/rest/v1/card", headers=agent["bob"])
    assert v03.status_code == 200 and v03.headers["content-type"] == "application/json"
    assert v03.json()["protocolVersion"] == "0.3.0" and v03.json()["description"] == "The full story."
    assert {"url": "http://testserver/a2a/rest", "transport": "HTTP+JSON"} in v03.json()["additionalInterfaces"]
    refused = call("GET", "/a2a/rest/v1/card")
    assert refused.status_code == 401 and "Bearer" in refused.headers["www-authenticate"]
    assert refused.json()["error"]["status"] == "UNAUTHENTICATED" and refused.json()["message"]


def test_open_agent_has_no_extended_card(settings):
    settings.A2A_EXTENDED_CARD = {"description": "x"}
    settings.A2A_AUTHENTICATION_CLASSES = []
    body = rpc_body("agent/getAuthenticatedExtendedCard")
    error = call("POST", "/a2a/", json=body).json()["error"]
    assert error["code"] == -32004 and "authenticated callers" in error["message"]  # not declared
    assert call("GET", "/.well-known/agent-card.json").json()["supportsAuthenticatedExtendedCard"] is False


def test_system_check_needs_authtoken_for_token_classes(settings):
    settings.A2A_AUTHENTICATION_CLASSES = CLASSES
    settings.INSTALLED_APPS = [a for a in settings.INSTALLED_APPS if a != "rest_framework.authtoken"]
    with pytest.raises(SystemCheckError, match=r"a2a\.E006"):
        call_command("check", databases=[])  # Django 6 checks every database by default
    settings.A2A_AUTHENTICATION_CLASSES = ["no.such.Class"]
    with pytest.raises(SystemCheckError, match=r"a2a\.E005"):
        call_command("check", databases=[])  # Django 6 checks every database by default
