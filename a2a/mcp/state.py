"""What the endpoint hands a client to bring back: the ``requestState`` of a question and
a 2025-11-25 session id, both signed (``django.core.signing``, the project's
``SECRET_KEY``) and bound to the caller and the agent, so a client can neither forge one
nor use another caller's: nothing is kept on the server, so they hold across processes
and restarts (the A2A task they name is durable in its store). The one thing kept is a
session's end (``DELETE``): a row of ``stores.models.EndedMcpSession`` in the project's
database, which every process reads, until the session would have expired anyway."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from asgiref.sync import sync_to_async
from django.core import signing
from django.utils import timezone

from a2a.conf import a2a_settings
from a2a.mcp.wire import invalid_params

_STATE_SALT = "a2a.mcp.requestState"
_SESSION_SALT = "a2a.mcp.session"
_ELICIT_SALT = "a2a.mcp.elicitation"


def _sign(payload: dict[str, Any], salt: str) -> str:
    return signing.dumps(payload, salt=salt, compress=True)


def _read(token: Any, salt: str) -> dict[str, Any] | None:
    if not isinstance(token, str) or len(token) > 4096:
        return None
    try:
        found = signing.loads(token, salt=salt, max_age=a2a_settings.MCP_STATE_MAX_AGE)
    except signing.BadSignature:  # (SignatureExpired is one)
        return None
    return found if isinstance(found, dict) else None


def request_state(task_id: str, turn: int, caller: str, agent: str, tool: str) -> str:
    """The ``requestState`` of a question: the task, its turn, whose call, which tool."""
    return _sign({"t": task_id, "n": turn, "c": caller, "a": agent, "tool": tool}, _STATE_SALT)


def read_request_state(token: Any, caller: str, agent: str, tool: str) -> tuple[str, int]:
    """The task and turn a ``requestState`` names; -32602 for one this server did not
    sign, an expired one, or one of another caller, agent or tool."""
    found = _read(token, _STATE_SALT)
    if found is None or (found.get("c"), found.get("a"), found.get("tool")) != (caller, agent, tool):
        raise invalid_params("requestState is not valid for this request")
    return str(found["t"]), int(found["n"])


def elicitation_id(task_id: str, turn: int, caller: str, agent: str) -> str:
    """The id of a server-initiated ``elicitation/create`` (2025-11-25): the client's
    response comes back with it, to any process, and continues the task it names."""
    return "a2a-elicit:" + _sign({"t": task_id, "n": turn, "c": caller, "a": agent}, _ELICIT_SALT)


def read_elicitation_id(value: Any, caller: str, agent: str) -> tuple[str, int] | None:
    """The task and turn an elicitation's id names (None: not one of ours for this caller)."""
    if not isinstance(value, str) or not value.startswith("a2a-elicit:"):
        return None
    found = _read(value[len("a2a-elicit:") :], _ELICIT_SALT)
    if found is None or (found.get("c"), found.get("a")) != (caller, agent):
        return None
    return str(found["t"]), int(found["n"])


def session_id(caller: str, agent: str, capabilities: dict[str, Any]) -> str:
    """A new 2025-11-25 session: the client's capabilities, for this caller and agent. A
    random nonce makes each one its own: two clients of one caller initializing in the
    same second must not share an id (one's DELETE would end the other's session)."""
    return _sign({"c": caller, "a": agent, "caps": capabilities, "n": secrets.token_urlsafe(9)}, _SESSION_SALT)


def read_session(value: str, caller: str, agent: str) -> dict[str, Any] | None:
    """The capabilities of the session ``value`` names (None: unknown, expired, another's)."""
    found = _read(value, _SESSION_SALT)
    if found is None or (found.get("c"), found.get("a")) != (caller, agent):
        return None
    caps = found.get("caps")
    return caps if isinstance(caps, dict) else {}


def _ended_key(session: str) -> str:
    return hashlib.sha256(session.encode()).hexdigest()


def _end_session(session: str) -> None:
    from stores.models import EndedMcpSession

    now = timezone.now()
    EndedMcpSession.objects.filter(expires__lt=now).delete()  # ends no longer needed: the ids expired
    expires = now + dt.timedelta(seconds=a2a_settings.MCP_STATE_MAX_AGE)
    EndedMcpSession.objects.update_or_create(key=_ended_key(session), defaults={"expires": expires})


def _session_ended(session: str) -> bool:
    from stores.models import EndedMcpSession

    return EndedMcpSession.objects.filter(key=_ended_key(session)).exists()


#: Record the end of a 2025-11-25 session (its client's ``DELETE``), for every process.
end_session = sync_to_async(_end_session, thread_sensitive=False)
#: Whether a 2025-11-25 session was ended (by any process).
session_ended = sync_to_async(_session_ended, thread_sensitive=False)
