"""The call context: who calls, and how, handed by the binding to every operation.

A binding (JSON-RPC, HTTP+JSON) builds one per request once it knows the caller and
the protocol version, and passes it explicitly: operations read the caller from it
(ownership), never from ambient state.
"""

from __future__ import annotations

from dataclasses import dataclass

from stores.base import Task, task_owner


@dataclass(frozen=True)
class CallContext:
    """One request's caller and protocol.

    ``caller``: the authenticated principal, ``""`` on an agent without
    authentication. ``version``: ``"1.0"`` or ``"0.3"``. ``binding``: ``"jsonrpc"``,
    ``"rest"``, ``"grpc"``, ``"browser"`` (the browsable agent page) or ``"internal"``
    (calls from this process's own code). ``origin``: the public base URL the request
    reached (``A2A_PUBLIC_URL`` or scheme and host), for the URLs the extended card
    names. ``extensions``: the A2A extensions the client asked for (``A2A-Extensions``).
    """

    caller: str = ""
    version: str = "1.0"
    binding: str = "internal"
    origin: str = ""
    extensions: tuple[str, ...] = ()

    def owns(self, task: Task) -> bool:
        """Whether this caller may see ``task`` (another caller's task answers like an unknown one)."""
        return task_owner(task) == self.caller


#: The context of calls made by this process's own code (management commands,
#: benchmarks, tests): no caller, so only unowned tasks are visible.
INTERNAL = CallContext()
