"""Tenants on the gRPC binding (docs/protocol.md, "Tenants"): the ``tenant`` field of every
request message scopes the call's tasks, push configs and page tokens exactly as
JSON-RPC's ``params.tenant`` and HTTP+JSON's ``/{tenant}/`` path do, on every store: a
task of one tenant is the same task on every binding in that tenant and an unknown one
(NOT_FOUND) in any other tenant or without one; a malformed tenant is refused as the
other bindings refuse it."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2

from a2a.grpc import a2a_pb2 as pb
from a2a.testing import WireClient, v10_message
from stores.base import TaskQuery
from tests.conftest import ALL_DATABASES, STORE_KINDS
from tests.helpers import call
from tests.helpers import rpc10 as rpc
from tests.test_grpc import collect, error_info, fails, message, run, status_of
from tests.test_tenants import MEMORY, _agent  # noqa: F401 (_agent: the tenants tests' autouse fixture)

V10 = {"A2A-Version": "1.0"}
HOOK = "http://127.0.0.1:9/hook"


def message_request(text: str, tenant: str = "", task_id: str = "") -> pb.SendMessageRequest:
    return pb.SendMessageRequest(tenant=tenant, message=message(text, task_id=task_id))


def unknown(error: grpc.aio.AioRpcError, task_id: str) -> bool:
    """Whether ``error`` says exactly what an unknown task says."""
    info = error_info(error)
    return error.code() == grpc.StatusCode.NOT_FOUND and (info.reason, info.metadata["taskId"]) == (
        "TASK_NOT_FOUND",
        task_id,
    )


async def outside(stub: Any, task_id: str, tenant: str) -> dict[str, Any]:
    """Every RPC on ``task_id`` under ``tenant`` (not the task's): each call's error, and ListTasks' page."""
    calls = {
        "GetTask": stub.GetTask(pb.GetTaskRequest(tenant=tenant, id=task_id)),
        "CancelTask": stub.CancelTask(pb.CancelTaskRequest(tenant=tenant, id=task_id)),
        "SendMessage": stub.SendMessage(message_request("yes", tenant, task_id)),
        "SendStreamingMessage": collect(stub.SendStreamingMessage(message_request("yes", tenant, task_id))),
        "SubscribeToTask": collect(stub.SubscribeToTask(pb.SubscribeToTaskRequest(tenant=tenant, id=task_id))),
        "CreateTaskPushNotificationConfig": stub.CreateTaskPushNotificationConfig(
            pb.TaskPushNotificationConfig(tenant=tenant, task_id=task_id, id="c9", url=HOOK)
        ),
        "GetTaskPushNotificationConfig": stub.GetTaskPushNotificationConfig(
            pb.GetTaskPushNotificationConfigRequest(tenant=tenant, task_id=task_id, id="c1")
        ),
        "ListTaskPushNotificationConfigs": stub.ListTaskPushNotificationConfigs(
            pb.ListTaskPushNotificationConfigsRequest(tenant=tenant, task_id=task_id)
        ),
        "DeleteTaskPushNotificationConfig": stub.DeleteTaskPushNotificationConfig(
            pb.DeleteTaskPushNotificationConfigRequest(tenant=tenant, task_id=task_id, id="c1")
        ),
    }
    answers: dict[str, Any] = {name: await fails(rpc_call) for name, rpc_call in calls.items()}
    answers["ListTasks"] = await stub.ListTasks(pb.ListTasksRequest(tenant=tenant))
    return answers


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_a_grpc_tenant_scopes_every_rpc_and_is_the_same_tenant_on_every_binding(use_store):
    by_jsonrpc = WireClient().send("hi", tenant="acme")["task"]["id"]

    async def body(stub):
        task = (await stub.SendMessage(message_request("ask:more?", "acme"))).task
        seen = {
            "get": await stub.GetTask(pb.GetTaskRequest(tenant="acme", id=task.id)),
            "list": await stub.ListTasks(pb.ListTasksRequest(tenant="acme")),
            "jsonrpc's": await stub.GetTask(pb.GetTaskRequest(tenant="acme", id=by_jsonrpc)),
            "jsonrpc's elsewhere": await fails(stub.GetTask(pb.GetTaskRequest(tenant="globex", id=by_jsonrpc))),
        }
        for n in (1, 2):
            config = pb.TaskPushNotificationConfig(tenant="acme", task_id=task.id, id=f"c{n}", url=HOOK)
            await stub.CreateTaskPushNotificationConfig(config)
        outsiders = {tenant: await outside(stub, task.id, tenant) for tenant in ("", "globex")}
        seen["config"] = await stub.GetTaskPushNotificationConfig(
            pb.GetTaskPushNotificationConfigRequest(tenant="acme", task_id=task.id, id="c1")
        )
        await stub.DeleteTaskPushNotificationConfig(
            pb.DeleteTaskPushNotificationConfigRequest(tenant="acme", task_id=task.id, id="c2")
        )
        seen["answered"] = (await stub.SendMessage(message_request("yes", "acme", task.id))).task
        return task, seen, outsiders

    task, seen, outsiders = run(body)
    assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert use_store.get(task.id)["_tenant"] == "acme"
    assert seen["get"].id == task.id and seen["jsonrpc's"].id == by_jsonrpc
    assert unknown(seen["jsonrpc's elsewhere"], by_jsonrpc)
    assert [t.id for t in seen["list"].tasks] == [task.id, by_jsonrpc]
    assert seen["config"].id == "c1" and seen["config"].url == HOOK
    assert seen["answered"].id == task.id and seen["answered"].status.state == pb.TASK_STATE_COMPLETED
    for tenant, answers in outsiders.items():  # no tenant, another tenant: an unknown task, on every RPC
        assert not answers.pop("ListTasks").tasks, tenant
        for name, error in answers.items():
            assert unknown(error, task.id), (tenant, name, error)
    # The same task, in the same tenant, on JSON-RPC and HTTP+JSON; unknown elsewhere.
    assert rpc("GetTask", {"tenant": "acme", "id": task.id})["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    listed = rpc("ListTaskPushNotificationConfigs", {"tenant": "acme", "taskId": task.id})["result"]
    assert [c["id"] for c in listed["configs"]] == ["c1"]  # made and deleted over gRPC
    assert call("GET", f"/a2a/rest/acme/tasks/{task.id}", headers=V10).json()["id"] == task.id
    assert rpc("GetTask", {"id": task.id})["error"]["code"] == -32001
    assert call("GET", f"/a2a/rest/globex/tasks/{task.id}", headers=V10).status_code == 404


@MEMORY
def test_a_grpc_page_token_pages_only_its_tenants_listing(use_store):
    async def body(stub):
        made = [(await stub.SendMessage(message_request("hi", "acme"))).task.id for _ in range(3)]
        await stub.SendMessage(message_request("hi", "globex"))
        first = await stub.ListTasks(pb.ListTasksRequest(tenant="acme", page_size=2))
        token = first.next_page_token
        rest = await stub.ListTasks(pb.ListTasksRequest(tenant="acme", page_size=2, page_token=token))
        elsewhere = {
            tenant: await fails(stub.ListTasks(pb.ListTasksRequest(tenant=tenant, page_size=2, page_token=token)))
            for tenant in ("globex", "")
        }
        return made, first, rest, elsewhere

    made, first, rest, elsewhere = run(body)
    assert [t.id for t in first.tasks] + [t.id for t in rest.tasks] == made[::-1]
    assert first.total_size == rest.total_size == 3 and not rest.next_page_token
    for tenant, error in elsewhere.items():
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, tenant
        assert "pageToken" in error.details() and "earlier page of this listing" in error.details(), tenant


@MEMORY
@pytest.mark.parametrize("tenant", ["x" * 129, "a\x1fb", "new\nline", "nul\x00"])
def test_a_malformed_grpc_tenant_is_invalid_argument_as_on_the_other_bindings(use_store, tenant):
    async def body(stub):
        return [
            await fails(stub.SendMessage(message_request("hi", tenant))),
            await fails(collect(stub.SendStreamingMessage(message_request("hi", tenant)))),
            await fails(stub.GetTask(pb.GetTaskRequest(tenant=tenant, id="t"))),
            await fails(stub.ListTasks(pb.ListTasksRequest(tenant=tenant))),
        ]

    jsonrpc = rpc("SendMessage", {"tenant": tenant, "message": v10_message("hi")})["error"]
    for error in run(body):
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_info(error).reason == "INVALID_PARAMS"
        bad = error_details_pb2.BadRequest()
        assert status_of(error).details[1].Unpack(bad)
        assert [v.field for v in bad.field_violations] == ["tenant"]
        # JSON-RPC's message names the field as params.tenant, this one as tenant: the rest is the same.
        assert jsonrpc["code"] == -32602 and jsonrpc["message"].replace("params.tenant", "tenant") == error.details()
    assert use_store.list(TaskQuery(all_owners=True)).tasks == []
