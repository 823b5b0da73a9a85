"""The gRPC binding (a2a.grpc), driven by grpcio's own asyncio client stub: every
method of a2a.proto's A2AService, streaming, errors as gRPC status codes with their
google.rpc details, authentication from metadata, the card's interface, the
management command and the server beside the ASGI app."""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from django.contrib.auth.models import User
from google.rpc import error_details_pb2, status_pb2
from rest_framework.authtoken.models import Token

from a2a.asgi import get_asgi_application
from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.server import start
from a2a.service import card
from a2a.testing import WireClient
from stores.memory import MemoryTaskStore
from tests.ports import free_port
from tests.server import command_process

pytestmark = pytest.mark.django_db(transaction=True)

CLASSES = ["a2a.auth.BearerTokenAuthentication", "a2a.auth.APIKeyAuthentication"]
COMPLETED, WORKING, CANCELED = pb.TASK_STATE_COMPLETED, pb.TASK_STATE_WORKING, pb.TASK_STATE_CANCELED


@pytest.fixture(autouse=True)
def agent(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True  # webhooks on loopback (never called here)


def run(body: Callable[[a2a_pb2_grpc.A2AServiceStub], Awaitable[Any]]) -> Any:
    """Run ``body`` with a stub of a server on a free loopback port, in one event loop."""

    async def go() -> Any:
        server, port = await start("127.0.0.1:0")
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                return await body(a2a_pb2_grpc.A2AServiceStub(channel))
        finally:
            await server.stop(None)

    return asyncio.run(go())


def message(text: str, **fields: Any) -> pb.Message:
    return pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)], **fields)


def message_request(text: str, **config: Any) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=message(text), configuration=pb.SendMessageConfiguration(**config))


def status_of(error: grpc.aio.AioRpcError) -> status_pb2.Status:
    """The google.rpc.Status of a failed call (grpc-status-details-bin)."""
    details = dict(error.trailing_metadata() or ())["grpc-status-details-bin"]
    return status_pb2.Status.FromString(details)


def error_info(error: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    info = error_details_pb2.ErrorInfo()
    assert status_of(error).details[0].Unpack(info)
    assert info.domain == "a2a-protocol.org"
    return info


async def fails(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def collect(stream: Any) -> list[pb.StreamResponse]:
    return [item async for item in stream]


# --- every method ------------------------------------------------------------------------


def test_send_message_blocking_answers_the_completed_task():
    async def body(stub):
        return await stub.SendMessage(message_request("hello"))

    response = run(body)
    assert response.WhichOneof("payload") == "task"
    task = response.task
    assert task.status.state == COMPLETED
    assert task.artifacts[0].parts[0].text == "done: hello"
    assert task.history[0].parts[0].text == "hello" and task.history[0].role == pb.ROLE_USER
    assert task.id and task.context_id
    assert task.status.timestamp.seconds > 0


def test_send_message_with_a_direct_reply_answers_a_message():
    async def body(stub):
        return await stub.SendMessage(message_request("reply:hi there"))

    response = run(body)
    assert response.WhichOneof("payload") == "message"
    assert response.message.parts[0].text == "hi there" and response.message.role == pb.ROLE_AGENT


def test_get_task_list_tasks_and_history_length():
    async def body(stub):
        sent = await stub.SendMessage(message_request("one"))
        await stub.SendMessage(message_request("two"))
        got = await stub.GetTask(pb.GetTaskRequest(id=sent.task.id, history_length=0))
        page = await stub.ListTasks(pb.ListTasksRequest(page_size=1, status=COMPLETED))
        by_context = await stub.ListTasks(pb.ListTasksRequest(context_id=sent.task.context_id))
        return sent.task, got, page, by_context

    sent, got, page, by_context = run(body)
    assert got.id == sent.id and got.status.state == COMPLETED and not got.history
    assert len(page.tasks) == 1 and page.next_page_token and page.page_size == 1 and page.total_size == 2
    assert [t.id for t in by_context.tasks] == [sent.id]


def test_data_and_file_parts_and_metadata_cross_the_proto_both_ways():
    async def body(stub):
        request = pb.SendMessageRequest(
            message=pb.Message(
                message_id="m1",
                role=pb.ROLE_USER,
                parts=[
                    pb.Part(text='data:{"answer": 42, "list": [1, "a"]}'),
                    pb.Part(raw=b"\x00\x01", media_type="text/plain"),
                ],
            )
        )
        request.metadata.update({"trace": "t-1"})
        return await stub.SendMessage(request)

    task = run(body).task
    assert task.status.state == COMPLETED
    assert task.artifacts[0].parts[0].data.struct_value["answer"] == 42
    assert task.history[0].parts[1].raw == b"\x00\x01"
    assert task.metadata["trace"] == "t-1"


def test_cancel_task_and_a_second_cancel_is_failed_precondition(tmp_path):
    async def body(stub):
        sent = await stub.SendMessage(message_request(f"wait:{tmp_path / 'never'}", return_immediately=True))
        canceled = await stub.CancelTask(pb.CancelTaskRequest(id=sent.task.id))
        again = await fails(stub.CancelTask(pb.CancelTaskRequest(id=sent.task.id)))
        return canceled, again

    canceled, again = run(body)
    assert canceled.status.state == CANCELED
    assert again.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info(again).reason == "TASK_NOT_CANCELABLE"


def test_send_streaming_message_streams_the_task_its_updates_and_the_end():
    async def body(stub):
        return await collect(stub.SendStreamingMessage(message_request("progress:half;artifact:A;progress:more")))

    items = run(body)
    kinds = [item.WhichOneof("payload") for item in items]
    assert kinds[0] == "task"
    assert "artifactUpdate" not in kinds  # proto field names, not JSON names
    assert "artifact_update" in kinds and "status_update" in kinds
    last = items[-1].status_update
    assert last.status.state == COMPLETED and last.task_id == items[0].task.id
    artifact = next(i.artifact_update for i in items if i.WhichOneof("payload") == "artifact_update")
    assert artifact.artifact.parts[0].text == "A"
    progress = [p.text for i in items if i.HasField("status_update") for p in i.status_update.status.message.parts]
    assert "half" in progress


def test_subscribe_to_task_follows_it_to_the_end(tmp_path):
    gate = tmp_path / "gate"

    async def body(stub):
        sent = await stub.SendMessage(message_request(f"wait:{gate};progress:after", return_immediately=True))
        stream = stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=sent.task.id))
        first = await stream.read()
        gate.touch()
        rest = []
        while (item := await stream.read()) != grpc.aio.EOF:
            rest.append(item)
        return sent.task, first, rest

    sent, first, rest = run(body)
    assert first.task.id == sent.id
    assert rest[-1].status_update.status.state == COMPLETED


def test_subscribe_to_a_terminal_task_is_failed_precondition_and_unknown_is_not_found():
    async def body(stub):
        sent = await stub.SendMessage(message_request("x"))
        done = await fails(collect(stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=sent.task.id))))
        unknown = await fails(collect(stub.SubscribeToTask(pb.SubscribeToTaskRequest(id="nope"))))
        return done, unknown

    done, unknown = run(body)
    assert done.code() == grpc.StatusCode.FAILED_PRECONDITION and error_info(done).reason == "UNSUPPORTED_OPERATION"
    assert unknown.code() == grpc.StatusCode.NOT_FOUND and error_info(unknown).reason == "TASK_NOT_FOUND"


def test_push_config_create_get_list_delete():
    async def body(stub):
        task = (await stub.SendMessage(message_request("x"))).task
        created = await stub.CreateTaskPushNotificationConfig(
            pb.TaskPushNotificationConfig(
                task_id=task.id,
                url="http://127.0.0.1:9/hook",
                token="tok",
                authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="secret"),
            )
        )
        got = await stub.GetTaskPushNotificationConfig(
            pb.GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
        )
        listed = await stub.ListTaskPushNotificationConfigs(pb.ListTaskPushNotificationConfigsRequest(task_id=task.id))
        deleted = await stub.DeleteTaskPushNotificationConfig(
            pb.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
        )
        after = await stub.ListTaskPushNotificationConfigs(pb.ListTaskPushNotificationConfigsRequest(task_id=task.id))
        missing = await fails(
            stub.GetTaskPushNotificationConfig(pb.GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id))
        )
        return task, created, got, listed, deleted, after, missing

    task, created, got, listed, deleted, after, missing = run(body)
    assert created.id and created.task_id == task.id and created.url == "http://127.0.0.1:9/hook"
    assert created.authentication.scheme == "Bearer" and created.token == "tok"
    assert got == created
    assert [c.id for c in listed.configs] == [created.id]
    assert deleted == pb.google_dot_protobuf_dot_empty__pb2.Empty()
    assert not after.configs
    assert missing.code() == grpc.StatusCode.NOT_FOUND


def test_push_configs_disabled_is_failed_precondition(settings):
    settings.A2A_PUSH_NOTIFICATIONS = False

    async def body(stub):
        return await fails(
            stub.CreateTaskPushNotificationConfig(pb.TaskPushNotificationConfig(task_id="t", url="http://x/"))
        )

    error = run(body)
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info(error).reason == "PUSH_NOTIFICATION_NOT_SUPPORTED"


# --- errors ------------------------------------------------------------------------------


def test_invalid_params_is_invalid_argument_naming_the_field():
    async def body(stub):
        return await fails(stub.SendMessage(pb.SendMessageRequest(message=pb.Message(message_id="m", role=1))))

    error = run(body)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = status_of(error)
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0] and status.message == error.details()
    assert error_info(error).reason == "INVALID_PARAMS"
    bad = error_details_pb2.BadRequest()
    assert status.details[1].Unpack(bad)
    assert bad.field_violations[0].field.startswith("message")


def test_unknown_task_is_not_found_with_the_task_id_in_metadata():
    async def body(stub):
        return await fails(stub.GetTask(pb.GetTaskRequest(id="no-such-task")))

    error = run(body)
    assert error.code() == grpc.StatusCode.NOT_FOUND
    info = error_info(error)
    assert info.reason == "TASK_NOT_FOUND" and info.metadata["taskId"] == "no-such-task"


def test_unaccepted_media_type_is_invalid_argument(settings):
    settings.A2A_INPUT_MODES = ["text/plain"]

    async def body(stub):
        request = pb.SendMessageRequest(
            message=pb.Message(message_id="m", role=pb.ROLE_USER, parts=[pb.Part(raw=b"x", media_type="image/png")])
        )
        return await fails(stub.SendMessage(request))

    error = run(body)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(error).reason == "CONTENT_TYPE_NOT_SUPPORTED"


@pytest.mark.parametrize("version", ["0.3", "9.9"])
def test_an_a2a_version_other_than_1_0_is_failed_precondition(version):
    async def body(stub):
        return await fails(stub.GetTask(pb.GetTaskRequest(id="x"), metadata=(("a2a-version", "1.0"),)))

    assert run(body).code() == grpc.StatusCode.NOT_FOUND  # 1.0 is understood (the task is unknown)

    async def other(stub):
        return await fails(stub.GetTask(pb.GetTaskRequest(id="x"), metadata=(("a2a-version", version),)))

    error = run(other)
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info(error).reason == "VERSION_NOT_SUPPORTED"


def test_a_failing_store_is_unavailable_not_not_found(settings):
    class Down(MemoryTaskStore):
        def get(self, task_id):
            from stores.base import StoreUnavailable

            raise StoreUnavailable("the store is down")

    settings.TASK_STORE = Down()

    async def body(stub):
        return await fails(stub.GetTask(pb.GetTaskRequest(id="x")))

    error = run(body)
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert "the store is down" in error.details()


def test_a_message_over_the_body_limit_is_refused_before_parsing(settings):
    settings.A2A_MAX_BODY_BYTES = 2000

    async def body(stub):
        small = await stub.SendMessage(message_request("x" * 100))
        big = await fails(stub.SendMessage(message_request("x" * 3000)))
        return small, big

    small, big = run(body)
    assert small.task.status.state == COMPLETED
    assert big.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_an_undeclared_extended_card_is_unsupported():
    """Spec 3.3.4: the card says capabilities.extendedAgentCard false, so the operation
    is unsupported (FAILED_PRECONDITION, as every binding answers it)."""

    async def body(stub):
        return await fails(stub.GetExtendedAgentCard(pb.GetExtendedAgentCardRequest()))

    error = run(body)
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info(error).reason == "UNSUPPORTED_OPERATION"


# --- authentication ------------------------------------------------------------------------


@pytest.fixture
def tokens(settings):
    settings.A2A_AUTHENTICATION_CLASSES = CLASSES
    alice = Token.objects.create(user=User.objects.create_user("alice")).key
    bob = Token.objects.create(user=User.objects.create_user("bob")).key
    return {"alice": (("authorization", f"Bearer {alice}"),), "bob": (("x-api-key", bob),)}


def test_without_credentials_every_method_is_unauthenticated(tokens):
    async def body(stub):
        return [
            await fails(stub.SendMessage(message_request("x"))),
            await fails(stub.GetTask(pb.GetTaskRequest(id="x"))),
            await fails(collect(stub.SendStreamingMessage(message_request("x")))),
            await fails(stub.GetTask(pb.GetTaskRequest(id="x"), metadata=(("authorization", "Bearer wrong"),))),
        ]

    for error in run(body):
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED


def test_credentials_from_metadata_and_tasks_owned_by_their_caller(tokens):
    async def body(stub):
        task = (await stub.SendMessage(message_request("mine"), metadata=tokens["alice"])).task
        own = await stub.GetTask(pb.GetTaskRequest(id=task.id), metadata=tokens["alice"])
        other = await fails(stub.GetTask(pb.GetTaskRequest(id=task.id), metadata=tokens["bob"]))
        bobs = await stub.ListTasks(pb.ListTasksRequest(), metadata=tokens["bob"])
        return task, own, other, bobs

    task, own, other, bobs = run(body)
    assert own.id == task.id
    assert other.code() == grpc.StatusCode.NOT_FOUND  # another caller's task answers like an unknown one
    assert not bobs.tasks


def test_extended_card_for_an_authenticated_caller(tokens, settings):
    settings.A2A_EXTENDED_CARD = {"skills": [{"id": "secret", "name": "Secret", "description": "for members"}]}
    settings.A2A_PUBLIC_URL = "https://agent.example.com"
    settings.A2A_GRPC_URL = "agent.example.com:50051"

    async def body(stub):
        got = await stub.GetExtendedAgentCard(pb.GetExtendedAgentCardRequest(), metadata=tokens["alice"])
        anonymous = await fails(stub.GetExtendedAgentCard(pb.GetExtendedAgentCardRequest()))
        return got, anonymous

    got, anonymous = run(body)
    assert "secret" in [s.id for s in got.skills]
    interfaces = {(i.protocol_binding, i.protocol_version): i.url for i in got.supported_interfaces}
    assert interfaces[("JSONRPC", "1.0")] == "https://agent.example.com/a2a/"
    assert interfaces[("GRPC", "1.0")] == "agent.example.com:50051"
    assert got.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert anonymous.code() == grpc.StatusCode.UNAUTHENTICATED


# --- the card, the command, beside the ASGI app -------------------------------------------


def test_the_card_advertises_grpc_only_when_configured_and_only_as_v1_0_and_1_1(settings):
    assert not any(
        i["protocolBinding"] == "GRPC" for i in card.build_card("http://h/a2a/", version="1.0")["supportedInterfaces"]
    )
    settings.A2A_GRPC_URL = "agent.example.com:50051"
    v10 = card.build_card("http://h/a2a/", version="1.0", rest="http://h/a2a/rest")
    assert {"url": "agent.example.com:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"} in v10[
        "supportedInterfaces"
    ]
    both = card.build_card("http://h/a2a/", version="0.3", rest="http://h/a2a/rest")
    grpc_entries = [i for i in both["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert [i["protocolVersion"] for i in grpc_entries] == ["1.0", "1.1"]  # 1.1: the same proto, and more
    # v0.3 readers dial additionalInterfaces with v0.3's own proto: no gRPC there.
    assert all(i["transport"] != "GRPC" for i in both["additionalInterfaces"])
    # The served card parses as lf.a2a.v1.AgentCard.
    from google.protobuf import json_format

    parsed = json_format.ParseDict(v10, pb.AgentCard(), ignore_unknown_fields=False)
    assert parsed.supported_interfaces[-1].protocol_binding == "GRPC"


def test_served_beside_the_asgi_app_on_its_lifespan(settings):
    port = free_port()
    settings.A2A_GRPC_IN_ASGI = True
    settings.A2A_GRPC_ADDRESS = f"127.0.0.1:{port}"

    async def go() -> Any:
        app = get_asgi_application()
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        lifespan = asyncio.ensure_future(app({"type": "lifespan"}, inbox.get, outbox.put))
        await inbox.put({"type": "lifespan.startup"})
        assert (await outbox.get())["type"] == "lifespan.startup.complete"
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            sent = await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(message_request("beside"), timeout=30)
        got = await WireClient(app=app).arpc("GetTask", {"id": sent.task.id})
        await inbox.put({"type": "lifespan.shutdown"})
        assert (await outbox.get())["type"] == "lifespan.shutdown.complete"
        await lifespan
        return sent, got

    sent, got = asyncio.run(go())
    assert got["result"]["id"] == sent.task.id  # one store behind both bindings
    assert got["result"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.slow
def test_the_management_command_serves_until_sigterm(tmp_path):
    with command_process("a2a_grpc", "--port", "0", "--grace", "1") as process:
        line = process.stdout.readline()
        assert "listening on 127.0.0.1:" in line, line + process.stderr.read()
        port = int(line.rsplit(":", 1)[1])

        async def call() -> pb.SendMessageResponse:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                return await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(message_request("over the command"))

        assert asyncio.run(call()).task.status.state == COMPLETED
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped" in out


def test_the_management_command_refuses_half_a_tls_pair():
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="go together"):
        call_command("a2a_grpc", "--port", "0", "--tls-cert", "x.pem")


def test_system_checks_for_the_grpc_settings(settings, monkeypatch):
    from a2a.ops.checks import grpc as checks

    assert checks.check_grpc() == []
    settings.A2A_GRPC_ADDRESS = "no-port"
    settings.A2A_GRPC_URL = ""
    assert [e.id for e in checks.check_grpc()] == ["a2a.E091", "a2a.E091"]
    settings.A2A_GRPC_ADDRESS = "127.0.0.1:50051"
    settings.A2A_GRPC_URL = None
    settings.A2A_GRPC_IN_ASGI = True
    assert checks.check_grpc() == []  # installed here
    monkeypatch.setattr(checks, "GRPC_MODULES", ("grpc", "no_such_module_for_a2a"))
    [error] = checks.check_grpc()
    assert error.id == "a2a.E090" and "no_such_module_for_a2a" in error.msg and "[grpc]" in error.hint
