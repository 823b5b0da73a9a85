"""A2A and JSON-RPC errors: one class each, named by the specification's reason; the
answers (code, HTTP and gRPC status, default message) in one table, :data:`ANSWERS`.

Operations raise these; each binding renders them in its own shape (see
``a2a.http``), so an error is defined once and means the same everywhere.
"""

from __future__ import annotations

from typing import Any

#: The specification's answer for each error, by its reason (spec 5.4 and the bindings'
#: tables): JSON-RPC code, HTTP status, gRPC status (``google.rpc.Code`` name, which
#: HTTP+JSON error bodies carry as ``error.status``: several share an HTTP status, not a
#: status), default message.
ANSWERS: dict[str, tuple[int, int, str, str]] = {
    "PARSE_ERROR": (-32700, 400, "INVALID_ARGUMENT", "Invalid JSON payload"),
    "INVALID_REQUEST": (-32600, 400, "INVALID_ARGUMENT", "Request payload validation error"),
    "METHOD_NOT_FOUND": (-32601, 404, "NOT_FOUND", "Method not found"),
    "INVALID_PARAMS": (-32602, 400, "INVALID_ARGUMENT", "Invalid parameters"),
    "INTERNAL": (-32603, 500, "INTERNAL", "Internal error"),
    "TASK_NOT_FOUND": (-32001, 404, "NOT_FOUND", "Task not found"),
    "TASK_NOT_CANCELABLE": (-32002, 400, "FAILED_PRECONDITION", "Task cannot be canceled"),
    "PUSH_NOTIFICATION_NOT_SUPPORTED": (-32003, 400, "FAILED_PRECONDITION", "Push notifications are not supported"),
    "UNSUPPORTED_OPERATION": (-32004, 400, "FAILED_PRECONDITION", "This operation is not supported"),
    "CONTENT_TYPE_NOT_SUPPORTED": (-32005, 400, "INVALID_ARGUMENT", "Incompatible content types"),
    "INVALID_AGENT_RESPONSE": (-32006, 500, "INTERNAL", "Invalid agent response"),
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED": (-32007, 400, "FAILED_PRECONDITION", "Extended agent card is not configured"),
    "EXTENSION_SUPPORT_REQUIRED": (-32008, 400, "FAILED_PRECONDITION", "Extension support required"),
    "VERSION_NOT_SUPPORTED": (-32009, 400, "FAILED_PRECONDITION", "Protocol version not supported"),
    "TASK_GENERATION_MISMATCH": (-32010, 409, "ABORTED", "Task generation mismatch"),
}


class A2AError(Exception):
    """Base of every error a client can be answered with.

    A subclass names its error by the specification's reason, and takes that error's
    answer from :data:`ANSWERS`; ``http_status`` and ``status`` keywords override them
    (one left out is its base's)::

        class TaskNotCancelableError(A2AError, reason="TASK_NOT_CANCELABLE"):
            \"\"\"CancelTask on a task that has ended.\"\"\"
    """

    code: int = -32603
    reason: str = "INTERNAL"
    http_status: int = 500
    status: str = "INTERNAL"
    default_message: str = "Internal error"

    def __init_subclass__(
        cls, *, reason: str | None = None, http_status: int | None = None, status: str | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if reason is not None:
            cls.reason = reason
            cls.code, cls.http_status, cls.status, cls.default_message = ANSWERS[reason]
        cls.http_status = cls.http_status if http_status is None else http_status
        cls.status = cls.status if status is None else status

    def __init__(self, message: str | None = None, *, metadata: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        self.metadata = metadata or {}
        super().__init__(self.message)


class JSONParseError(A2AError, reason="PARSE_ERROR"):
    """The request body is not JSON."""


class InvalidRequestError(A2AError, reason="INVALID_REQUEST"):
    """The request is JSON but not a request: not a JSON-RPC 2.0 object, a Content-Length
    that is not a number, a gRPC call naming no agent here."""


class PayloadTooLargeError(InvalidRequestError, http_status=413):
    """The request body is over ``A2A_MAX_BODY_BYTES``: -32600, answered with HTTP 413."""


class UnsupportedMediaTypeError(InvalidRequestError, http_status=415):
    """The request body is not JSON by its Content-Type: -32600, answered with HTTP 415."""


class MethodNotFoundError(A2AError, reason="METHOD_NOT_FOUND"):
    """The JSON-RPC method is no A2A operation, or the HTTP method is not one its URL takes."""


class InvalidParamsError(A2AError, reason="INVALID_PARAMS"):
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


class TaskNotFoundError(A2AError, reason="TASK_NOT_FOUND"):
    """No task of that id (for this agent and caller)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"Task not found: {task_id}", metadata={"taskId": task_id})


class TaskNotCancelableError(A2AError, reason="TASK_NOT_CANCELABLE"):
    """CancelTask on a task that has already ended."""


class PushNotificationNotSupportedError(A2AError, reason="PUSH_NOTIFICATION_NOT_SUPPORTED"):
    """A push notification config for an agent whose card does not offer push notifications."""


class UnsupportedOperationError(A2AError, reason="UNSUPPORTED_OPERATION"):
    """An operation the agent does not offer (an extended card it has not), or not on
    this task now (subscribing to one that has ended)."""


class ContentTypeNotSupportedError(A2AError, reason="CONTENT_TYPE_NOT_SUPPORTED"):
    """The message's parts, or the output modes it accepts, are of media types the agent
    does not take or give."""


class InvalidAgentResponseError(A2AError, reason="INVALID_AGENT_RESPONSE"):
    """The agent's handler answered something that is no A2A result (not text, parts or JSON)."""


class ExtendedAgentCardNotConfiguredError(A2AError, reason="EXTENDED_AGENT_CARD_NOT_CONFIGURED"):
    """GetExtendedAgentCard from a caller the card's extended card is not served to."""


class ExtensionSupportRequiredError(A2AError, reason="EXTENSION_SUPPORT_REQUIRED"):
    """The agent requires an extension the client did not ask for (``A2A-Extensions``)."""


class VersionNotSupportedError(A2AError, reason="VERSION_NOT_SUPPORTED"):
    """The request's ``A2A-Version`` is none the agent speaks."""


class TaskGenerationMismatchError(A2AError, reason="TASK_GENERATION_MISMATCH"):
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
