"""Tenants (A2A v1.0 ``tenant`` field, HTTP+JSON ``/{tenant}/...`` paths): a request's
tenant scopes its tasks in every store, as the caller does; a task of another tenant,
and any task under an unknown tenant, answers like an unknown task, on both bindings."""

from __future__ import annotations

import uuid

import pytest

from a2a.handlers import HandlerRequest
from a2a.service.context import CallContext
from a2a.testing import WireClient
from a2a.testing import v10_message as message
from stores.backends import get_task_store
from stores.base import TaskQuery
from stores.scope import SCOPE_SEPARATOR, scope_key, task_scope
from tests.conftest import ALL_DATABASES, STORE_KINDS
from tests.helpers import call
from tests.helpers import rpc10 as rpc

V10 = {"A2A-Version": "1.0"}
NOT_FOUND = -32001
MEMORY = pytest.mark.parametrize("store_kind", ["memory"])


@pytest.fixture(autouse=True)
def _agent(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_PUSH_NOTIFICATIONS = True
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True  # configs on a loopback URL (never delivered to)


def not_found(response: dict, task_id: str) -> bool:
    error = response.get("error") or {}
    return error.get("code") == NOT_FOUND and task_id in error.get("message", "")


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_jsonrpc_tenant_scopes_every_operation(use_store):
    task = WireClient().send("ask:more?", tenant="acme")["task"]
    task_id = task["id"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert use_store.get(task_id)["_tenant"] == "acme"
    assert rpc("GetTask", {"id": task_id, "tenant": "acme"})["result"]["id"] == task_id
    hook = {"url": "http://127.0.0.1:9/hook"}
    # No tenant, another tenant, an unknown one: exactly like an unknown task, everywhere.
    for tenant in (None, "", "globex", "nobody-ever"):
        scoped = {} if tenant is None else {"tenant": tenant}
        for method, params in [
            ("GetTask", {"id": task_id}),
            ("CancelTask", {"id": task_id}),
            ("SendMessage", {"message": message("answer", taskId=task_id)}),
            ("CreateTaskPushNotificationConfig", {"taskId": task_id, **hook}),
            ("ListTaskPushNotificationConfigs", {"taskId": task_id}),
            ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}),
            ("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}),
        ]:
            assert not_found(rpc(method, {**params, **scoped}), task_id), (method, tenant)
        assert rpc("ListTasks", scoped)["result"]["tasks"] == []
        sub = rpc("SubscribeToTask", {"id": task_id, **scoped})
        assert not_found(sub, task_id), tenant
    # Its own tenant: every operation works.
    assert [t["id"] for t in rpc("ListTasks", {"tenant": "acme"})["result"]["tasks"]] == [task_id]
    made = rpc("CreateTaskPushNotificationConfig", {"tenant": "acme", "taskId": task_id, "id": "c1", **hook})
    assert made["result"]["id"] == "c1"
    listed = rpc("ListTaskPushNotificationConfigs", {"tenant": "acme", "taskId": task_id})["result"]
    assert [c["id"] for c in listed["configs"]] == ["c1"]
    answered = rpc("SendMessage", {"tenant": "acme", "message": message("yes", taskId=task_id)})["result"]["task"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert use_store.get(task_id)["_tenant"] == "acme"  # still its tenant's


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_a_context_is_per_tenant_in_every_store(use_store):
    """The same contextId in two tenants (and none): three conversations, never mixed."""
    context = str(uuid.uuid4())
    ids = {
        tenant: WireClient().send("hi", context_id=context, tenant=tenant)["task"]["id"]
        for tenant in ("acme", "globex", None)
    }
    for tenant, task_id in ids.items():
        scoped = {} if tenant is None else {"tenant": tenant}
        listed = rpc("ListTasks", {"contextId": context, **scoped})["result"]
        assert [t["id"] for t in listed["tasks"]] == [task_id], tenant
        assert listed.get("totalSize", 1) == 1
    # The store's own query by scope key (what ListTasks and the handlers' context use).
    page = use_store.list(TaskQuery(context_id=context, owner=scope_key("acme", "")))
    assert [t["id"] for t in page.tasks] == [ids["acme"]]
    assert len(use_store.list(TaskQuery(context_id=context, all_owners=True)).tasks) == 3


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_rest_tenant_paths(use_store):
    sent = call("POST", "/a2a/rest/acme/message:send", json={"message": message("ask:more?")}, headers=V10)
    assert sent.status_code == 200, sent.text
    task_id = sent.json()["task"]["id"]
    assert use_store.get(task_id)["_tenant"] == "acme"
    assert call("GET", f"/a2a/rest/acme/tasks/{task_id}", headers=V10).json()["id"] == task_id
    assert [t["id"] for t in call("GET", "/a2a/rest/acme/tasks", headers=V10).json()["tasks"]] == [task_id]
    # The JSON-RPC binding sees it in the same tenant.
    assert rpc("GetTask", {"id": task_id, "tenant": "acme"})["result"]["id"] == task_id
    for prefix in ("", "globex/", "v1/"):
        for method, path in [
            ("GET", f"tasks/{task_id}"),
            ("POST", f"tasks/{task_id}:cancel"),
            ("GET", f"tasks/{task_id}:subscribe"),
            ("GET", f"tasks/{task_id}/pushNotificationConfigs"),
            ("GET", f"tasks/{task_id}/pushNotificationConfigs/c1"),
            ("DELETE", f"tasks/{task_id}/pushNotificationConfigs/c1"),
        ]:
            response = call(method, f"/a2a/rest/{prefix}{path}", headers=V10)
            assert response.status_code == 404, (prefix, method, path, response.text)
            assert response.json()["error"]["status"] == "NOT_FOUND"
        assert call("GET", f"/a2a/rest/{prefix}tasks", headers=V10).json()["tasks"] == []
    made = call(
        "POST",
        f"/a2a/rest/acme/tasks/{task_id}/pushNotificationConfigs",
        json={"url": "http://127.0.0.1:9/h"},
        headers=V10,
    )
    assert made.status_code == 200, made.text
    config_id = made.json()["id"]
    got = call("GET", f"/a2a/rest/acme/tasks/{task_id}/pushNotificationConfigs/{config_id}", headers=V10)
    assert got.status_code == 200 and got.json()["id"] == config_id
    canceled = call("POST", f"/a2a/rest/acme/tasks/{task_id}:cancel", headers=V10)
    assert canceled.status_code == 200 and canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"


@MEMORY
def test_rest_task_without_tenant_is_not_found_under_a_tenant(use_store):
    task_id = WireClient().send("ask:more?")["task"]["id"]
    assert call("GET", f"/a2a/rest/tasks/{task_id}", headers=V10).status_code == 200
    assert call("GET", f"/a2a/rest/acme/tasks/{task_id}", headers=V10).status_code == 404


@MEMORY
@pytest.mark.parametrize("tenant", [7, "x" * 129, "a\x1fb", "new\nline"])
def test_a_malformed_tenant_is_invalid_params(use_store, tenant):
    error = rpc("SendMessage", {"tenant": tenant, "message": message("hi")})["error"]
    assert error["code"] == -32602 and "tenant" in error["message"]
    assert use_store.list(TaskQuery(all_owners=True)).tasks == []


@MEMORY
def test_v03_has_no_tenant_field(use_store):
    """v0.3 requests carry no tenant: a "tenant" key there is an unknown field, ignored."""
    message = {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
    task = WireClient(version=None).result("message/send", {"tenant": "acme", "message": message})
    assert "_tenant" not in use_store.get(task["id"])


def test_scope_is_tenant_and_caller():
    task = {"id": "t", "_owner": "alice", "_tenant": "acme"}
    assert task_scope(task) == f"acme{SCOPE_SEPARATOR}alice" == scope_key("acme", "alice")
    assert task_scope({"id": "t", "_owner": "alice"}) == "alice"  # tasks from before tenants keep their key
    assert CallContext(caller="alice", tenant="acme").owns(task)
    assert not CallContext(caller="bob", tenant="acme").owns(task)  # same tenant, another caller
    assert not CallContext(caller="alice").owns(task)
    assert not CallContext(caller="alice", tenant="globex").owns(task)


@MEMORY
def test_handler_context_is_the_tenants(use_store):
    """A handler's earlier conversation (context_tasks) comes from its task's tenant only."""
    context = str(uuid.uuid4())
    for tenant in ("acme", "globex"):
        WireClient().send("hi", context_id=context, tenant=tenant)["task"]
    task_id = WireClient().send("ask:again", context_id=context, tenant="acme")["task"]["id"]
    request = HandlerRequest.for_task(use_store.get(task_id), store=get_task_store())
    assert request.tenant == "acme"
    earlier = request.context_tasks()
    assert len(earlier) == 1 and earlier[0]["_tenant"] == "acme"
