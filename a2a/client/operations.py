"""The client's operations, each written once: its signature, its docstring and the plan
that does it (:mod:`a2a.client.core`).

:class:`Operations` is the base of :class:`~a2a.client.Client` and
:class:`~a2a.client.AsyncClient`, which only run plans (``_call`` for a result,
``_steps`` for a stream), each its own way. A method here is a descriptor that runs its
plan on the client it is read from, and has that client's type: ``get_task(...)`` is a
Task on ``Client`` and an awaitable Task on ``AsyncClient``; ``stream(...)`` an iterator
on one and an async iterator on the other. ``help()`` and ``inspect.signature`` show
the operation's own signature.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Concatenate, Generic, ParamSpec, Unpack, overload

from a2a.client.bindings import Binding
from a2a.client.core import ClientCore, Outgoing, Plan, SendOptions, T
from a2a.protocol.model import Message, StreamItem, Task
from stores.base import TaskPage

if TYPE_CHECKING:
    from a2a.client.aio import AsyncClient
    from a2a.client.sync import Client

P = ParamSpec("P")


def _method(plan: Callable[..., Any], run: Callable[..., Any], returns: str) -> Callable[..., Any]:
    """``run`` as a method in ``plan``'s name, docstring and signature, returning ``returns``."""
    functools.update_wrapper(run, plan)
    run.__signature__ = inspect.signature(plan).replace(return_annotation=returns)  # type: ignore[attr-defined]
    return run


def _bind(
    methods: tuple[Callable[..., Any], Callable[..., Any]], client: Operations | None, owner: type[Operations]
) -> Any:
    """The client's method (its function, read from the class), as a plain method is."""
    method = methods[owner.awaits]
    return method if client is None else types.MethodType(method, client)


class Operation(Generic[P, T]):
    """An operation: its plan's result on a Client, awaited on an AsyncClient."""

    def __init__(self, plan: Callable[Concatenate[Any, P], Plan[T]]) -> None:
        result = str(plan.__annotations__["return"]).removeprefix("Plan[").removesuffix("]")

        def blocking(client: Any, /, *args: Any, **kwargs: Any) -> Any:
            return client._call(plan(client, *args, **kwargs))

        async def awaiting(client: Any, /, *args: Any, **kwargs: Any) -> Any:
            return await client._call(plan(client, *args, **kwargs))

        self.methods = (_method(plan, blocking, result), _method(plan, awaiting, result))

    @overload
    def __get__(
        self, client: None, owner: type[AsyncClient]
    ) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, client: None, owner: type[Client]) -> Callable[Concatenate[Client, P], T]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, client: Client, owner: type) -> Callable[P, T]: ...
    def __get__(self, client: Operations | None, owner: type[Operations]) -> Any:
        return _bind(self.methods, client, owner)


class Stream(Generic[P]):
    """A streaming operation: an iterator of its plan's items on a Client, an async
    iterator on an AsyncClient (closing it stops listening)."""

    def __init__(self, plan: Callable[Concatenate[Any, P], Plan[None]]) -> None:
        def iterating() -> Callable[..., Any]:
            def iterate(client: Any, /, *args: Any, **kwargs: Any) -> Any:
                return client._steps(plan(client, *args, **kwargs))

            return iterate

        self.methods = (
            _method(plan, iterating(), "Iterator[StreamItem]"),
            _method(plan, iterating(), "AsyncGenerator[StreamItem, None]"),
        )

    @overload
    def __get__(
        self, client: None, owner: type[AsyncClient]
    ) -> Callable[Concatenate[AsyncClient, P], AsyncGenerator[StreamItem, None]]: ...
    @overload
    def __get__(self, client: None, owner: type[Client]) -> Callable[Concatenate[Client, P], Iterator[StreamItem]]: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type) -> Callable[P, AsyncGenerator[StreamItem, None]]: ...
    @overload
    def __get__(self, client: Client, owner: type) -> Callable[P, Iterator[StreamItem]]: ...
    def __get__(self, client: Operations | None, owner: type[Operations]) -> Any:
        return _bind(self.methods, client, owner)


class Operations(ClientCore):
    """The operations of :class:`~a2a.client.Client` and :class:`~a2a.client.AsyncClient`
    (with ``await`` and ``async for`` on the latter)."""

    #: Whether the client awaits its plans (:class:`~a2a.client.AsyncClient`).
    awaits: ClassVar[bool] = False

    # --- the card and the wire -------------------------------------------------------------

    @Operation
    def fetch_card(self) -> Plan[dict[str, Any]]:
        """Fetch (again) the agent's card, check it, pick its interface; the card."""
        return self._fetch_card()

    @Operation
    def connect(self) -> Plan[Binding]:
        """The binding spoken, the card fetched first if need be."""
        return self._connect()

    # --- the operations --------------------------------------------------------------------

    @Operation
    def send(self, message: Outgoing, *, blocking: bool = True, **options: Unpack[SendOptions]) -> Plan[Task | Message]:
        """SendMessage: the task (settled, unless ``blocking=False``) or the agent's message.
        ``config``: ``history_length``, ``accepted_output_modes``, ``push_config``, ``metadata``."""
        return self._sending("send", message, options, blocking=blocking)

    @Stream
    def stream(self, message: Outgoing, **options: Unpack[SendOptions]) -> Plan[None]:
        """SendStreamingMessage: the task, then each status and artifact update, as
        :class:`~a2a.protocol.model.StreamItem` (``async for`` on the async client; close
        the iterator to stop listening)."""
        return self._sending("stream", message, options)

    @Operation
    def get_task(
        self, task_id: str, *, history_length: int | None = None, current_generation: int | None = None
    ) -> Plan[Task]:
        """GetTask; with ``current_generation`` (a 1.1 agent), a long-poll: the agent
        answers once the task is past that generation, or after its own timeout."""
        return self._run("get", task_id, history_length=history_length, current_generation=current_generation)

    @Operation
    def poll(self, task: Task, *, interval: float = 0.5) -> Plan[Task]:
        """``task`` as it is next: when the agent numbers its tasks (1.1), one long-poll
        GetTask past ``task``'s generation (the agent holds it until the task moves);
        otherwise GetTask after ``interval`` seconds."""
        return self._poll(task, interval)

    @Operation
    def list_tasks(self, **query: Any) -> Plan[TaskPage]:
        """ListTasks: ``context_id``, ``state``, ``page_size``, ``page_token``,
        ``history_length``, ``include_artifacts``, ``updated_after`` (ISO 8601)."""
        return self._run("list", **query)

    @Operation
    def cancel_task(self, task_id: str, *, metadata: dict[str, Any] | None = None) -> Plan[Task]:
        """CancelTask: the task as the agent has it after the request."""
        return self._run("cancel", task_id, metadata=metadata)

    @Stream
    def subscribe(self, task_id: str) -> Plan[None]:
        """SubscribeToTask: the task, then its updates until it ends."""
        return self._events("subscribe", task_id)

    @Operation
    def set_push_config(self, task_id: str, url: str, **config: Any) -> Plan[dict[str, Any]]:
        """CreateTaskPushNotificationConfig: ``id``, ``token``, ``authentication``
        (``{"schemes": [...], "credentials"?}``); the config as saved."""
        return self._run("push_set", task_id, {"url": url, **config})

    @Operation
    def get_push_config(self, task_id: str, config_id: str) -> Plan[dict[str, Any]]:
        """GetTaskPushNotificationConfig."""
        return self._run("push_get", task_id, config_id)

    @Operation
    def list_push_configs(self, task_id: str) -> Plan[list[dict[str, Any]]]:
        """ListTaskPushNotificationConfigs."""
        return self._run("push_list", task_id)

    @Operation
    def delete_push_config(self, task_id: str, config_id: str) -> Plan[None]:
        """DeleteTaskPushNotificationConfig."""
        yield from self._run("push_delete", task_id, config_id)

    @Operation
    def extended_card(self) -> Plan[dict[str, Any]]:
        """GetExtendedAgentCard (the agent's card for authenticated callers)."""
        return self._run("extended_card")
