"""Drive an A2A server with the official A2A Python SDK (``a2a-sdk``) and report what
it saw, for tests/interop/test_interop.py.

Run with the interop venv's Python (never imported by our test process; its ``a2a``
package is the SDK's, not ours)::

    .venv-interop/bin/python sdk_client.py BASE_URL SCENARIO [--binding JSONRPC|HTTP+JSON|GRPC]
        [--protocol 1.0|0.3] [--webhook URL] [--lenient]

The card is resolved from BASE_URL (or read from it, when BASE_URL is a card's own
URL: one ending in ``.json``, such as a second agent's) with the SDK's ``A2ACardResolver`` and the client
made by its ``ClientFactory``, which picks the transport from the card's
``supportedInterfaces``: ``--binding`` is the one binding the client supports, and
``--protocol 0.3`` keeps only the card's v0.3 interfaces, so the factory picks the
SDK's v0.3 compatibility transport; ``--binding GRPC`` dials the card's gRPC interface
with the SDK's ``GrpcTransport`` over an insecure channel. The v1.0 transports parse every answer strictly
(the SDK ignores unknown fields; here one is an error, so a misnamed field cannot be
silently dropped) unless ``--lenient``. Prints one JSON line (what the client observed);
exits 1 with the error on stderr when a step fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
import uuid
from typing import Any

import grpc
import httpx
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.client.transports import jsonrpc as jsonrpc_transport
from a2a.client.transports import rest as rest_transport
from a2a.helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory

TERMINAL = {"completed", "failed", "canceled", "rejected"}
SETTLED = TERMINAL | {"input-required", "auth-required"}


class ScenarioError(AssertionError):
    """A step of a scenario did not go as the protocol says it should."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ScenarioError(message)


def parse_strict(data: Any, message: Any) -> Any:
    """The SDK's ``parse_lenient`` without the leniency: an unknown field is an error."""
    if isinstance(data, str | bytes):
        return json_format.Parse(data, message)
    return json_format.ParseDict(data, message)


def make_strict() -> None:
    jsonrpc_transport.parse_lenient = parse_strict
    rest_transport.parse_lenient = parse_strict


def state_name(state: int) -> str:
    """TASK_STATE_INPUT_REQUIRED -> "input-required"."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def artifact_texts(task: Task) -> list[str]:
    return [get_artifact_text(a) for a in task.artifacts]


def status_text(task: Task) -> str:
    return get_message_text(task.status.message) if task.status.HasField("message") else ""


def describe(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "contextId": task.context_id,
        "state": state_name(task.status.state),
        "artifacts": artifact_texts(task),
        "statusText": status_text(task),
        "historyRoles": [Role.Name(m.role) for m in task.history],
    }


def event(response: StreamResponse) -> dict[str, Any]:
    """One stream event, as the SDK parsed it."""
    kind = response.WhichOneof("payload")
    if kind == "task":
        return {"kind": "task", **describe(response.task)}
    if kind == "status_update":
        update = response.status_update
        return {
            "kind": "status-update",
            "taskId": update.task_id,
            "state": state_name(update.status.state),
            "text": get_message_text(update.status.message) if update.status.HasField("message") else "",
        }
    if kind == "artifact_update":
        update = response.artifact_update
        return {
            "kind": "artifact-update",
            "taskId": update.task_id,
            "artifactId": update.artifact.artifact_id,
            "text": get_artifact_text(update.artifact),
            "append": update.append,
            "lastChunk": update.last_chunk,
        }
    if kind == "message":
        return {"kind": "message", "text": get_message_text(response.message), "role": Role.Name(response.message.role)}
    raise ScenarioError(f"a StreamResponse with no payload: {response}")


def user_message(text: str, *, task_id: str | None = None, context_id: str | None = None):
    return new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)


class Session:
    """The clients of one run: a polling one (no streaming) and a streaming one, made
    by the SDK's factory from the server's card."""

    def __init__(self, base_url: str, binding: str, protocol: str, *, strict: bool) -> None:
        self.base_url = base_url
        self.binding = binding
        self.protocol = protocol
        self.strict = strict

    async def __aenter__(self) -> Session:
        self.http = httpx.AsyncClient(timeout=30)
        self.factory_config = dict(httpx_client=self.http, supported_protocol_bindings=[self.binding])
        if self.binding == "GRPC":
            self.factory_config["grpc_channel_factory"] = grpc.aio.insecure_channel
        ClientFactory(ClientConfig(**self.factory_config))  # as create_from_url: sets A2A-Version on the client
        if self.base_url.endswith(".json"):  # a card's own URL: the resolver's base and path
            base, _, path = self.base_url.rpartition("/.well-known/")
            resolver = A2ACardResolver(self.http, base, f"/.well-known/{path}")
        else:
            resolver = A2ACardResolver(self.http, self.base_url)
        card = await resolver.get_agent_card()
        self.card_name = card.name
        if self.strict:  # the card as served to a v1.0 client must be a v1.0 AgentCard, field for field
            served = await self.http.get(f"{resolver.base_url}/{resolver.agent_card_path}")
            json_format.ParseDict(served.json(), AgentCard())
        if self.protocol == "0.3":
            # What a v0.3-only peer offers: the factory then picks the compat transport.
            only = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(only)
        self.card = card
        self.polling = self._client(card, streaming=False)
        self.streaming = self._client(card, streaming=True)
        return self

    def _client(self, card: AgentCard, *, streaming: bool):
        return ClientFactory(ClientConfig(streaming=streaming, **self.factory_config)).create(card)

    async def __aexit__(self, *exc: object) -> None:
        await self.polling.close()
        await self.streaming.close()
        await self.http.aclose()

    @property
    def v03_rest(self) -> bool:
        return self.protocol == "0.3" and self.binding == "HTTP+JSON"

    @property
    def transport(self) -> str:
        transport = self.polling._transport
        return f"{type(transport).__name__} {getattr(transport, 'url', '')}"

    async def send(self, text: str, *, blocking: bool = True, **message: Any) -> StreamResponse:
        """SendMessage (not streaming): the one response (a Task or a Message)."""
        request = SendMessageRequest(
            message=user_message(text, **message),
            configuration=SendMessageConfiguration(return_immediately=not blocking),
        )
        responses = [r async for r in self.polling.send_message(request)]
        check(len(responses) == 1, f"SendMessage gave {len(responses)} responses")
        return responses[0]

    async def send_task(self, text: str, **kwargs: Any) -> Task:
        response = await self.send(text, **kwargs)
        check(response.HasField("task"), f"SendMessage answered {response.WhichOneof('payload')}, not a task")
        return response.task

    async def get(self, task_id: str, history_length: int | None = None) -> Task:
        return await self.polling.get_task(GetTaskRequest(id=task_id, history_length=history_length))

    async def wait(self, task_id: str, states: set[str] = TERMINAL, timeout: float = 15) -> tuple[Task, int]:
        """Poll GetTask until the task is in one of ``states``: (task, polls)."""
        deadline = time.monotonic() + timeout
        polls = 0
        while True:
            task = await self.get(task_id)
            polls += 1
            if state_name(task.status.state) in states:
                return task, polls
            check(time.monotonic() < deadline, f"task {task_id} still {state_name(task.status.state)}")
            await asyncio.sleep(0.05)


async def error_of(call: Any) -> dict[str, str]:
    """The SDK exception an awaitable raises (it must raise)."""
    try:
        await call
    except Exception as exc:
        return {"type": type(exc).__name__, "message": str(exc)}
    raise ScenarioError("expected an error")


# --- scenarios ---------------------------------------------------------------------------------


async def send_blocking(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("progress:thinking;artifact:first")
    fetched = await s.get(task.id, history_length=10)
    return {"task": describe(task), "fetched": describe(fetched)}


async def send_nonblocking(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("sleep:0.3;artifact:later", blocking=False)
    done, polls = await s.wait(task.id)
    return {"submitted": describe(task), "final": describe(done), "polls": polls}


async def reply(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    response = await s.send("reply:hi there")
    return {"response": event(response)}


async def errors(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("quick")
    missing = str(uuid.uuid4())
    out = {
        "getUnknown": await error_of(s.get(missing)),
        "cancelUnknown": await error_of(s.polling.cancel_task(CancelTaskRequest(id=missing))),
        "cancelCompleted": await error_of(s.polling.cancel_task(CancelTaskRequest(id=task.id))),
        "failed": describe(await s.send_task("fail:boom")),
    }
    if s.card.capabilities.streaming:
        out["subscribeCompleted"] = await error_of(_drain(s.streaming.subscribe(SubscribeToTaskRequest(id=task.id))))
    return out


async def _drain(stream: Any) -> list[StreamResponse]:
    return [r async for r in stream]


async def list_tasks(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    first = await s.send_task("one")
    second = await s.send_task("two", context_id=first.context_id)
    other = await s.send_task("elsewhere")
    page = await s.polling.list_tasks(ListTasksRequest(context_id=first.context_id, include_artifacts=True))
    small = await s.polling.list_tasks(ListTasksRequest(context_id=first.context_id, page_size=1))
    rest = await s.polling.list_tasks(
        ListTasksRequest(context_id=first.context_id, page_size=1, page_token=small.next_page_token)
    )
    done = await s.polling.list_tasks(
        ListTasksRequest(context_id=first.context_id, status=TaskState.TASK_STATE_COMPLETED)
    )
    return {
        "sent": [first.id, second.id],
        "other": other.id,
        "listed": [t.id for t in page.tasks],
        "artifacts": [artifact_texts(t) for t in page.tasks],
        "totalSize": page.total_size,
        "pages": [[t.id for t in small.tasks], [t.id for t in rest.tasks]],
        "nextPageToken": bool(small.next_page_token),
        "lastPageToken": rest.next_page_token,
        "completed": sorted(t.id for t in done.tasks),
    }


async def cancel(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    task = await s.send_task("sleep:5", blocking=False)
    await s.wait(task.id, {"working"}, timeout=5)
    canceled = await s.polling.cancel_task(CancelTaskRequest(id=task.id))
    fetched = await s.get(task.id)
    return {
        "submitted": describe(task),
        "canceled": describe(canceled),
        "fetched": describe(fetched),
        "seconds": round(time.monotonic() - started, 2),
    }


async def stream(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    request = SendMessageRequest(message=user_message("progress:step one;chunk:c1:Hello, ;last:c1:world;progress:done"))
    events = [event(r) async for r in s.streaming.send_message(request)]
    task_id = events[0].get("id", "")
    return {"events": events, "final": describe(await s.get(task_id))}


async def subscribe(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    task = await s.send_task("sleep:1;progress:woke;artifact:late", blocking=False)
    await s.wait(task.id, {"working"}, timeout=5)
    events = [event(r) async for r in s.streaming.subscribe(SubscribeToTaskRequest(id=task.id))]
    return {"taskId": task.id, "events": events, "final": describe(await s.get(task.id))}


#: The server's resumable-streams extension (docs/extensions/resumable-streams.md).
RESUMABLE = "https://django-a2a-agent.readthedocs.io/extensions/resumable-streams/v1"


def seq_of(response: StreamResponse) -> Any:
    """The event number in a stream event's metadata, as the SDK gives it (a Struct's number: a float)."""
    update = getattr(response, response.WhichOneof("payload"))
    metadata = update.metadata if update.HasField("metadata") else None
    return metadata[RESUMABLE]["seq"] if metadata is not None and RESUMABLE in metadata else None


async def resume(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    """A stream with the extension activated, cut after its third event; then
    SubscribeToTask with ``Last-Event-ID`` made from that event's number as the SDK read
    it (``str()`` of a float: "3.0"), which must bring exactly the rest."""
    activated = ServiceParametersFactory.create([with_a2a_extensions([RESUMABLE])])
    request = SendMessageRequest(message=user_message("progress:one;artifact:first;progress:two;progress:three"))
    streamed = s.streaming.send_message(request, context=ClientCallContext(service_parameters=activated))
    whole = [r async for r in streamed]
    task_id = whole[0].task.id
    seqs = [seq_of(r) for r in whole]
    cut = seqs[2]
    resumed_with = {**activated, "Last-Event-ID": str(cut)}
    rest = [
        r
        async for r in s.streaming.subscribe(
            SubscribeToTaskRequest(id=task_id), context=ClientCallContext(service_parameters=resumed_with)
        )
    ]
    return {
        "taskId": task_id,
        "seqs": [repr(n) for n in seqs],
        "lastEventId": str(cut),
        "whole": [event(r) for r in whole],
        "resumed": [event(r) for r in rest],
        "resumedSeqs": [repr(seq_of(r)) for r in rest],
    }


async def multi_turn(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    asked = await s.send_task("ask:Which city?")
    answered = await s.send_task("artifact:Paris", task_id=asked.id, context_id=asked.context_id)
    # And over a stream: ask, then answer on a stream of the same task.
    request = SendMessageRequest(message=user_message("ask:Which country?"))
    first = [event(r) async for r in s.streaming.send_message(request)]
    request = SendMessageRequest(
        message=user_message("artifact:France", task_id=first[0]["id"], context_id=first[0]["contextId"])
    )
    second = [event(r) async for r in s.streaming.send_message(request)]
    final = await s.get(asked.id, history_length=10)
    return {
        "asked": describe(asked),
        "answered": describe(answered),
        "final": describe(final),
        "streamed": [first, second],
    }


async def framework(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    """A framework's agent (tests/frameworks): its answer streamed, a tool call as
    progress, a tool that needs an approval, then the approving reply."""
    streamed = [event(r) async for r in s.streaming.send_message(SendMessageRequest(message=user_message("hello")))]
    tools = [event(r) async for r in s.streaming.send_message(SendMessageRequest(message=user_message("weather")))]
    asked = await s.send_task(args.approval)
    done = await s.send_task("yes", task_id=asked.id, context_id=asked.context_id)
    return {"streamed": streamed, "tools": tools, "asked": describe(asked), "done": describe(done)}


def push_config(task_id: str, config_id: str, url: str, token: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(task_id=task_id, id=config_id, url=url, token=token)


def describe_config(config: TaskPushNotificationConfig) -> dict[str, Any]:
    return {"taskId": config.task_id, "id": config.id, "url": config.url, "token": config.token}


class V03RestByHand:
    """ListTaskPushNotificationConfig and DeleteTaskPushNotificationConfig over v0.3
    HTTP+JSON, which the SDK's v0.3 REST transport does not implement (it raises
    NotImplementedError): the requests made by hand at the URL the SDK's transport
    uses, the answers read strictly by the SDK's v0.3 proto and converted by its
    v0.3 conversions, as its transport does for the other methods."""

    def __init__(self, s: Session) -> None:
        self.http = s.http
        self.url = s.polling._transport.url
        self.headers = {"A2A-Version": "0.3"}

    async def list(self, task_id: str) -> list[TaskPushNotificationConfig]:
        from a2a.compat.v0_3 import a2a_v0_3_pb2, conversions, proto_utils

        response = await self.http.get(f"{self.url}/v1/tasks/{task_id}/pushNotificationConfigs", headers=self.headers)
        check(response.status_code == 200, f"list answered {response.status_code}: {response.text}")
        listed = json_format.ParseDict(response.json(), a2a_v0_3_pb2.ListTaskPushNotificationConfigResponse())
        return [
            conversions.to_core_task_push_notification_config(proto_utils.FromProto.task_push_notification_config(c))
            for c in listed.configs
        ]

    async def delete(self, task_id: str, config_id: str) -> None:
        from google.protobuf import empty_pb2

        url = f"{self.url}/v1/tasks/{task_id}/pushNotificationConfigs/{config_id}"
        response = await self.http.delete(url, headers=self.headers)
        check(response.status_code == 200, f"delete answered {response.status_code}: {response.text}")
        json_format.ParseDict(response.json(), empty_pb2.Empty())


async def list_configs(s: Session, task_id: str) -> list[TaskPushNotificationConfig]:
    if s.v03_rest:
        return await V03RestByHand(s).list(task_id)
    request = ListTaskPushNotificationConfigsRequest(task_id=task_id)
    return list((await s.polling.list_task_push_notification_configs(request)).configs)


async def delete_config(s: Session, task_id: str, config_id: str) -> None:
    if s.v03_rest:
        return await V03RestByHand(s).delete(task_id, config_id)
    request = DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
    await s.polling.delete_task_push_notification_config(request)


async def push(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    """Create two configs on a task waiting for input, get and list them, delete one,
    then let the task complete: the webhook hears the kept config only."""
    check(bool(args.webhook), "--webhook is required")
    task = await s.send_task("ask:Shall I?")
    keep = f"{args.webhook}/keep"
    drop = f"{args.webhook}/drop"
    created = [
        await s.polling.create_task_push_notification_config(push_config(task.id, "keep", keep, "tok-keep")),
        await s.polling.create_task_push_notification_config(push_config(task.id, "drop", drop, "tok-drop")),
    ]
    got = await s.polling.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id="keep")
    )
    listed = await list_configs(s, task.id)
    await delete_config(s, task.id, "drop")
    after = await list_configs(s, task.id)
    gone = await error_of(
        s.polling.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id, id="drop"))
    )
    done = await s.send_task("artifact:pushed", task_id=task.id, context_id=task.context_id)
    return {
        "taskId": task.id,
        "created": [describe_config(c) for c in created],
        "got": describe_config(got),
        "listed": sorted(c.id for c in listed),
        "afterDelete": [c.id for c in after],
        "getDeleted": gone,
        "final": describe(done),
    }


async def push_in_send(s: Session, args: argparse.Namespace) -> dict[str, Any]:
    """A push config carried by SendMessage itself (configuration.taskPushNotificationConfig)."""
    check(bool(args.webhook), "--webhook is required")
    config = TaskPushNotificationConfig(url=f"{args.webhook}/send", token="tok-send")
    request = SendMessageRequest(
        message=user_message("progress:working on it;artifact:sent"),
        configuration=SendMessageConfiguration(task_push_notification_config=config),
    )
    responses = [r async for r in s.polling.send_message(request)]
    task = responses[0].task
    return {
        "final": describe(task),
        "configs": [describe_config(c) for c in await list_configs(s, task.id)],
    }


def parse_push(path: str) -> list[dict[str, Any]]:
    """Read push notification bodies as the SDK's types: a v1.0 one is a StreamResponse
    (parsed strictly), a v0.3 one a Task (the SDK's v0.3 pydantic model)."""
    from a2a.compat.v0_3 import types as types_v03

    with open(path) as f:
        deliveries = json.load(f)
    parsed = []
    for delivery in deliveries:
        if delivery["dialect"] == "1.0":
            response = json_format.Parse(delivery["body"], StreamResponse())
            parsed.append(event(response))
        else:
            task = types_v03.Task.model_validate_json(delivery["body"])
            parsed.append({"kind": "task", "id": task.id, "state": task.status.state.value})
    return parsed


SCENARIOS = {
    "send-blocking": send_blocking,
    "send-nonblocking": send_nonblocking,
    "reply": reply,
    "errors": errors,
    "list": list_tasks,
    "cancel": cancel,
    "stream": stream,
    "subscribe": subscribe,
    "multi-turn": multi_turn,
    "resume": resume,
    "framework": framework,
    "push": push,
    "push-in-send": push_in_send,
    "parse-push": None,  # no server: see parse_push
}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    import a2a

    if args.scenario == "parse-push":
        return {"scenario": args.scenario, "parsed": parse_push(args.bodies)}
    strict = not args.lenient and args.protocol == "1.0"
    if strict:
        make_strict()
    async with Session(args.base_url, args.binding, args.protocol, strict=strict) as s:
        scenario = SCENARIOS[args.scenario]
        assert scenario is not None
        observed = await scenario(s, args)
        sdk = {"module": a2a.__file__, "transport": s.transport, "agent": s.card_name}
        return {"scenario": args.scenario, "sdk": sdk, **observed}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--binding", default="JSONRPC", choices=["JSONRPC", "HTTP+JSON", "GRPC"])
    parser.add_argument("--protocol", default="1.0", choices=["1.0", "0.3"])
    parser.add_argument("--webhook", default="", help="base URL of the test's webhook receiver")
    parser.add_argument("--lenient", action="store_true", help="ignore unknown fields, as the SDK does")
    parser.add_argument("--approval", default="delete", help="framework: the prompt that needs an approval")
    parser.add_argument("--bodies", default="", help="parse-push: a JSON file of [{dialect, body}]")
    arguments = parser.parse_args()
    try:
        result = asyncio.run(main(arguments))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    print(json.dumps(result))
