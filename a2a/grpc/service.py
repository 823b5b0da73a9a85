"""The ``A2AService`` servicer: every method of ``a2a.proto`` through the service layer.

One mechanism converts: a request message becomes its ProtoJSON
(``json_format.MessageToDict``), which is exactly what the v1.0 JSON dialect parses
(the JSON-RPC params of the same method); the dialect's rendering of the result is
ProtoJSON too, read back into the response message (``json_format.ParseDict``). Each
servicer method is the JSON-RPC binding's method of the same name
(:data:`a2a.service.methods.METHODS`) with the v1.0 dialect (1.1's for ``a2a-version:
1.1``), called with ``CallContext(binding="grpc", version="1.0", caller=...)``.

Service parameters come as metadata (spec 10.2): ``a2a-version`` (empty or ``1.0``, or
``1.1``: the proto is the 1.1 draft's, v1.0's plus the generation and timeline fields, which only a
1.1 call is answered with), ``a2a-extensions``, and the credentials the
authentication classes read (``authorization``, ``x-api-key``). The ``tenant`` field of
every request message scopes the call's tasks, checked as the other bindings check
``params.tenant`` and the ``/{tenant}/`` of a path. Errors are
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
from a2a.agents import DEFAULT_AGENT, Agent, UnknownAgent, get_agent
from a2a.conf import a2a_settings
from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.handlers.credentials import credential_headers
from a2a.protocol import V1_VERSIONS, V10, Dialect, dialect_for
from a2a.protocol.errors import A2AError, InvalidRequestError, VersionNotSupportedError
from a2a.protocol.model import shown
from a2a.service.context import CallContext, check_tenant
from a2a.service.errors import client_error
from a2a.service.methods import METHODS, Held, Stream

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


def call_agent(values: dict[str, str]) -> Agent:
    """The agent a call is for: the one its ``a2a-agent`` metadata names (the name a route
    of ``a2a.urls.agents`` carries; "default" or none: the default agent). One server
    serves every agent; an unknown name is INVALID_ARGUMENT."""
    name = values.get("a2a-agent", "").strip() or DEFAULT_AGENT
    try:
        return get_agent(name)
    except UnknownAgent:
        raise InvalidRequestError(f"No agent named {shown(name, 64)} here (metadata a2a-agent)") from None


async def call_context(context: grpc.aio.ServicerContext, tenant: Any = "") -> CallContext:
    """The service layer's context of this call: the agent (``a2a-agent`` metadata), the
    caller (that agent's authentication classes reading the metadata), v1.0, the
    extensions asked for, and ``tenant`` (the request message's ``tenant`` field),
    checked (InvalidParamsError) as every binding checks a tenant."""
    metadata = [(key.lower(), value) for key, value in context.invocation_metadata() or () if isinstance(value, str)]
    values = dict(metadata)
    version = values.get("a2a-version", "").strip()
    if version and dialect_for(version).version not in V1_VERSIONS:  # an unknown version raises here too
        raise VersionNotSupportedError(
            f"A2A version {version} has no gRPC binding here; this service is A2A 1.0's a2a.proto (and 1.1's)",
            metadata={"requestedVersion": version, "supportedVersions": "1.0,1.1"},
        )
    agent = call_agent(values)
    caller = await auth.authenticate_headers(metadata, agent)
    extensions = tuple(uri.strip() for uri in values.get("a2a-extensions", "").split(",") if uri.strip())
    tenant = check_tenant(tenant)  # after authentication, as on the other bindings
    origin = (a2a_settings.PUBLIC_URL or "").rstrip("/")
    credentials = tuple(credential_headers(lambda name: values.get(name.lower())).items())
    return CallContext(
        caller=caller,
        version=version or "1.0",
        binding="grpc",
        origin=origin,
        extensions=extensions,
        tenant=tenant,
        agent_name=agent.name,
        credentials=credentials,
        last_event_id=values.get("last-event-id", ""),
    )


def dialect_of(ctx: CallContext) -> Dialect:
    """The dialect a call is answered in: v1.0, or 1.1 (with the generation fields)."""
    return dialect_for(ctx.version)


async def abort(context: grpc.aio.ServicerContext, error: A2AError) -> NoReturn:
    """End the call with ``error``'s status (code, message, details)."""
    status = error_status(error)
    await context.abort(
        status_code(error),
        status.message,
        trailing_metadata=(("grpc-status-details-bin", status.SerializeToString()),),
    )
    raise AssertionError("context.abort returned")  # it raises


def unary(name: str, response_class: type[Response]) -> Callable[..., Awaitable[Response]]:
    """The servicer method ``name``: the A2A method of that name (:data:`METHODS`), its
    request read as v1.0 ProtoJSON, its rendering read back as ``response_class``."""
    method = METHODS[name]

    async def call(self: Any, request: ProtoMessage, context: grpc.aio.ServicerContext) -> Response:
        try:
            params = to_json(request)
            ctx = await call_context(context, params.get("tenant"))
            result = await method(dialect_of(ctx), params, ctx)
            if isinstance(result, Held):  # a long-poll: no thread waits here
                result = await result.answer()
            return to_message(result or {}, response_class)  # a deletion renders as nothing: Empty
        except Exception as exc:
            await abort(context, client_error(exc, "gRPC call"))

    call.__name__ = call.__qualname__ = name
    return call


def streaming(name: str) -> Callable[..., AsyncIterator[pb.StreamResponse]]:
    """The streaming servicer method ``name``: each item of the operation's stream as a
    StreamResponse (keepalives are HTTP/2's business here); an error, before or after
    the first, ends the call with its status. The operation is always closed, so a
    client that goes away leaves no subscription behind."""
    method = METHODS[name]

    async def call(
        self: Any, request: ProtoMessage, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.StreamResponse]:  # grpcio serves async generators as streams
        try:
            params = to_json(request)
            ctx = await call_context(context, params.get("tenant"))
            dialect = dialect_of(ctx)
            stream: Stream = await method(dialect, params, ctx)
            try:
                async for item in stream.items:
                    if item.kind != "keepalive":
                        yield to_message(dialect.render_stream_item(item), pb.StreamResponse)
            finally:
                await stream.items.aclose()  # type: ignore[attr-defined]
        except Exception as exc:
            await abort(context, client_error(exc, "gRPC call"))

    call.__name__ = call.__qualname__ = name
    return call


class A2AService(a2a_pb2_grpc.A2AServiceServicer):
    """``lf.a2a.v1.A2AService``: each method the A2A method of the same name."""

    SendMessage = unary("SendMessage", pb.SendMessageResponse)
    SendStreamingMessage = streaming("SendStreamingMessage")
    GetTask = unary("GetTask", pb.Task)
    ListTasks = unary("ListTasks", pb.ListTasksResponse)
    CancelTask = unary("CancelTask", pb.Task)
    SubscribeToTask = streaming("SubscribeToTask")
    CreateTaskPushNotificationConfig = unary("CreateTaskPushNotificationConfig", pb.TaskPushNotificationConfig)
    GetTaskPushNotificationConfig = unary("GetTaskPushNotificationConfig", pb.TaskPushNotificationConfig)
    ListTaskPushNotificationConfigs = unary(
        "ListTaskPushNotificationConfigs", pb.ListTaskPushNotificationConfigsResponse
    )
    DeleteTaskPushNotificationConfig = unary("DeleteTaskPushNotificationConfig", empty_pb2.Empty)
    GetExtendedAgentCard = unary("GetExtendedAgentCard", pb.AgentCard)
