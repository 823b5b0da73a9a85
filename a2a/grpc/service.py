"""The ``A2AService`` servicer: every method of ``a2a.proto`` through the service layer.

One mechanism converts: a request message becomes its ProtoJSON
(``json_format.MessageToDict``), which is exactly what the v1.0 JSON dialect parses
(the JSON-RPC params of the same method); the dialect's rendering of the result is
ProtoJSON too, read back into the response message (``json_format.ParseDict``). The
operations are those of the HTTP bindings (:mod:`a2a.service.operations`,
:mod:`a2a.service.push_configs`), called with ``CallContext(binding="grpc",
version="1.0", caller=...)``.

Service parameters come as metadata (spec 10.2): ``a2a-version`` (empty or ``1.0``;
this binding speaks v1.0's proto only), ``a2a-extensions``, and the credentials the
authentication classes read (``authorization``, ``x-api-key``). Errors are
``google.rpc.Status`` with the gRPC code of spec 5.4 and an ``ErrorInfo`` detail (and
``BadRequest`` naming the field of invalid params) in ``grpc-status-details-bin``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf import empty_pb2, json_format
from google.protobuf.message import Message as ProtoMessage
from google.rpc import error_details_pb2, status_pb2

from a2a import auth
from a2a.conf import a2a_settings
from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.protocol import V10, dialect_for
from a2a.protocol.errors import A2AError, VersionNotSupportedError
from a2a.protocol.model import StreamItem
from a2a.service import card, operations, push_configs
from a2a.service.context import CallContext
from a2a.service.errors import client_error

#: The detail types a Status carries; imported so ``ParseDict`` knows their ``@type``.
DETAIL_TYPES = (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest)

Response = TypeVar("Response", bound=ProtoMessage)


def status_code(error: A2AError) -> grpc.StatusCode:
    """The gRPC status code of ``error``: the one spec 5.4 gives it (``A2AError.status``,
    which the HTTP+JSON binding's Status bodies name too)."""
    try:
        return grpc.StatusCode[error.status]
    except KeyError:
        return grpc.StatusCode.INTERNAL


def error_status(error: A2AError) -> status_pb2.Status:
    """The ``google.rpc.Status`` of ``error``: its details are the v1.0 dialect's
    (ErrorInfo with reason, domain and metadata; BadRequest for a bad field)."""
    code = status_code(error)
    return json_format.ParseDict(
        {"code": code.value[0], "message": error.message, "details": V10.render_error(error)["data"]},
        status_pb2.Status(),
    )


def to_json(message: ProtoMessage) -> dict[str, Any]:
    """A request message as ProtoJSON (lowerCamelCase names, enum names): v1.0 JSON."""
    return json_format.MessageToDict(message)


def to_message(value: dict[str, Any], message_class: type[Response]) -> Response:
    """The v1.0 dialect's rendering (ProtoJSON) as a ``message_class`` message."""
    return json_format.ParseDict(value, message_class(), ignore_unknown_fields=True)


async def call_context(context: grpc.aio.ServicerContext) -> CallContext:
    """The service layer's context of this call: the caller (the authentication classes
    reading the metadata), v1.0, the extensions asked for."""
    metadata = [(key.lower(), value) for key, value in context.invocation_metadata() or () if isinstance(value, str)]
    values = dict(metadata)
    version = values.get("a2a-version", "").strip()
    if version and dialect_for(version) is not V10:  # an unknown version raises here too
        raise VersionNotSupportedError(
            f"A2A version {version} has no gRPC binding here; this service is A2A 1.0's a2a.proto",
            metadata={"requestedVersion": version, "supportedVersions": "1.0"},
        )
    caller = await auth.authenticate_headers(metadata)
    extensions = tuple(uri.strip() for uri in values.get("a2a-extensions", "").split(",") if uri.strip())
    origin = (a2a_settings.PUBLIC_URL or "").rstrip("/")
    return CallContext(caller=caller, version="1.0", binding="grpc", origin=origin, extensions=extensions)


async def abort(context: grpc.aio.ServicerContext, error: A2AError) -> NoReturn:
    """End the call with ``error``'s status (code, message, details)."""
    status = error_status(error)
    await context.abort(
        status_code(error),
        status.message,
        trailing_metadata=(("grpc-status-details-bin", status.SerializeToString()),),
    )
    raise AssertionError("context.abort returned")  # it raises


class A2AService(a2a_pb2_grpc.A2AServiceServicer):
    """``lf.a2a.v1.A2AService``: each method a few lines over the service layer."""

    async def _unary(
        self,
        context: grpc.aio.ServicerContext,
        run: Callable[[CallContext], Awaitable[dict[str, Any]]],
        response_class: type[Response],
    ) -> Response:
        try:
            return to_message(await run(await call_context(context)), response_class)
        except Exception as exc:
            await abort(context, client_error(exc, "gRPC call"))

    async def _stream(
        self, context: grpc.aio.ServicerContext, start: Callable[[CallContext], AsyncIterator[StreamItem]]
    ) -> AsyncIterator[pb.StreamResponse]:
        """Each item of the operation's stream as a StreamResponse (keepalives are
        HTTP/2's business here); an error, before or after the first, ends the call
        with its status. The operation is always closed, so a client that goes away
        leaves no subscription behind."""
        try:
            items = start(await call_context(context))
            try:
                async for item in items:
                    if item.kind != "keepalive":
                        yield to_message(V10.render_stream_item(item), pb.StreamResponse)
            finally:
                await items.aclose()  # type: ignore[attr-defined]
        except Exception as exc:
            await abort(context, client_error(exc, "gRPC call"))

    async def SendMessage(self, request: pb.SendMessageRequest, context: Any) -> pb.SendMessageResponse:
        async def run(ctx: CallContext) -> dict[str, Any]:
            return V10.render_send_result(await operations.send_message(V10.parse_send(to_json(request)), ctx))

        return await self._unary(context, run, pb.SendMessageResponse)

    async def SendStreamingMessage(
        self, request: pb.SendMessageRequest, context: Any
    ) -> AsyncIterator[pb.StreamResponse]:  # grpcio serves async generators as streams
        def start(ctx: CallContext) -> AsyncIterator[StreamItem]:
            return operations.stream_message(V10.parse_send(to_json(request)), ctx)

        async for response in self._stream(context, start):
            yield response

    async def GetTask(self, request: pb.GetTaskRequest, context: Any) -> pb.Task:
        async def run(ctx: CallContext) -> dict[str, Any]:
            return V10.render_task(await operations.get_task(V10.parse_get(to_json(request)), ctx))

        return await self._unary(context, run, pb.Task)

    async def ListTasks(self, request: pb.ListTasksRequest, context: Any) -> pb.ListTasksResponse:
        async def run(ctx: CallContext) -> dict[str, Any]:
            query = V10.parse_list(to_json(request))
            page = await operations.list_tasks(query, ctx)
            tasks = [V10.render_task(t) for t in page.tasks]
            return V10.render_list(tasks, page.next_page_token, query.page_size, page.total_size)

        return await self._unary(context, run, pb.ListTasksResponse)

    async def CancelTask(self, request: pb.CancelTaskRequest, context: Any) -> pb.Task:
        async def run(ctx: CallContext) -> dict[str, Any]:
            return V10.render_task(await operations.cancel_task(V10.parse_cancel(to_json(request)), ctx))

        return await self._unary(context, run, pb.Task)

    async def SubscribeToTask(
        self, request: pb.SubscribeToTaskRequest, context: Any
    ) -> AsyncIterator[pb.StreamResponse]:
        def start(ctx: CallContext) -> AsyncIterator[StreamItem]:
            return operations.subscribe_to_task(V10.parse_get(to_json(request)), ctx)

        async for response in self._stream(context, start):
            yield response

    async def CreateTaskPushNotificationConfig(
        self, request: pb.TaskPushNotificationConfig, context: Any
    ) -> pb.TaskPushNotificationConfig:
        async def run(ctx: CallContext) -> dict[str, Any]:
            push_configs.ensure_enabled()
            params = V10.parse_push_create(to_json(request))
            return V10.render_push_config(await push_configs.create_config(ctx, params))

        return await self._unary(context, run, pb.TaskPushNotificationConfig)

    async def GetTaskPushNotificationConfig(
        self, request: pb.GetTaskPushNotificationConfigRequest, context: Any
    ) -> pb.TaskPushNotificationConfig:
        async def run(ctx: CallContext) -> dict[str, Any]:
            push_configs.ensure_enabled()
            params = V10.parse_push_get(to_json(request))
            return V10.render_push_config(await push_configs.get_config(ctx, params))

        return await self._unary(context, run, pb.TaskPushNotificationConfig)

    async def ListTaskPushNotificationConfigs(
        self, request: pb.ListTaskPushNotificationConfigsRequest, context: Any
    ) -> pb.ListTaskPushNotificationConfigsResponse:
        async def run(ctx: CallContext) -> dict[str, Any]:
            push_configs.ensure_enabled()
            page = await push_configs.list_configs(ctx, V10.parse_push_list(to_json(request)))
            return V10.render_push_list(page.configs, page.next_page_token)

        return await self._unary(context, run, pb.ListTaskPushNotificationConfigsResponse)

    async def DeleteTaskPushNotificationConfig(
        self, request: pb.DeleteTaskPushNotificationConfigRequest, context: Any
    ) -> empty_pb2.Empty:
        async def run(ctx: CallContext) -> dict[str, Any]:
            push_configs.ensure_enabled()
            await push_configs.delete_config(ctx, V10.parse_push_delete(to_json(request)))
            return {}

        return await self._unary(context, run, empty_pb2.Empty)

    async def GetExtendedAgentCard(self, request: pb.GetExtendedAgentCardRequest, context: Any) -> pb.AgentCard:
        async def run(ctx: CallContext) -> dict[str, Any]:
            return card.extended_card(V10, ctx)

        return await self._unary(context, run, pb.AgentCard)
