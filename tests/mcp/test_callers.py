"""Who may call the MCP endpoint: the agent's DRF authentication classes, and one caller
never sees nor continues another's task."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from stores.backends import resolve_store
from tests.mcp.support import ELICIT, TASKS, error, legacy, legacy_session, modern, result

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def mcp_with_tokens(settings):
    settings.A2A_MCP = True
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]


def bearer(name: str) -> dict[str, str]:
    token = Token.objects.create(user=User.objects.create_user(name))
    return {"Authorization": f"Bearer {token.key}"}


def test_no_token_is_401_with_a_challenge(settings):
    settings.A2A_MCP_AUTHORIZATION_SERVERS = ["https://auth.example.com"]
    response = modern("server/discover")
    assert response.status_code == 401
    assert (
        'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"'
        in response.headers["WWW-Authenticate"]
    )
    from tests.helpers import http

    document = http("GET", "/.well-known/oauth-protected-resource/mcp").json()
    assert document["authorization_servers"] == ["https://auth.example.com"]
    assert document["resource"] == "http://testserver/mcp"


@pytest.mark.parametrize("kind", ["memory", "file", "orm"])
def test_two_callers_cannot_see_or_continue_each_others_tasks(settings, tmp_path, kind):
    settings.TASK_STORE = resolve_store({"memory": "memory", "file": f"file:{tmp_path}", "orm": "orm"}[kind])
    alice, bob = bearer("alice"), bearer("bob")
    handle = result(modern("tools/call", {"name": "echo", "arguments": {"message": "ask:?"}}, caps=TASKS, **alice))
    error(modern("tasks/get", {"taskId": handle["taskId"]}, caps=TASKS, **bob), 200, -32602)
    error(modern("tasks/cancel", {"taskId": handle["taskId"]}, caps=TASKS, **bob), 200, -32602)
    responses = {"inputResponses": {"a2a-turn-1": {"action": "accept", "content": {"answer": "bob's"}}}}
    error(modern("tasks/update", {"taskId": handle["taskId"], **responses}, caps=TASKS, **bob), 200, -32602)
    mine = result(modern("tasks/get", {"taskId": handle["taskId"]}, caps=TASKS, **alice))
    assert mine["status"] == "input_required"  # bob's cancel and answer did nothing
    session = legacy_session(headers=alice)  # a 2025-11-25 session is its caller's alone
    error(legacy(session, "tools/list", headers=bob), 404, -32600)
    assert "tools" in result(legacy(session, "tools/list", headers=alice))
    asked = result(modern("tools/call", {"name": "echo", "arguments": {"message": "ask:?"}}, caps=ELICIT, **alice))
    (key,) = asked["inputRequests"]
    retry = {"name": "echo", "arguments": {"message": "x"}, "requestState": asked["requestState"]}
    retry["inputResponses"] = {key: {"action": "accept", "content": {"answer": "mine now"}}}
    error(modern("tools/call", retry, caps=ELICIT, **bob), 200, -32602)
    done = result(modern("tools/call", retry, caps=ELICIT, **alice))
    assert done["content"][0]["text"] == "done: mine now"
