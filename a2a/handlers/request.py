"""What a handler is given: :class:`HandlerRequest`, with one call for every state an
agent may set, artifacts, the conversation so far, and its cancellation."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

from a2a.agents import DEFAULT_AGENT, Agent, get_agent
from a2a.core import lifecycle
from a2a.core.events import TaskEvent, with_chunk
from a2a.handlers import delegation
from a2a.handlers.creation import DeferredCreation
from a2a.handlers.credentials import take_credentials as held_credentials
from a2a.handlers.results import Content, as_parts, plain_json, to_artifacts
from a2a.protocol.model import (
    Artifact,
    Message,
    Part,
    Task,
    agent_message,
    message_text,
    new_id,
    set_status,
)
from stores.base import MAX_PAGE_SIZE, TaskQuery, TaskStore
from stores.fields import DELEGATIONS, task_call, task_updated
from stores.scope import scope_key, task_agent, task_owner, task_tenant

logger = logging.getLogger(__name__)
S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


class Cancellation(threading.Event):
    """``request.cancelled``: set when the task is canceled (by the client, or because
    another process took it over). False until then, so ``if request.cancelled:``
    reads as it should; ``is_set()`` and ``wait(timeout)`` work as on any
    ``threading.Event``, and ``await wait_async(timeout)`` waits without a thread."""

    def __init__(self) -> None:
        super().__init__()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._waiters_lock = threading.Lock()

    def __bool__(self) -> bool:
        return self.is_set()

    def set(self) -> None:
        super().set()
        with self._waiters_lock:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            loop.call_soon_threadsafe(_resolve, future)

    async def wait_async(self, timeout: float | None = None) -> bool:
        """Wait until canceled (True) or ``timeout`` seconds pass (False)."""
        if self.is_set():
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._waiters_lock:
            self._waiters.append((loop, future))
        if self.is_set():  # set between the first look and the registration
            _resolve(future)
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            pass
        finally:
            with self._waiters_lock:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))
        return self.is_set()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _for_async(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async handlers' ``a``-method of ``method``, which blocks on the store: the
    request's ``method`` (as its class has it) run on a thread."""

    @functools.wraps(method)
    async def on_a_thread(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        blocking: Callable[P, R] = getattr(self, method.__name__)
        return await asyncio.to_thread(blocking, *args, **kwargs)

    on_a_thread.__name__ = f"a{method.__name__}"
    on_a_thread.__qualname__ = method.__qualname__.replace(method.__name__, on_a_thread.__name__)
    on_a_thread.__doc__ = f":meth:`{method.__name__}` for async handlers."
    return on_a_thread


@dataclass
class HandlerRequest:
    """What a handler gets: the message to answer, the task it belongs to, and how
    the client called (from the call's context, kept on the task so a queue worker
    knows it too)."""

    message: Message
    task_id: str
    context_id: str
    history: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    cancelled: Cancellation = field(default_factory=Cancellation)
    store: TaskStore | None = field(default=None, repr=False)
    #: Who the task belongs to ("" without authentication): the context is theirs.
    owner: str = ""
    #: The tenant the task was created under ("" for none): the context is the owner's in it.
    tenant: str = ""
    #: The protocol version the client spoke: "1.0", "1.1" or "0.3".
    version: str = "1.0"
    #: How it called: "jsonrpc", "rest", "grpc", "browser" (the browsable agent page), or
    #: "internal" (this process's own code).
    binding: str = "internal"
    #: The A2A extensions the client asked for (the ``A2A-Extensions`` header).
    extensions: tuple[str, ...] = ()
    #: 1 for the message that created the task, 2 for the next one (after
    #: ``input-required``), and so on.
    turn: int = 1
    #: The caller's own credential headers, for delegations to remote agents whose settings
    #: say ``FORWARD_CALLER_CREDENTIALS`` (empty unless one does; never saved with the task).
    credentials: dict[str, str] = field(default_factory=dict, repr=False)
    #: The name of the agent the task belongs to (:attr:`agent` is that agent).
    agent_name: str = DEFAULT_AGENT
    #: This first message named no ``contextId``: the server gave the task a new context,
    #: in which nothing came before it (:meth:`context_tasks` reads nothing).
    new_context: bool = False
    _creation: DeferredCreation | None = field(default=None, init=False, repr=False)
    _settled: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.cancelled, Cancellation):  # a plain threading.Event: mirrored
            self.cancelled = _Mirror(self.cancelled)

    # --- who calls, and how -------------------------------------------------------

    @property
    def caller(self) -> str:
        """The authenticated caller ("" without authentication): the task's owner."""
        return self.owner

    @property
    def agent(self) -> Agent:
        """The agent the task belongs to: ``request.agent.settings.SKILLS`` and the like
        are its own settings (``request.agent.name`` is "default" for the project's)."""
        return get_agent(self.agent_name)

    @property
    def is_continuation(self) -> bool:
        """Whether this message continues a task (the client answered ``input-required``
        or ``auth-required``), rather than starting it."""
        return self.turn > 1

    @property
    def text(self) -> str:
        """The message's text parts, joined by newlines."""
        return message_text(self.message)

    @property
    def parts(self) -> list[Part]:
        return list(self.message.get("parts", ()))

    @property
    def settled(self) -> str | None:
        """The state the handler settled the task in with a call (``complete()``...), or None."""
        return self._settled

    # --- cancellation -------------------------------------------------------------

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block until the task is canceled (True) or ``timeout`` seconds pass (False)."""
        return self.cancelled.wait(timeout)

    async def acancelled(self, timeout: float | None = None) -> bool:
        """:meth:`wait_cancelled` for async handlers (no thread is held)."""
        return await self.cancelled.wait_async(timeout)

    # --- states: each saved at once; streams, pollers and push subscribers see it ----

    def progress(self, message: Content | None = None) -> bool:
        """A ``working`` status update, with ``message`` (text or parts) or without."""
        return self._status("working", message)

    def input_required(self, message: Content | None = None) -> bool:
        """Ask the client for input: the task waits in ``input-required``; the
        client's next message with this ``taskId`` calls the handler again
        (``request.is_continuation``). Return from the handler after it."""
        return self._settle("input-required", message, in_history=True)

    def auth_required(self, message: Content | None = None) -> bool:
        """Like :meth:`input_required`, in ``auth-required``."""
        return self._settle("auth-required", message, in_history=True)

    def complete(self, message: Content | None = None, *, artifacts: Any = None) -> bool:
        """Complete the task: ``artifacts`` (anything a handler may return) added,
        ``message`` as the status message (and in the history)."""
        return self._settle("completed", message, in_history=True, artifacts=to_artifacts(artifacts))

    def fail(self, message: Content | None = None) -> bool:
        """Fail the task with ``message`` as the status message (as ``raise TaskFailed``)."""
        return self._settle("failed", message)

    def reject(self, message: Content | None = None) -> bool:
        """Reject the task: the agent will not do it (``rejected``)."""
        return self._settle("rejected", message)

    def cancel(self, message: Content | None = None) -> bool:
        """Cancel the task from the agent's side, e.g. to acknowledge
        ``request.cancelled`` with a message. After a client's CancelTask the task is
        already ``canceled`` (a terminal state is final): this returns False."""
        return self._settle("canceled", message)

    aprogress = _for_async(progress)
    ainput_required = _for_async(input_required)
    aauth_required = _for_async(auth_required)
    acomplete = _for_async(complete)
    afail = _for_async(fail)
    areject = _for_async(reject)
    acancel = _for_async(cancel)

    def _status(self, state: str, message: Content | None) -> bool:
        parts = as_parts(message) if message is not None else None

        def change(task: Task) -> Task | None:
            if lifecycle.is_terminal(task):
                return None
            return set_status(task, state, agent_message(parts, task=task) if parts else None)

        return self.update(change) is not None

    def _settle(self, state: str, message: Content | None, *, in_history: bool = False, artifacts: Any = None) -> bool:
        parts = as_parts(message) if message is not None else None
        saved = self.update(lifecycle.settle(state, artifacts=artifacts, parts=parts, in_history=in_history))
        self._settled = state
        return saved is not None

    # --- for code that builds on the request (delegation): the task itself -----------

    def update(self, change: lifecycle.Change, event: lifecycle.EventFor | None = None) -> Task | None:
        """Save ``change`` (a function of the task that returns it changed, or None to
        leave it) to the task, publishing ``event`` for it (a status update without);
        the task saved, or None when not saved. Ignored after the handler settled the
        task. When the handler answers directly and this is its first task-visible act,
        the act creates the task (:mod:`a2a.handlers.creation`)."""
        if self._settled is not None:
            logger.warning(
                "task %s: the handler already set %s; a later update is ignored", self.task_id, self._settled
            )
            return None
        created = self.create(change)
        if created is not None:
            return created
        return lifecycle.transition_sync(self._store(), self.task_id, change, event)

    # --- artifacts ------------------------------------------------------------------

    def artifact(
        self,
        parts: list[Part] | str,
        *,
        artifact_id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        append: bool = False,
        last_chunk: bool = False,
    ) -> str:
        """Add an artifact now, or with ``append=True`` add ``parts`` to the artifact
        ``artifact_id``; returns the artifact's id."""
        chunk: Artifact = {"artifactId": artifact_id or new_id(), "parts": as_parts(parts)}
        if name:
            chunk["name"] = name
        if description:
            chunk["description"] = description
        chunk = plain_json([chunk])[0]

        def change(task: Task) -> Task | None:
            if lifecycle.is_terminal(task):
                return None
            task["artifacts"] = with_chunk(task.get("artifacts"), chunk, append)  # as subscribers rebuild it
            return task

        def event(task: Task) -> TaskEvent:
            return TaskEvent(task, kind="artifact", artifact=chunk, append=append, last_chunk=last_chunk)

        self.update(change, event)
        return chunk["artifactId"]

    aartifact = _for_async(artifact)

    # --- delegation: a task on a remote agent, brought into this one -----------------

    def delegate(self, agent: str, message: str | list[Part] | Message, **options: Any) -> Task:
        """Run ``message`` as a task on the remote agent ``agent`` (a name in
        ``A2A_REMOTE_AGENTS``) and bring it into this task: its status messages as
        progress, its artifacts as this task's, its ``input-required`` /
        ``auth-required`` as this task's (raised: the client's answer goes on to the
        remote task on the next turn), a cancel both ways. Returns the remote task as it
        ended; :class:`~a2a.handlers.DelegationFailed` when it failed, was rejected, or
        could not be run. ``options``: :class:`a2a.handlers.delegation.Options`
        (``timeout``, ``stream``, ``poll_interval``, ``surface``, ``resume``,
        ``progress``, ``artifacts``, ``context_id``, ``metadata``)."""
        return delegation.delegate(self, agent, message, delegation.Options.of(options))

    async def adelegate(self, agent: str, message: str | list[Part] | Message, **options: Any) -> Task:
        """:meth:`delegate` for async handlers: on the event loop, no thread held while
        the remote agent works; a cancelled handler cancels the remote task."""
        return await delegation.adelegate(self, agent, message, delegation.Options.of(options))

    def current_task(self) -> Task | None:
        """The task as stored now (None while a direct reply's task is not created yet)."""
        return self._store().get(self.task_id)

    def record_delegation(self, record: dict[str, Any]) -> None:
        """Keep ``record`` (a remote task this task delegated to: see
        :data:`a2a.handlers.delegation.METADATA_KEY`) in the task's metadata, in place of
        the record of the same remote task. Saved in any state, a terminal one included
        (after a local cancel the remote task's own end is still recorded), and with no
        event: a record beside the task's life, which its stream does not repeat."""

        def change(task: Task) -> Task | None:
            metadata = dict(task.get("metadata") or {})
            records = [r for r in metadata.get(DELEGATIONS) or () if r.get("taskId") != record["taskId"]]
            metadata[DELEGATIONS] = [*records, record]
            task["metadata"] = metadata
            return task

        store = self._store()
        saved = self.create(change) or lifecycle.transition_sync(
            store, self.task_id, change, publish=False, beside=True
        )
        if saved is not None:
            self.metadata[DELEGATIONS] = saved["metadata"][DELEGATIONS]

    # --- the conversation -------------------------------------------------------------

    def context_tasks(self, limit: int = 10) -> list[Task]:
        """The latest ``limit`` other tasks of this context, oldest first: the earlier
        conversation. Only the task owner's own tasks: another caller who sends the same
        ``contextId`` has a conversation of its own there, which this one never sees.

        Read once this task is stored in the conversation, which keeps the conversation
        whole while the handler runs (retention deletes one only when all its tasks have
        expired): a :func:`direct_reply` handler's task not created yet is created first
        when there is an earlier conversation to read (a task-visible act)."""
        query = self._context_query(limit)
        if query is None:
            return []
        earlier = self._earlier(self._store().list(query).tasks, limit)
        if earlier and self.pending:
            self.create()
            earlier = self._earlier(self._store().list(query).tasks, limit)
        return earlier

    async def acontext_tasks(self, limit: int = 10) -> list[Task]:
        """:meth:`context_tasks` for async handlers."""
        query = self._context_query(limit)
        if query is None:
            return []
        earlier = self._earlier((await self._store().alist(query)).tasks, limit)
        if earlier and self.pending:
            await asyncio.to_thread(self.create)
            earlier = self._earlier((await self._store().alist(query)).tasks, limit)
        return earlier

    def _context_query(self, limit: int) -> TaskQuery | None:
        if limit <= 0 or not self.context_id or self.new_context:
            return None
        owner = scope_key(self.tenant, self.owner, self.agent.scope)
        return TaskQuery(context_id=self.context_id, owner=owner, page_size=min(limit + 1, MAX_PAGE_SIZE))

    def _earlier(self, tasks: list[Task], limit: int) -> list[Task]:
        earlier = [t for t in tasks if t["id"] != self.task_id][:limit]
        return sorted(earlier, key=lambda t: (task_updated(t), t["id"]))

    def _store(self) -> TaskStore:
        return self.store if self.store is not None else self.agent.store  # an empty store is falsy (len)

    # --- a direct answer: the task is created on the first task-visible act ---------

    @property
    def pending(self) -> bool:
        """The handler answers directly (:func:`direct_reply`) and has not yet done
        anything that needs a Task: none exists yet."""
        return self._creation is not None and self._creation.pending

    def defer(self, task: Task, on_create: Callable[[Task], None]) -> None:
        """(The runner's hook: :mod:`a2a.handlers.creation`) ``task`` is not saved yet:
        save it (``working``) on the first update, or with :meth:`create`, then call
        ``on_create`` with it."""
        self._creation = DeferredCreation(task, on_create)

    def create(self, change: lifecycle.Change | None = None) -> Task | None:
        """Save the deferred task now (``working``, leased to this process, with
        ``change`` applied: the handler's first act); the task saved, or None when it
        existed already (or ``change`` declined: the task is saved without it)."""
        return self._creation.create(self._store(), change) if self._creation is not None else None

    @classmethod
    def for_task(
        cls, task: Task, cancelled: threading.Event | None = None, store: TaskStore | None = None
    ) -> HandlerRequest:
        history = list(task.get("history") or ())
        message = next((m for m in reversed(history) if m.get("role") == "user"), None) or {"parts": []}
        call = task_call(task)
        if not isinstance(cancelled, Cancellation):  # one made here, or a plain Event mirrored
            cancelled = Cancellation() if cancelled is None else _Mirror(cancelled)
        return cls(
            message=message,
            task_id=task["id"],
            context_id=task.get("contextId", ""),
            history=history,
            metadata=dict(task.get("metadata") or {}),
            store=store,
            owner=task_owner(task),
            version=str(call.get("version") or "1.0"),
            binding=str(call.get("binding") or "internal"),
            extensions=tuple(call.get("extensions") or ()),
            turn=int(call.get("turn") or 1),
            tenant=task_tenant(task),
            credentials=held_credentials(task["id"]),
            agent_name=task_agent(task) or DEFAULT_AGENT,
            cancelled=cancelled,
            new_context=bool(call.get("newContext")),
        )


class _Mirror(Cancellation):
    """A :class:`Cancellation` that reads a plain ``threading.Event``."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__()
        self._event = event

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def set(self) -> None:
        self._event.set()
        super().set()


def call_record(
    version: str, binding: str, extensions: tuple[str, ...] | list[str], turn: int, *, new_context: bool = False
) -> dict[str, Any]:
    """What the task keeps (``_call``) of the call that brought its latest message, for
    :meth:`HandlerRequest.for_task` (on whichever process runs it); ``new_context``: the
    message created the task in a context the server made for it."""
    record: dict[str, Any] = {"version": version, "binding": binding, "turn": turn}
    if extensions:
        record["extensions"] = list(extensions)
    if new_context:
        record["newContext"] = True
    return record
