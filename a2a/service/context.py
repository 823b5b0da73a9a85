"""The call context: who calls, and how, handed by the binding to every operation.

A binding (JSON-RPC, HTTP+JSON, gRPC) builds one per request once it knows the caller and
the protocol version, and passes it explicitly: operations read the caller from it
(ownership), never from ambient state; :func:`load_task` reads a task as the caller
may see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from a2a.agents import DEFAULT_AGENT, Agent, get_agent, store_of
from a2a.core import tracing
from a2a.protocol.errors import InvalidParamsError, TaskNotFoundError
from a2a.protocol.model import shown
from stores.base import Task, TaskStore
from stores.scope import SCOPE_SEPARATOR, scope_key, task_scope

#: The longest tenant taken (the stores keep the tenant and the caller in 255 characters).
MAX_TENANT_LENGTH = 128


@dataclass(frozen=True)
class CallContext:
    """One request's caller and protocol.

    ``caller``: the authenticated principal, ``""`` on an agent without
    authentication. ``version``: ``"1.0"``, ``"1.1"`` or ``"0.3"``. ``binding``: ``"jsonrpc"``,
    ``"rest"``, ``"grpc"``, ``"browser"`` (the browsable agent page) or ``"internal"``
    (calls from this process's own code). ``origin``: the public base URL the request
    reached (``A2A_PUBLIC_URL`` or scheme and host), for the URLs the extended card
    names. ``extensions``: the A2A extensions the client asked for (``A2A-Extensions``).
    ``tenant``: the request's tenant (v1.0 ``tenant`` field, or the ``/{tenant}/`` of an
    HTTP+JSON path; ``""`` for none): with the caller, it scopes every task the request
    can see. ``method``: the operation as the client named it (``SendMessage``,
    ``message/send``, ``GET tasks/{task_id}``), for tracing. ``trace``: the OpenTelemetry
    context of an incoming ``traceparent`` (None when tracing is off or there was none).
    ``credentials``: the caller's own credential headers, kept only when a remote agent's
    settings say ``FORWARD_CALLER_CREDENTIALS`` (:mod:`a2a.handlers.delegation`), for the
    task's delegations; never saved.
    ``agent_name``: which of the project's agents the request reached (its route, or
    gRPC's ``a2a-agent`` metadata); :attr:`agent` is that agent, whose settings, handler
    and tasks the operations use. ``last_event_id``: the SSE ``Last-Event-ID`` header (or
    gRPC ``last-event-id`` metadata) of a reconnecting stream (:mod:`a2a.core.replay`).
    """

    caller: str = ""
    version: str = "1.0"
    binding: str = "internal"
    origin: str = ""
    extensions: tuple[str, ...] = ()
    tenant: str = ""
    method: str = ""
    trace: Any = None
    credentials: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    agent_name: str = DEFAULT_AGENT
    #: The request's ``Last-Event-ID`` (gRPC: ``last-event-id`` metadata), as sent.
    last_event_id: str = ""

    @property
    def agent(self) -> Agent:
        """The agent this call is for (the default agent unless the route named another)."""
        return get_agent(self.agent_name)

    @property
    def store(self) -> TaskStore:
        """Where this call's agent keeps its tasks (:attr:`Agent.store`; the project's
        store for the default agent, found without looking the agent up)."""
        return store_of(self.agent_name)

    @property
    def scope(self) -> str:
        """The stores' scope key of this caller in this tenant of this agent (``TaskQuery.owner``)."""
        return scope_key(self.tenant, self.caller, "" if self.agent_name == DEFAULT_AGENT else self.agent_name)

    def owns(self, task: Task) -> bool:
        """Whether this caller may see ``task``: its own, in this request's tenant and agent
        (another caller's task, or one of another tenant or agent, answers like an unknown one)."""
        return task_scope(task) == self.scope


def check_tenant(value: Any, field: str = "tenant") -> str:
    """A request's tenant, checked: a string of at most :data:`MAX_TENANT_LENGTH`
    characters without control characters ("" or None: no tenant); else InvalidParamsError."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise InvalidParamsError("must be a string", field=field)
    if len(value) > MAX_TENANT_LENGTH or SCOPE_SEPARATOR in value or not value.isprintable():
        raise InvalidParamsError(
            f"{shown(value, 40)} is not a tenant (at most {MAX_TENANT_LENGTH} printable characters)", field=field
        )
    return value


#: The context of calls made by this process's own code (management commands,
#: benchmarks, tests): no caller, so only unowned tasks are visible.
INTERNAL = CallContext()


async def load_task(task_id: str, ctx: CallContext = INTERNAL) -> Task:
    """The task as stored, if the caller may see it; else TaskNotFoundError (another
    caller's task, or one of another tenant or agent, answers exactly like an unknown one)."""
    with tracing.store("get", task_id):
        task = await ctx.store.aget(task_id)
    if task is None or not ctx.owns(task):
        raise TaskNotFoundError(task_id)
    tracing.annotate(task)
    return task
