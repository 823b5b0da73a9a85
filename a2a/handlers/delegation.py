"""Delegation: a handler runs a task on a remote agent (``A2A_REMOTE_AGENTS``) and brings
it into its own task: :meth:`HandlerRequest.delegate <a2a.handlers.HandlerRequest.delegate>`
(``adelegate`` in an async handler).

The remote task is followed through its stream when the remote card offers streaming
(else it is sent without blocking and polled: a 1.1 agent's long-poll, ``Client.poll``),
and mirrored as it goes: its status messages become the local task's progress, its
artifacts (chunks appended in order) the local task's artifacts, under ids of their own
(:func:`local_artifact_id`). A stream that breaks is followed on by polling, and every
poll compares the remote artifacts with the local copies, so a chunk the stream lost
still arrives. ``input-required`` and ``auth-required`` pause the local task the same way
(the client's answer, on the local task's next turn, is sent on to the waiting remote
task); a failure or rejection is a :class:`DelegationFailed`; a cancel goes both ways.
Each remote task is recorded in the local task's metadata under :data:`METADATA_KEY`,
to its final state.

It all runs on an event loop with the async client: the handler's loop for
``adelegate`` (a cancelled handler cancels the remote task), a loop of the call's own for
``delegate`` (the local task's saves then run on the handler's thread). The local cancel
and the ``timeout`` cancel the coroutine that follows the remote task; nothing polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeVar

from asgiref.sync import async_to_sync, sync_to_async

from a2a.client import (
    AgentTimeoutError,
    AgentUnavailableError,
    AsyncClient,
    AuthenticationError,
    CardError,
    ClientError,
    RemoteAgentError,
    TaskNotCancelable,
    async_remote_client,
    remote_agent,
    user_message,
)
from a2a.client.card import card_urls
from a2a.client.events import apply
from a2a.client.remote import async_client_for
from a2a.core import lifecycle
from a2a.core.events import TaskEvent, with_chunk
from a2a.handlers.results import AuthRequired, InputRequired, Interrupt, TaskFailed, TaskOutcome
from a2a.protocol.model import Message, Part, StreamItem, Task, agent_message, message_text, new_id, set_status
from stores.base import TERMINAL_STATES
from stores.fields import DELEGATIONS

T = TypeVar("T")
logger = logging.getLogger(__name__)

#: The local task's metadata key listing the remote tasks it started, oldest first: each
#: ``{"agent", "url", "taskId", "contextId", "state"}`` (the agent's name in
#: ``A2A_REMOTE_AGENTS``, its card's URL, the remote task and context, the state the
#: remote task was last seen in). Reserved: a client's metadata never sets it (a forged
#: record could make the next turn resume another remote task).
METADATA_KEY = DELEGATIONS
#: The remote states that pause the local task until its client answers.
WAITING = frozenset({"input-required", "auth-required"})
_INTERRUPTS: dict[str, type[Interrupt]] = {"input-required": InputRequired, "auth-required": AuthRequired}
#: The remote states the delegation stops following at.
SETTLED = TERMINAL_STATES | WAITING


class DelegationFailed(TaskFailed):
    """A delegation did not succeed: the remote agent failed or rejected the task, could
    not be reached, refused the credentials or the card, or ran past the timeout. As a
    :class:`TaskFailed`, an unhandled one fails the local task with its text.
    ``agent``: the remote agent's name; ``task``: the remote task as last seen (None
    when it was never created); ``remote_state``: its state (``failed``,
    ``rejected``...), ``""`` when it did not fail or reject it itself."""

    def __init__(self, text: str, *, agent: str, task: Task | None = None, remote_state: str = "") -> None:
        super().__init__(text)
        self.agent, self.task, self.remote_state = agent, task, remote_state


class Cancelled(Protocol):
    """The local task's cancel: :class:`~a2a.handlers.request.Cancellation`."""

    def is_set(self) -> bool: ...

    async def wait_async(self, timeout: float | None = None) -> bool: ...


class Local(Protocol):
    """What delegation needs of the local task: :class:`~a2a.handlers.HandlerRequest`'s
    public methods (blocking: delegation calls them off the event loop)."""

    @property
    def task_id(self) -> str: ...

    @property
    def metadata(self) -> dict[str, Any]: ...

    @property
    def credentials(self) -> dict[str, str]: ...

    @property
    def cancelled(self) -> Cancelled: ...

    @property
    def is_continuation(self) -> bool: ...

    def update(self, change: lifecycle.Change, event: lifecycle.EventFor | None = None) -> Task | None: ...

    def current_task(self) -> Task | None: ...

    def record_delegation(self, record: dict[str, Any]) -> None: ...

    def cancel(self, message: Any = None) -> bool: ...


#: How the local task's blocking calls are run from the event loop.
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Options:
    """``delegate()``'s keyword arguments (docs/handlers.md, "Delegation")."""

    #: Seconds the whole delegation may take (None: no limit but the client's own timeouts);
    #: past it the remote task is canceled and DelegationFailed raised.
    timeout: float | None = None
    #: Follow the remote task's stream (True), poll it (False), or stream when its card offers it (None).
    stream: bool | None = None
    #: Seconds between two polls of a remote task that is not streamed.
    poll_interval: float = 0.5
    #: Surface ``input-required``, ``auth-required`` and a remote cancel on the local task
    #: (True), or return the remote task in that state to the handler (False).
    surface: bool = True
    #: On a continuation, send the message to this agent's remote task that waits for
    #: input (True), or always start a new remote task (False).
    resume: bool = True
    #: Mirror the remote status messages as progress, and the remote artifacts.
    progress: bool = True
    artifacts: bool = True
    #: The remote context to send in (None: the remote agent picks one, or the waiting task's).
    context_id: str | None = None
    #: Metadata sent with the message.
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"delegate(timeout=...) must be a positive number of seconds, not {self.timeout!r}")
        if not self.poll_interval > 0:
            raise ValueError(f"delegate(poll_interval=...) must be a positive number, not {self.poll_interval!r}")

    @classmethod
    def of(cls, options: dict[str, Any]) -> Options:
        """The options of ``delegate(**options)``; TypeError naming an unknown one."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"delegate() has no option {unknown[0]!r} (options: {', '.join(sorted(known))})")
        return cls(**options)


def local_artifact_id(remote_task_id: str, remote_artifact_id: str) -> str:
    """The local id of a remote artifact: unique per remote task, and the same on every
    turn, so the chunks of one remote artifact (and a resumed remote task's) extend one
    local artifact."""
    return f"{remote_task_id}/{remote_artifact_id}"


# --- delegation -----------------------------------------------------------------------------


def delegate(local: Local, agent: str, message: str | list[Part] | Message, options: Options) -> Task:
    """Run ``message`` as a task on the remote agent ``agent`` and bring it into the local
    task (module docstring); the remote task as it ended. DelegationFailed on failure.
    For a sync handler: :func:`adelegate` on an event loop of this call's own, the local
    task's saves on this (the handler's) thread."""
    return async_to_sync(_delegate)(local, agent, message, options, True)


async def adelegate(local: Local, agent: str, message: str | list[Part] | Message, options: Options) -> Task:
    """:func:`delegate` on the running event loop (an async handler's)."""
    return await _delegate(local, agent, message, options, False)


async def _delegate(
    local: Local, agent: str, message: str | list[Part] | Message, options: Options, own_loop: bool
) -> Task:
    try:
        entry = remote_agent(agent)
        # A loop of the call's own ends with it: so does a client of its own.
        client = async_client_for(entry.options, agent) if own_loop else async_remote_client(agent)
    except ClientError as exc:
        raise DelegationFailed(f"Cannot delegate to {agent!r}: {exc}", agent=agent) from exc
    if entry.forward_caller_credentials and local.credentials:
        client = client.with_headers(local.credentials)  # type: ignore[assignment]
    offload: Offload = _on_the_callers_thread if own_loop else asyncio.to_thread
    try:
        return await _Run(local, agent, client, options, offload).go(message)
    finally:
        if own_loop:
            await client.aclose()


async def _on_the_callers_thread(call: Callable[[], T]) -> T:
    return await sync_to_async(call, thread_sensitive=True)()


@dataclass
class _Run:
    """One delegation: the remote task followed and mirrored onto the local one."""

    local: Local
    agent: str
    client: AsyncClient
    options: Options
    offload: Offload
    remote: Task | None = None
    deadline: float | None = None
    #: The remote status message last mirrored (polls see the same one again).
    seen_status: str = ""
    #: Parts of each remote artifact already on the local task, by remote artifact id.
    mirrored: dict[str, list[Part]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return str(((self.remote or {}).get("status") or {}).get("state") or "")

    @property
    def remote_id(self) -> str:
        return str((self.remote or {}).get("id") or "")

    async def go(self, message: str | list[Part] | Message) -> Task:
        if self.options.timeout is not None:
            self.deadline = time.monotonic() + self.options.timeout
        waiting = self._waiting_record() if self.options.resume and self.local.is_continuation else None
        context_id = self.options.context_id or (waiting or {}).get("contextId")
        outgoing = user_message(
            message,
            context_id=context_id,
            task_id=(waiting or {}).get("taskId"),
            metadata=self.options.metadata,
        )
        try:
            if waiting is not None:
                await self._adopt_mirrored(waiting["taskId"])
            if await self._until_settled(outgoing):
                await self._reconcile()
        except ClientError as exc:
            raise self._failure(_why(exc)) from exc
        except asyncio.CancelledError:  # the handler was cancelled: so is the remote task
            await self._cancel_remote()
            raise
        return await self._ended()

    # --- reaching the remote agent ------------------------------------------------------

    async def _until_settled(self, outgoing: Message) -> bool:
        """Follow the remote task until it settles (True), or the local task is canceled
        (False), or the deadline passes (DelegationFailed); the remote task is canceled
        in the last two cases."""
        follow = asyncio.ensure_future(self._follow(outgoing))
        canceled = asyncio.ensure_future(self.local.cancelled.wait_async())
        left = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        try:
            await asyncio.wait({follow, canceled}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            follow.cancel()
            canceled.cancel()
            await asyncio.gather(follow, canceled, return_exceptions=True)
        if not follow.cancelled():
            follow.result()  # its error, if any
            return True
        await self._cancel_remote()
        if self.local.cancelled.is_set():
            return False
        if not self.remote_id:
            raise self._failure(f"did not start the task within {self.options.timeout:g}s")
        limit = f"did not finish within {self.options.timeout:g}s; its task {self.remote_id}"
        if self.state == "canceled":
            raise self._failure(f"{limit} was canceled")
        raise self._failure(f"{limit} is still {self.state or 'running'} (canceling it failed)")

    async def _follow(self, outgoing: Message) -> None:
        if await self._streams():
            await self._follow_stream(outgoing)
        else:
            await self._took(await self.client.send(outgoing, blocking=False))
        while self.remote is not None and self.state not in SETTLED:
            await self._took(await self.client.poll(self.remote, interval=self.options.poll_interval))

    async def _streams(self) -> bool:
        if self.options.stream is not None:
            return self.options.stream
        await self.client.connect()  # the card, fetched (and its signature checked) once
        card = self.client.card
        return card is None or bool((card.get("capabilities") or {}).get("streaming"))

    async def _follow_stream(self, outgoing: Message) -> None:
        """Mirror each event of the remote stream; return when the remote task is settled
        or the stream ends (or breaks: then the caller polls)."""
        try:
            async with contextlib.aclosing(self.client.stream(outgoing)) as items:
                async for item in items:
                    await self._took_item(item)
                    if self.state in SETTLED:
                        return
        except ClientError as exc:
            if self.remote is None:
                raise
            logger.warning("delegation to %s: the stream of task %s broke (%s); polling it", self.agent,
                           self.remote_id, exc)  # fmt: skip

    async def _reconcile(self) -> None:
        """Read the settled remote task once more: an artifact an event missed still arrives."""
        if not self.remote_id or not self.options.artifacts:
            return
        try:
            await self._took(await self.client.get_task(self.remote_id))
        except ClientError as exc:
            logger.warning("delegation to %s: task %s could not be read again (%s)", self.agent, self.remote_id, exc)

    async def _cancel_remote(self) -> None:
        if not self.remote_id or self.state in TERMINAL_STATES:
            return
        try:
            self.remote = await self.client.cancel_task(self.remote_id)
        except TaskNotCancelable:
            pass
        except ClientError as exc:
            logger.warning("delegation to %s: task %s could not be canceled (%s)", self.agent, self.remote_id, exc)
        await self._record(self.state or "canceled")

    # --- mirroring --------------------------------------------------------------------

    async def _took(self, answer: Task | Message) -> None:
        if answer.get("kind") == "message":
            await self._took_item(StreamItem("message", message=answer))
        else:
            await self._took_item(StreamItem("task", task=answer))

    async def _took_item(self, item: StreamItem) -> None:
        if item.kind == "message" and self.remote is None and item.message is not None:
            self.remote = _replied(item.message)  # a direct answer: a task of one artifact
        else:
            known = self.remote_id
            self.remote = apply(self.remote, item)
            if self.remote is not None and not known:
                await self._record(self.state)
        if self.remote is None:
            return
        if self.options.progress:
            await self._mirror_status()
        if self.options.artifacts:
            await self._mirror_artifacts(item.last_chunk or self.state in TERMINAL_STATES)

    async def _mirror_status(self) -> None:
        status = (self.remote or {}).get("status") or {}
        message = status.get("message")
        if status.get("state") not in ("submitted", "working") or not isinstance(message, dict):
            return
        key = str(message.get("messageId") or message_text(message))
        if key == self.seen_status or not message.get("parts"):
            return
        self.seen_status = key
        parts, reference = list(message["parts"]), self.remote_id

        def change(task: Task) -> Task | None:
            if lifecycle.is_terminal(task):
                return None
            return set_status(task, "working", _referring(agent_message(parts, task=task), reference))

        await self.offload(lambda: self.local.update(change))

    async def _mirror_artifacts(self, last_chunk: bool) -> None:
        for artifact in (self.remote or {}).get("artifacts") or ():
            remote_id = str(artifact.get("artifactId") or "")
            parts = list(artifact.get("parts") or ())
            have = self.mirrored.get(remote_id)
            if have is not None and parts[: len(have)] == have:
                if len(parts) > len(have):
                    await self._artifact(artifact, parts[len(have) :], append=True, last_chunk=last_chunk)
            elif parts or have is None:
                await self._artifact(artifact, parts, append=False, last_chunk=last_chunk)
            self.mirrored[remote_id] = parts

    async def _artifact(self, artifact: dict[str, Any], parts: list[Part], *, append: bool, last_chunk: bool) -> None:
        chunk: dict[str, Any] = {
            "artifactId": local_artifact_id(self.remote_id, str(artifact.get("artifactId") or new_id())),
            "parts": parts,
        }
        for key in ("name", "description", "metadata", "extensions"):
            if artifact.get(key) and not append:
                chunk[key] = artifact[key]

        def change(task: Task) -> Task | None:
            if lifecycle.is_terminal(task):
                return None
            task["artifacts"] = with_chunk(task.get("artifacts"), chunk, append)
            return task

        def event(task: Task) -> TaskEvent:
            return TaskEvent(task, kind="artifact", artifact=chunk, append=append, last_chunk=last_chunk)

        await self.offload(lambda: self.local.update(change, event))

    async def _adopt_mirrored(self, remote_task_id: str) -> None:
        """On a resumed remote task: what the earlier turns mirrored is on the local task."""
        prefix = local_artifact_id(remote_task_id, "")
        task = await self.offload(self.local.current_task)
        for artifact in (task or {}).get("artifacts") or ():
            if str(artifact.get("artifactId", "")).startswith(prefix):
                self.mirrored[artifact["artifactId"][len(prefix) :]] = list(artifact.get("parts") or ())

    # --- the record and the outcome -----------------------------------------------------

    def _waiting_record(self) -> dict[str, Any] | None:
        records = self.local.metadata.get(METADATA_KEY)
        for record in reversed(records if isinstance(records, list) else []):
            if isinstance(record, dict) and record.get("agent") == self.agent:
                return record if record.get("state") in WAITING and record.get("taskId") else None
        return None

    async def _record(self, state: str) -> None:
        """Save the remote task's id and ``state`` in the local task's metadata."""
        record = {
            "agent": self.agent,
            "url": card_urls(self.client.url)[0],
            "taskId": self.remote_id,
            "contextId": str((self.remote or {}).get("contextId") or ""),
            "state": state,
        }
        if record["taskId"]:
            await self.offload(lambda: self.local.record_delegation(record))

    def _failure(self, why: str) -> DelegationFailed:
        """DelegationFailed saying "The remote agent 'billing' <why>"."""
        state = self.state if self.state in ("failed", "rejected") else ""
        text = f"The remote agent {self.agent!r} {why}"
        return DelegationFailed(text, agent=self.agent, task=self.remote, remote_state=state)

    async def _ended(self) -> Task:
        remote = self.remote or {}
        state = self.state
        await self._record(state)
        status_text = message_text((remote.get("status") or {}).get("message") or {})
        if state in ("failed", "rejected"):
            verb = "failed" if state == "failed" else "rejected"
            raise self._failure(f"{verb} the task {self.remote_id}" + (f": {status_text}" if status_text else ""))
        if self.options.surface and state in WAITING:
            parts = list(((remote.get("status") or {}).get("message") or {}).get("parts") or ())
            outcome: TaskOutcome = _INTERRUPTS[state](parts or f"{self.agent}: {state}")
            outcome.reference_task_ids = [self.remote_id]
            raise outcome
        if self.options.surface and state == "canceled" and not self.local.cancelled.is_set():
            text = f"The remote agent {self.agent!r} canceled its task {self.remote_id}"
            await self.offload(lambda: self.local.cancel(text))
        return remote


def _replied(message: Message) -> Task:
    """A remote agent's direct answer as a completed task whose one artifact is the answer."""
    return {
        "kind": "task",
        "id": "",
        "contextId": str(message.get("contextId") or ""),
        "status": {"state": "completed", "message": message},
        "artifacts": [{"artifactId": str(message.get("messageId") or new_id()), "parts": list(message["parts"])}],
    }


def _referring(message: Message, remote_task_id: str) -> Message:
    if remote_task_id:
        message["referenceTaskIds"] = [remote_task_id]
    return message


def _why(exc: ClientError) -> str:
    """How a client error reads after "The remote agent 'billing'"."""
    if isinstance(exc, AgentTimeoutError):
        return f"did not answer in time: {exc}"
    if isinstance(exc, AgentUnavailableError):
        return f"cannot be reached: {exc}"
    if isinstance(exc, AuthenticationError):
        return f"refused the credentials: {exc}"
    if isinstance(exc, CardError):
        return f"has no card this server accepts: {exc}"
    if isinstance(exc, RemoteAgentError):
        return f"answered with an error: {exc}"
    return f"gave an answer that is not A2A: {exc}"
