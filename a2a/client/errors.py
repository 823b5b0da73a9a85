"""What the client raises: one base, :class:`ClientError`, and a class per way a call fails.

An error the remote agent answered with (a JSON-RPC error object, an HTTP+JSON
``google.rpc.Status``) is a :class:`RemoteAgentError` carrying the A2A error ``code``
and ``message``; the codes of the specification (spec 5.4) have their own subclass
(``except TaskNotFound``), named as the specification names them without ``Error``.
"""

from __future__ import annotations

from typing import Any

from a2a.protocol import errors as protocol_errors


class ClientError(Exception):
    """Base of every error the A2A client raises."""


class AgentUnavailableError(ClientError):
    """The agent could not be reached (connection refused, DNS, a 5xx that outlasted the
    retries), or it answered something that is not A2A (HTTP status ``status``)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AgentTimeoutError(AgentUnavailableError):
    """The agent did not answer within the client's timeout."""


class AuthenticationError(ClientError):
    """The agent refused the credentials (HTTP 401 or 403, after a fresh OAuth2 token),
    or the token endpoint refused the client."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class CardError(ClientError):
    """The Agent Card cannot be fetched or read, or names no interface this client speaks."""


class CardNotFoundError(CardError):
    """No Agent Card where the client looked (HTTP 404 at each location)."""


class CardSignatureError(CardError):
    """Signatures are required and the card has none, or none verifies with the keys given."""


class InvalidResponseError(ClientError):
    """The agent's answer is not a valid A2A response for the operation."""


class RemoteAgentError(ClientError):
    """The agent answered with an A2A error: ``code`` (``-32001``...), ``message`` and
    ``data`` as it sent them, ``http_status`` (200 on JSON-RPC).

    A subclass stands for one error of the specification, named with ``spec=`` (the
    protocol's class, whose code it takes)."""

    code: int = -32603

    def __init_subclass__(cls, *, spec: type[protocol_errors.A2AError] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if spec is not None:
            cls.code = spec.code

    def __init__(
        self, message: str, *, code: int | None = None, data: Any = None, http_status: int = 200, where: str = ""
    ) -> None:
        self.code = self.code if code is None else code
        self.message = message
        self.data = data
        self.http_status = http_status
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}the agent answered error {self.code}: {message}")

    @property
    def reason(self) -> str:
        """The error's reason (``TASK_NOT_FOUND``...), as the protocol names the code."""
        cls = _PROTOCOL_CLASSES.get(self.code)
        return cls.reason if cls else "UNKNOWN"


# The specification's codes (spec 5.4), each named as a2a.protocol.errors names it without ``Error``.


class TaskNotFound(RemoteAgentError, spec=protocol_errors.TaskNotFoundError):
    """The agent has no task of that id (or none this client may see)."""


class TaskNotCancelable(RemoteAgentError, spec=protocol_errors.TaskNotCancelableError):
    """CancelTask on a task that has already ended."""


class PushNotificationNotSupported(RemoteAgentError, spec=protocol_errors.PushNotificationNotSupportedError):
    """A push notification config sent to an agent that does not offer push notifications."""


class UnsupportedOperation(RemoteAgentError, spec=protocol_errors.UnsupportedOperationError):
    """An operation the agent does not offer, or not on that task now (subscribing to
    one that has ended)."""


class ContentTypeNotSupported(RemoteAgentError, spec=protocol_errors.ContentTypeNotSupportedError):
    """The message's parts, or the output modes it accepts, are of media types the agent
    does not take or give."""


class InvalidAgentResponse(RemoteAgentError, spec=protocol_errors.InvalidAgentResponseError):
    """The agent says its own handler answered something that is not A2A."""


class ExtendedAgentCardNotConfigured(RemoteAgentError, spec=protocol_errors.ExtendedAgentCardNotConfiguredError):
    """GetExtendedAgentCard: the agent serves no extended card to this client."""


class ExtensionSupportRequired(RemoteAgentError, spec=protocol_errors.ExtensionSupportRequiredError):
    """The agent requires an A2A extension the client did not ask for."""


class VersionNotSupported(RemoteAgentError, spec=protocol_errors.VersionNotSupportedError):
    """The agent does not speak the A2A version the client asked for."""


class TaskGenerationMismatch(RemoteAgentError, spec=protocol_errors.TaskGenerationMismatchError):
    """A follow-up's ``if_generation_match`` was not the task's generation (A2A 1.1):
    read the task again before deciding to send it again."""


class InvalidParams(RemoteAgentError, spec=protocol_errors.InvalidParamsError):
    """The agent refused the request's parameters (its message names the field)."""


class MethodNotFound(RemoteAgentError, spec=protocol_errors.MethodNotFoundError):
    """The agent does not know the operation's method (its A2A version has it not)."""


_PROTOCOL_CLASSES: dict[int, type[protocol_errors.A2AError]] = {cls.code: cls for cls in protocol_errors.SPEC_ERRORS}
#: The A2A code of each error reason (``TASK_NOT_FOUND``) and name (``TaskNotFoundError``),
#: as HTTP+JSON error bodies carry them.
CODE_OF: dict[str, int] = {
    **{cls.reason: code for code, cls in _PROTOCOL_CLASSES.items()},
    **{name: code for code, name in protocol_errors.ERROR_NAMES.items()},
}
_SUBCLASSES: dict[int, type[RemoteAgentError]] = {cls.code: cls for cls in RemoteAgentError.__subclasses__()}


def remote_error(
    code: int, message: str, *, data: Any = None, http_status: int = 200, where: str = ""
) -> RemoteAgentError:
    """The :class:`RemoteAgentError` (subclass) for an A2A error ``code``."""
    cls = _SUBCLASSES.get(code, RemoteAgentError)
    return cls(message, code=code, data=data, http_status=http_status, where=where)
