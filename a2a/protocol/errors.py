"""A2A and JSON-RPC errors: one class each, with its code, reason and HTTP status.

Operations raise these; each binding renders them in its own shape (see
``a2a.http``), so an error is defined once and means the same everywhere.
"""

from __future__ import annotations

from typing import Any


class A2AError(Exception):
    """Base of every error a client can be answered with."""

    code: int = -32603
    reason: str = "INTERNAL"
    http_status: int = 500
    #: The gRPC status (``google.rpc.Code`` name) of spec 5.4, which HTTP+JSON error
    #: bodies carry as ``error.status``: several share an HTTP status, not a status.
    status: str = "INTERNAL"
    default_message: str = "Internal error"

    def __init__(self, message: str | None = None, *, metadata: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        self.metadata = metadata or {}
        super().__init__(self.message)


class JSONParseError(A2AError):
    code, reason, http_status, default_message = -32700, "PARSE_ERROR", 400, "Invalid JSON payload"
    status = "INVALID_ARGUMENT"


class InvalidRequestError(A2AError):
    code, reason, http_status, default_message = -32600, "INVALID_REQUEST", 400, "Request payload validation error"
    status = "INVALID_ARGUMENT"


class PayloadTooLargeError(InvalidRequestError):
    """The request body is over ``A2A_MAX_BODY_BYTES``: -32600, answered with HTTP 413."""

    http_status = 413


class UnsupportedMediaTypeError(InvalidRequestError):
    """The request body is not JSON by its Content-Type: -32600, answered with HTTP 415."""

    http_status = 415


class MethodNotFoundError(A2AError):
    code, reason, http_status, default_message = -32601, "METHOD_NOT_FOUND", 404, "Method not found"
    status = "NOT_FOUND"


class InvalidParamsError(A2AError):
    """Bad parameters; ``field`` names the offending one (dotted path, e.g. ``message.parts``)."""

    code, reason, http_status, default_message = -32602, "INVALID_PARAMS", 400, "Invalid parameters"
    status = "INVALID_ARGUMENT"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(f"Invalid params: {field}: {message}" if field else f"Invalid params: {message}")
        self.description = message


class InternalError(A2AError):
    pass


class UnavailableError(InternalError):
    """The task store cannot read (or write) now: an internal error (-32603) that says
    to try again; HTTP 503 on REST."""

    http_status = 503
    status = "UNAVAILABLE"


class TaskNotFoundError(A2AError):
    code, reason, http_status, default_message = -32001, "TASK_NOT_FOUND", 404, "Task not found"
    status = "NOT_FOUND"

    def __init__(self, task_id: str) -> None:
        super().__init__(f"Task not found: {task_id}", metadata={"taskId": task_id})


class TaskNotCancelableError(A2AError):
    code, reason, http_status, default_message = -32002, "TASK_NOT_CANCELABLE", 400, "Task cannot be canceled"
    status = "FAILED_PRECONDITION"


class PushNotificationNotSupportedError(A2AError):
    code, reason, http_status = -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", 400
    default_message = "Push notifications are not supported"
    status = "FAILED_PRECONDITION"


class UnsupportedOperationError(A2AError):
    code, reason, http_status, default_message = -32004, "UNSUPPORTED_OPERATION", 400, "This operation is not supported"
    status = "FAILED_PRECONDITION"


class ContentTypeNotSupportedError(A2AError):
    code, reason, http_status, default_message = -32005, "CONTENT_TYPE_NOT_SUPPORTED", 400, "Incompatible content types"
    status = "INVALID_ARGUMENT"


class InvalidAgentResponseError(A2AError):
    code, reason, http_status, default_message = -32006, "INVALID_AGENT_RESPONSE", 500, "Invalid agent response"


class ExtendedAgentCardNotConfiguredError(A2AError):
    code, reason, http_status = -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400
    default_message = "Extended agent card is not configured"
    status = "FAILED_PRECONDITION"


class ExtensionSupportRequiredError(A2AError):
    code, reason, http_status, default_message = -32008, "EXTENSION_SUPPORT_REQUIRED", 400, "Extension support required"
    status = "FAILED_PRECONDITION"


class VersionNotSupportedError(A2AError):
    code, reason, http_status, default_message = -32009, "VERSION_NOT_SUPPORTED", 400, "Protocol version not supported"
    status = "FAILED_PRECONDITION"


class TaskGenerationMismatchError(A2AError):
    """A follow-up's ``ifGenerationMatch`` (A2A 1.1, spec 3.2.7) is not the task's generation."""

    code, reason, http_status = -32010, "TASK_GENERATION_MISMATCH", 409
    default_message = "Task generation mismatch"
    status = "ABORTED"

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
