"""A2A and JSON-RPC errors: one class each, declared with its answer (code, reason, HTTP
and gRPC status, default message) as class keywords.

Operations raise these; each binding renders them in its own shape (see
``a2a.http``), so an error is defined once and means the same everywhere.
"""

from __future__ import annotations

from typing import Any


class A2AError(Exception):
    """Base of every error a client can be answered with.

    A subclass declares its answer as class keywords (``code``, ``reason``,
    ``http_status``, ``status``, ``message`` for :attr:`default_message`); one left out is
    its base's::

        class TaskNotCancelableError(A2AError, code=-32002, reason="TASK_NOT_CANCELABLE", ...):
            \"\"\"CancelTask on a task that has ended.\"\"\"
    """

    code: int = -32603
    reason: str = "INTERNAL"
    http_status: int = 500
    #: The gRPC status (``google.rpc.Code`` name) of spec 5.4, which HTTP+JSON error
    #: bodies carry as ``error.status``: several share an HTTP status, not a status.
    status: str = "INTERNAL"
    default_message: str = "Internal error"

    def __init_subclass__(
        cls,
        *,
        code: int | None = None,
        reason: str | None = None,
        http_status: int | None = None,
        status: str | None = None,
        message: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        answer = {
            "code": code,
            "reason": reason,
            "http_status": http_status,
            "status": status,
            "default_message": message,
        }
        for name, value in answer.items():
            if value is not None:
                setattr(cls, name, value)

    def __init__(self, message: str | None = None, *, metadata: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        self.metadata = metadata or {}
        super().__init__(self.message)


class JSONParseError(
    A2AError,
    code=-32700,
    reason="PARSE_ERROR",
    http_status=400,
    status="INVALID_ARGUMENT",
    message="Invalid JSON payload",
):
    """The request body is not JSON."""


class InvalidRequestError(
    A2AError,
    code=-32600,
    reason="INVALID_REQUEST",
    http_status=400,
    status="INVALID_ARGUMENT",
    message="Request payload validation error",
):
    """The request is JSON but not a request: not a JSON-RPC 2.0 object, a Content-Length
    that is not a number, a gRPC call naming no agent here."""


class PayloadTooLargeError(InvalidRequestError, http_status=413):
    """The request body is over ``A2A_MAX_BODY_BYTES``: -32600, answered with HTTP 413."""


class UnsupportedMediaTypeError(InvalidRequestError, http_status=415):
    """The request body is not JSON by its Content-Type: -32600, answered with HTTP 415."""


class MethodNotFoundError(
    A2AError,
    code=-32601,
    reason="METHOD_NOT_FOUND",
    http_status=404,
    status="NOT_FOUND",
    message="Method not found",
):
    """The JSON-RPC method is no A2A operation, or the HTTP method is not one its URL takes."""


class InvalidParamsError(
    A2AError,
    code=-32602,
    reason="INVALID_PARAMS",
    http_status=400,
    status="INVALID_ARGUMENT",
    message="Invalid parameters",
):
    """Bad parameters; ``field`` names the offending one (dotted path, e.g. ``message.parts``)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(f"Invalid params: {field}: {message}" if field else f"Invalid params: {message}")
        self.description = message


class InternalError(A2AError):
    """The server failed to answer (its log has the details): -32603, HTTP 500."""


class UnavailableError(InternalError, http_status=503, status="UNAVAILABLE"):
    """The task store cannot read (or write) now: an internal error (-32603) that says
    to try again; HTTP 503 on REST."""


class TaskNotFoundError(
    A2AError,
    code=-32001,
    reason="TASK_NOT_FOUND",
    http_status=404,
    status="NOT_FOUND",
    message="Task not found",
):
    """No task of that id (for this agent and caller)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"Task not found: {task_id}", metadata={"taskId": task_id})


class TaskNotCancelableError(
    A2AError,
    code=-32002,
    reason="TASK_NOT_CANCELABLE",
    http_status=400,
    status="FAILED_PRECONDITION",
    message="Task cannot be canceled",
):
    """CancelTask on a task that has already ended."""


class PushNotificationNotSupportedError(
    A2AError,
    code=-32003,
    reason="PUSH_NOTIFICATION_NOT_SUPPORTED",
    http_status=400,
    status="FAILED_PRECONDITION",
    message="Push notifications are not supported",
):
    """A push notification config for an agent whose card does not offer push notifications."""


class UnsupportedOperationError(
    A2AError,
    code=-32004,
    reason="UNSUPPORTED_OPERATION",
    http_status=400,
    status="FAILED_PRECONDITION",
    message="This operation is not supported",
):
    """An operation the agent does not offer (an extended card it has not), or not on
    this task now (subscribing to one that has ended)."""


class ContentTypeNotSupportedError(
    A2AError,
    code=-32005,
    reason="CONTENT_TYPE_NOT_SUPPORTED",
    http_status=400,
    status="INVALID_ARGUMENT",
    message="Incompatible content types",
):
    """The message's parts, or the output modes it accepts, are of media types the agent
    does not take or give."""


class InvalidAgentResponseError(
    A2AError,
    code=-32006,
    reason="INVALID_AGENT_RESPONSE",
    http_status=500,
    status="INTERNAL",
    message="Invalid agent response",
):
    """The agent's handler answered something that is no A2A result (not text, parts or JSON)."""


class ExtendedAgentCardNotConfiguredError(
    A2AError,
    code=-32007,
    reason="EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    http_status=400,
    status="FAILED_PRECONDITION",
    message="Extended agent card is not configured",
):
    """GetExtendedAgentCard from a caller the card's extended card is not served to."""


class ExtensionSupportRequiredError(
    A2AError,
    code=-32008,
    reason="EXTENSION_SUPPORT_REQUIRED",
    http_status=400,
    status="FAILED_PRECONDITION",
    message="Extension support required",
):
    """The agent requires an extension the client did not ask for (``A2A-Extensions``)."""


class VersionNotSupportedError(
    A2AError,
    code=-32009,
    reason="VERSION_NOT_SUPPORTED",
    http_status=400,
    status="FAILED_PRECONDITION",
    message="Protocol version not supported",
):
    """The request's ``A2A-Version`` is none the agent speaks."""


class TaskGenerationMismatchError(
    A2AError,
    code=-32010,
    reason="TASK_GENERATION_MISMATCH",
    http_status=409,
    status="ABORTED",
    message="Task generation mismatch",
):
    """A follow-up's ``ifGenerationMatch`` (A2A 1.1, spec 3.2.7) is not the task's generation."""

    def __init__(self, task_id: str, expected: int, current: int) -> None:
        super().__init__(
            f"Task generation mismatch: expected {expected} but current generation is {current}",
            metadata={"taskId": task_id, "expectedGeneration": expected, "currentGeneration": current},
        )


#: The errors of the specification (spec 5.4: JSON-RPC's and A2A's codes), each code once.
SPEC_ERRORS: tuple[type[A2AError], ...] = (
    JSONParseError,
    InvalidRequestError,
    MethodNotFoundError,
    InvalidParamsError,
    InternalError,
    TaskNotFoundError,
    TaskNotCancelableError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
    ContentTypeNotSupportedError,
    InvalidAgentResponseError,
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    VersionNotSupportedError,
    TaskGenerationMismatchError,
)
#: The spec's name of each error code (``TaskNotFoundError``...), as v0.3 HTTP+JSON
#: error bodies carry it in ``type``.
ERROR_NAMES: dict[int, str] = {cls.code: cls.__name__ for cls in SPEC_ERRORS}
