"""What the agents' tests (tests/test_agents*.py) share: two agents, and one call of every
task operation on each binding and version, its answer reduced to what a client sees."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import grpc
import httpx
from google.protobuf import json_format

from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.server import start
from a2a.testing import Binding, WireClient

#: The second agent: another handler (tests.handlers.loud), name, skills and input modes.
BILLING = {
    "AGENT_NAME": "Billing",
    "AGENT_DESCRIPTION": "Answers billing questions.",
    "AGENT_VERSION": "2.0.0",
    "HANDLER": "tests.handlers.loud",
    "SKILLS": [{"id": "invoice", "name": "Invoices", "description": "Finds an invoice.", "tags": ["billing"]}],
    "INPUT_MODES": ["text/plain"],
    "PROVIDER_ORGANIZATION": "Example Billing",
    "PROVIDER_URL": "https://billing.example.com",
}
AGENTS = {"billing": BILLING}
#: Where each agent's routes start.
PREFIX = {"default": "", "billing": "/agents/billing"}
V10 = {"A2A-Version": "1.0"}
HOOK = "http://127.0.0.1:9/hook"

#: The operations the isolation matrix asks about another agent's task.
OPERATIONS = [
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "SendMessage (continuation)",
    "CreatePushConfig",
    "GetPushConfig",
    "ListPushConfigs",
    "DeletePushConfig",
]
#: (binding, version) pairs: JSON-RPC and HTTP+JSON in both versions, gRPC in v1.0.
BINDINGS = [("jsonrpc", "1.0"), ("jsonrpc", "0.3"), ("rest", "1.0"), ("rest", "0.3"), ("grpc", "1.0")]


def client(agent: str, version: str = "1.0") -> WireClient:
    """The test kit's client for ``agent``'s routes ("default" or a name of :data:`AGENTS`)
    in ``version`` ("1.0", or "0.3": no ``A2A-Version`` header), on a newly built ASGI
    application."""
    return WireClient(agent=None if agent == "default" else agent, version="1.0" if version == "1.0" else None)


# --- one operation, on one binding and version, as the client sees its answer -------------


def _request(way: Binding, operation: str, task_id: str) -> httpx.Response:
    """``operation`` on ``task_id`` (its push config ``c1``), sent ``way``."""
    return {
        "GetTask": lambda: way.get(task_id),
        "ListTasks": way.list,
        "CancelTask": lambda: way.cancel(task_id),
        "SubscribeToTask": lambda: way.call("subscribe", {"id": task_id}, None),  # a stream's head, or an error
        "SendMessage (continuation)": lambda: way.send("yes", task_id=task_id),
        "CreatePushConfig": lambda: way.create_push_config(task_id, {"url": HOOK}),
        "GetPushConfig": lambda: way.get_push_config(task_id, "c1"),
        "ListPushConfigs": lambda: way.list_push_configs(task_id),
        "DeletePushConfig": lambda: way.delete_push_config(task_id, "c1"),
    }[operation]()


def _over_jsonrpc(way: Binding, operation: str, task_id: str) -> Any:
    response = _request(way, operation, task_id)
    if response.headers["content-type"].startswith("text/event-stream"):  # v0.3: an error as the stream's event
        answer = json.loads(response.text.split("data: ", 1)[1].split("\n", 1)[0])
    else:
        answer = response.json()
    if operation == "ListTasks":
        tasks = (answer.get("result") or {}).get("tasks") or []
        return ("listed", any(t["id"] == task_id for t in tasks))
    error = answer.get("error")
    return ("error", error["code"], error["message"].replace(task_id, "<id>")) if error else ("ok",)


def _over_rest(way: Binding, operation: str, task_id: str) -> Any:
    response = _request(way, operation, task_id)
    if operation == "ListTasks":
        return ("listed", any(t["id"] == task_id for t in response.json().get("tasks") or []))
    if response.status_code == 200:
        return ("ok",)
    error = response.json()["error"]
    return ("error", response.status_code, error.get("status"), error["message"].replace(task_id, "<id>"))


def _grpc_request(operation: str, task_id: str) -> tuple[str, Any]:
    follow_up = pb.Message(
        message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text="yes")], task_id=task_id
    )
    config_name = {"task_id": task_id, "id": "c1"}
    return {
        "GetTask": ("GetTask", pb.GetTaskRequest(id=task_id)),
        "ListTasks": ("ListTasks", pb.ListTasksRequest()),
        "CancelTask": ("CancelTask", pb.CancelTaskRequest(id=task_id)),
        "SubscribeToTask": ("SubscribeToTask", pb.SubscribeToTaskRequest(id=task_id)),
        "SendMessage (continuation)": ("SendMessage", pb.SendMessageRequest(message=follow_up)),
        "CreatePushConfig": (
            "CreateTaskPushNotificationConfig",
            json_format.ParseDict({"taskId": task_id, "url": HOOK}, pb.TaskPushNotificationConfig()),
        ),
        "GetPushConfig": ("GetTaskPushNotificationConfig", pb.GetTaskPushNotificationConfigRequest(**config_name)),
        "ListPushConfigs": (
            "ListTaskPushNotificationConfigs",
            pb.ListTaskPushNotificationConfigsRequest(task_id=task_id),
        ),
        "DeletePushConfig": (
            "DeleteTaskPushNotificationConfig",
            pb.DeleteTaskPushNotificationConfigRequest(**config_name),
        ),
    }[operation]


def grpc_calls(agent: str, calls: list[tuple[str, str]]) -> list[Any]:
    """Each (operation, task id) of ``calls`` over gRPC to ``agent`` (``a2a-agent``
    metadata), on one server, each answer as a client sees it."""

    async def go() -> list[Any]:
        server, port = await start("127.0.0.1:0")
        metadata = (("a2a-agent", agent),)
        answers = []
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                for operation, task_id in calls:
                    name, request = _grpc_request(operation, task_id)
                    answers.append(await _grpc_answer(getattr(stub, name), request, metadata, operation, task_id))
        finally:
            await server.stop(None)
        return answers

    return asyncio.run(go())


async def _grpc_answer(method: Any, request: Any, metadata: Any, operation: str, task_id: str) -> Any:
    try:
        if operation == "SubscribeToTask":
            async for _ in method(request, metadata=metadata):
                break
            return ("ok",)
        answer = await method(request, metadata=metadata)
    except grpc.aio.AioRpcError as error:
        return ("error", error.code().name, (error.details() or "").replace(task_id, "<id>"))
    if operation == "ListTasks":
        return ("listed", any(t.id == task_id for t in answer.tasks))
    return ("ok",)


def probe(agent: str, binding: str, version: str, operation: str, task_id: str) -> Any:
    """``operation`` on ``task_id`` through ``agent``'s routes, as the client sees its answer."""
    if binding == "grpc":
        return grpc_calls(agent, [(operation, task_id)])[0]
    way = Binding(binding, None if (binding, version) == ("jsonrpc", "0.3") else version, client(agent, version))
    return (_over_jsonrpc if binding == "jsonrpc" else _over_rest)(way, operation, task_id)


def is_not_found(answer: Any) -> bool:
    """The answer an unknown task gets: -32001, 404 NOT_FOUND, gRPC NOT_FOUND, or not listed."""
    return answer in (("listed", False),) or (answer[0] == "error" and (answer[1] in (-32001, 404, "NOT_FOUND")))
