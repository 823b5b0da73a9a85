"""The HTTP+JSON (REST) binding, spec section 11: the same methods as JSON-RPC (the one
table, :data:`a2a.service.methods.METHODS`), addressed by URL and HTTP method: a route
maps its path, query and body to a method's params, and renders its answer.

Routes (under the app's ``a2a/rest`` prefix, the interface URL the card names; the
table is :data:`ROUTES`, from which ``a2a/urls/`` and the OpenAPI description are made):
``POST message:send``, ``POST message:stream``, ``GET tasks``, ``GET tasks/{id}``,
``POST tasks/{id}:cancel``, ``POST|GET tasks/{id}:subscribe`` (the spec text says POST,
a2a.proto says GET), ``POST|GET tasks/{id}/pushNotificationConfigs``,
``GET|DELETE tasks/{id}/pushNotificationConfigs/{configId}``, ``GET extendedAgentCard``
(``GET card`` too). v0.3 clients put ``/v1`` before each path (``/v1/message:send``,
``/v1/card``): both spellings reach the same views.

The dialect comes from ``A2A-Version`` (header or query parameter), as on JSON-RPC:
``1.0`` is v1.0, empty or ``0.3`` is v0.3, whose HTTP+JSON bodies are the ProtoJSON of
its gRPC messages (:mod:`a2a.protocol.v03rest`). Success bodies are the bare objects
(``application/a2a+json`` in v1.0, ``application/json`` in v0.3, the other one to a
client whose ``Accept`` asks for it: :mod:`a2a.http.media`); errors are
``google.rpc.Status`` objects with the HTTP status of spec 5.4 (v0.3 bodies add the
error's name as ``type`` and its ``message`` at the top, which v0.3 clients read);
streams are SSE of bare StreamResponse objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from a2a import auth
from a2a.agents import Agent
from a2a.core import tracing
from a2a.http import media
from a2a.http.common import call_context, event_stream, later_response, request_agent, requested_version
from a2a.http.media import A2A_JSON, JSON
from a2a.http.sse import sse_stream
from a2a.protocol import V1_VERSIONS, V10, Dialect, limits, rest_dialect_for
from a2a.protocol.errors import (
    ERROR_NAMES,
    A2AError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
)
from a2a.service import methods
from a2a.service.context import CallContext, check_tenant
from a2a.service.errors import client_error

BOOLEAN_QUERY = {"true": True, "false": False}


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def error_body(dialect: Dialect, error: A2AError) -> dict[str, Any]:
    """A ``google.rpc.Status`` for ``error``: code = HTTP status, status = the error's
    gRPC status of spec 5.4 (``FAILED_PRECONDITION`` for TaskNotCancelable and the
    other 400s that are not bad input), details = ErrorInfo (and BadRequest naming the
    field of invalid params).

    In v0.3 the spec names no error body; the official SDK's v0.3 server sends this
    Status, its v0.3 client raises the error named by a top-level ``type``, and a2a-sdk
    0.3 servers sent a top-level ``message``; the JavaScript SDK's v0.3 client reads
    the JSON-RPC error's ``code`` and ``message`` at the top: v0.3 bodies carry all four."""
    body: dict[str, Any] = {
        "error": {
            "code": error.http_status,
            "status": error.status,
            "message": error.message,
            "details": V10.render_error(error)["data"],
        }
    }
    if dialect.version == "0.3":
        if error.code in ERROR_NAMES:
            body["type"] = ERROR_NAMES[error.code]
        body["message"] = error.message
        body["code"] = error.code
    return body


def _content_type(dialect: Dialect, request: HttpRequest) -> str:
    """``application/a2a+json`` in v1.0 and v1.1 (spec 11.1), ``application/json`` in v0.3,
    unless the request's ``Accept`` prefers the other (:mod:`a2a.http.media`)."""
    offered = (A2A_JSON, JSON) if dialect.version in V1_VERSIONS else (JSON, A2A_JSON)
    return media.preferred(request.META.get("HTTP_ACCEPT"), offered)


def _error_response(dialect: Dialect, error: A2AError, request: HttpRequest) -> HttpResponse:
    body = _dumps(error_body(dialect, error))
    return HttpResponse(body, status=error.http_status, content_type=_content_type(dialect, request))


def _failure_response(
    dialect: Dialect, error: A2AError, methods: tuple[str, ...], request: HttpRequest, agent: Agent | None = None
) -> HttpResponse:
    """``error`` as this binding answers it: a method the route does not serve is 405
    with ``Allow``, missing credentials are 401 with a challenge."""
    if isinstance(error, MethodNotFoundError):
        error.http_status = 405  # the Status body's code too, not only the HTTP status
        error.status = "METHOD_NOT_ALLOWED"
    response = _error_response(dialect, error, request)
    if isinstance(error, MethodNotFoundError):
        response["Allow"] = ", ".join(methods)
    elif isinstance(error, auth.AuthenticationRequiredError):
        response["WWW-Authenticate"] = auth.challenge(agent)
    return response


def _body(request: HttpRequest) -> dict[str, Any]:
    raw = limits.read_body(request)  # PayloadTooLargeError (413) over A2A_MAX_BODY_BYTES
    if not raw.strip():
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidRequestError("The request body must be a JSON object")
    limits.check_nesting(body)
    return body


def _query(request: HttpRequest) -> dict[str, Any]:
    """Query parameters as a params object (spec 11.5): booleans from true/false."""
    params: dict[str, Any] = {}
    for key, value in request.GET.items():
        if key == "A2A-Version":
            continue
        if key in ("includeArtifacts", "include_artifacts") and isinstance(value, str):
            params[key] = BOOLEAN_QUERY.get(value, value)
        else:
            params[key] = value
    return params


def endpoint(route: Route) -> Callable[..., Coroutine[Any, Any, HttpResponseBase]]:
    """The view of ``route``: the A2A method its HTTP method names (:data:`a2a.service.methods.METHODS`,
    the JSON-RPC and gRPC bindings' table) run in the caller's dialect on the params the
    request carries, its answer rendered, errors as Status bodies; ``route.path`` names
    it in traces (``POST message:send``)."""
    allowed = tuple(route.operations)

    @csrf_exempt
    async def view(request: HttpRequest, **kwargs: str) -> HttpResponseBase:
        try:
            dialect = rest_dialect_for(requested_version(request))
        except A2AError as exc:  # a version we do not speak: answered as v1.0 says
            return _error_response(V10, exc, request)
        try:
            if request.method not in allowed:
                raise MethodNotFoundError(f"{request.method} is not allowed here; use {' or '.join(allowed)}")
            limits.check_body_size(request)  # a GET's body too: the handler may have cut it off
            if request.method == "POST":  # 415 unless JSON (an empty body may have no Content-Type)
                limits.check_media_type(request, limits.read_body(request))
            caller = await auth.authenticate(request, request_agent(request))
            tenant = check_tenant(kwargs.pop("tenant", None))  # /{tenant}/tasks/...: scopes the request's tasks
            method = f"{request.method} {route.path}" if tracing.enabled() else ""
            ctx = call_context(request, caller, "rest", dialect.version, tenant=tenant, method=method)
            result = await _run(route, route.operations[request.method], dialect, request, kwargs, ctx)
        except Exception as exc:
            error = client_error(exc, f"REST {request.path}")
            return _failure_response(dialect, error, allowed, request, request_agent(request))
        if isinstance(result, HttpResponseBase):
            return result
        return HttpResponse(_dumps(result), content_type=_content_type(dialect, request))

    return view


async def _run(
    route: Route, operation: Operation, dialect: Dialect, request: HttpRequest, kwargs: dict[str, str], ctx: CallContext
) -> Any:
    """The operation's method run on the request's params (its body or its query
    parameters, and the route's path parameters), its answer as this binding sends it:
    a stream as SSE, a held long-poll as a response whose body comes later, a deletion
    as ``{}`` (google.protobuf.Empty)."""
    source = _body(request) if operation.body else _query(request) if operation.query else {}
    params = {**source, **{route.fields[name]: value for name, value in kwargs.items()}}
    result = await methods.METHODS[operation.name](dialect, params, ctx)
    if isinstance(result, methods.Stream):
        return await _stream(dialect, result.items)
    if isinstance(result, methods.Held):
        return _held(dialect, result, request)
    return {} if result is None else result


async def _stream(dialect: Dialect, items: Any) -> StreamingHttpResponse:
    first = await anext(items)  # errors before the first event are plain error responses
    return event_stream(
        sse_stream(
            first,
            items,
            lambda item: _dumps(dialect.render_stream_item(item)),
            lambda error: _dumps(error_body(dialect, error)),
        )
    )


def _held(dialect: Dialect, held: methods.Held, request: HttpRequest) -> StreamingHttpResponse:
    """A held long-poll's response: its head (200) now, its body once known."""

    async def body() -> bytes:  # the head is out: an error now is told in the body
        try:
            return _dumps(await held.answer())
        except Exception as exc:
            return _dumps(error_body(dialect, client_error(exc, f"REST {request.path}")))

    return later_response(body, _content_type(dialect, request))


@dataclass(frozen=True)
class Operation:
    """One A2A operation of a route: its method's name (v1.0's, a key of
    :data:`a2a.service.methods.METHODS`), the a2a.schema.json definitions of its request
    (``body``: sent as the JSON body, else its fields are query parameters, unless
    ``query`` is False: the path alone) and of its answer (``None`` for an SSE stream of
    StreamResponse), for the view and the OpenAPI description (:mod:`a2a.http.openapi`)."""

    name: str
    request: str
    response: str | None
    body: bool = False
    query: bool = True


@dataclass(frozen=True)
class Route:
    """A route of the binding, under the interface URL (``a2a/rest``): ``path`` with
    ``{param}`` placeholders (the view's keyword arguments), its URL name, its operation
    per HTTP method, the params field each path parameter fills, and its view. ``urls.py``
    makes the URL patterns from these, and the OpenAPI description is generated from them:
    there is no other list of the routes."""

    path: str
    name: str
    operations: dict[str, Operation]
    #: The field of the method's params each path parameter fills.
    fields: dict[str, str] = field(default_factory=dict)
    #: The regular expression of each parameter (default: no "/" nor ":").
    params: dict[str, str] = field(default_factory=dict)
    #: Other spellings of a parameter-less path (v0.3's ``card``).
    aliases: tuple[str, ...] = ()
    view: Callable[..., Coroutine[Any, Any, HttpResponseBase]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "view", endpoint(self))

    def param_pattern(self, param: str) -> str:
        return self.params.get(param, "[^/:]+")

    def _pattern(self, path: str) -> str:
        out = ""
        for literal, param in PARAM.findall(path + "{}"):
            out += re.escape(literal)
            if param:
                out += f"(?P<{param}>{self.param_pattern(param)})"
        return out

    @property
    def regex(self) -> str:
        """The URL regex (v0.3 clients put ``v1/`` before each path)."""
        spellings = [self._pattern(p) for p in (self.path, *self.aliases)]
        body = spellings[0] if len(spellings) == 1 else f"(?:{'|'.join(spellings)})"
        return rf"^a2a/rest/(?:v1/)?{body}$"

    @property
    def tenant_regex(self) -> str:
        """The v1.0 tenant-scoped URL regex (a2a.proto: ``/{tenant}/tasks/{id}``, ...)."""
        return rf"^a2a/rest/(?P<tenant>[^/:]+)/{self._pattern(self.path)}$"


PARAM = re.compile(r"([^{]*)\{([^}]*)\}")
ANY_ID = "[^/]+"  # a task id before ":cancel" / ":subscribe" may hold ":" (the suffix is matched last)

TASK = {"task_id": "id"}  # the task a route's path names, as GetTask and CancelTask name it
CONFIG = {"task_id": "taskId", "config_id": "id"}  # and as the push-config methods do

ROUTES: tuple[Route, ...] = (
    Route(
        "message:send",
        "rest-send",
        {"POST": Operation("SendMessage", "SendMessageRequest", "SendMessageResponse", body=True)},
    ),
    Route(
        "message:stream",
        "rest-stream",
        {"POST": Operation("SendStreamingMessage", "SendMessageRequest", None, body=True)},
    ),
    Route("tasks", "rest-list", {"GET": Operation("ListTasks", "ListTasksRequest", "ListTasksResponse")}),
    Route(
        "tasks/{task_id}:cancel",
        "rest-cancel",
        {"POST": Operation("CancelTask", "CancelTaskRequest", "Task", body=True)},
        fields=TASK,
        params={"task_id": ANY_ID},
    ),
    Route(
        "tasks/{task_id}:subscribe",
        "rest-subscribe",
        # The spec text says POST, a2a.proto says GET: both are served.
        {
            "POST": Operation("SubscribeToTask", "SubscribeToTaskRequest", None, query=False),
            "GET": Operation("SubscribeToTask", "SubscribeToTaskRequest", None, query=False),
        },
        fields=TASK,
        params={"task_id": ANY_ID},
    ),
    Route("tasks/{task_id}", "rest-get", {"GET": Operation("GetTask", "GetTaskRequest", "Task")}, fields=TASK),
    Route(
        "tasks/{task_id}/pushNotificationConfigs",
        "rest-push",
        {
            "POST": Operation(
                "CreateTaskPushNotificationConfig",
                "TaskPushNotificationConfig",
                "TaskPushNotificationConfig",
                body=True,
            ),
            "GET": Operation(
                "ListTaskPushNotificationConfigs",
                "ListTaskPushNotificationConfigsRequest",
                "ListTaskPushNotificationConfigsResponse",
            ),
        },
        fields=CONFIG,
    ),
    Route(
        "tasks/{task_id}/pushNotificationConfigs/{config_id}",
        "rest-push-config",
        {
            "GET": Operation(
                "GetTaskPushNotificationConfig",
                "GetTaskPushNotificationConfigRequest",
                "TaskPushNotificationConfig",
                query=False,
            ),
            "DELETE": Operation(
                "DeleteTaskPushNotificationConfig", "DeleteTaskPushNotificationConfigRequest", "Empty", query=False
            ),
        },
        fields=CONFIG,
        params={"config_id": ANY_ID},
    ),
    Route(
        "extendedAgentCard",
        "rest-extended-card",
        {"GET": Operation("GetExtendedAgentCard", "GetExtendedAgentCardRequest", "AgentCard", query=False)},
        aliases=("card",),
    ),
)
ROUTE = {route.name: route for route in ROUTES}

send_message = ROUTE["rest-send"].view
stream_message = ROUTE["rest-stream"].view
get_task = ROUTE["rest-get"].view
list_tasks = ROUTE["rest-list"].view
cancel_task = ROUTE["rest-cancel"].view
subscribe_to_task = ROUTE["rest-subscribe"].view
push_configs = ROUTE["rest-push"].view
push_config = ROUTE["rest-push-config"].view
get_extended_card = ROUTE["rest-extended-card"].view
