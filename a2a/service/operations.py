"""One function per A2A operation, written once for every binding and dialect.

Each takes parsed, canonical parameters (``a2a.protocol.model``) and returns
canonical objects; errors are ``a2a.protocol.errors`` exceptions. The task store is
the single source of truth: every answer about a task is read from it
(:func:`load_task`, the task as the caller may see it). How a stream or a wait
follows a task on the event bus is :mod:`a2a.service.streams`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Collection

from a2a.agents import DEFAULT_AGENT
from a2a.conf import a2a_settings
from a2a.core import files, leases, lifecycle, replay, tracing
from a2a.core.events import Subscription, bus
from a2a.handlers import answers_directly, call_record
from a2a.handlers.credentials import hold_credentials
from a2a.protocol import limits, timeline
from a2a.protocol.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    TaskGenerationMismatchError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.protocol.model import (
    INTERRUPTED_STATES,
    SETTLED_STATES,
    TERMINAL_STATES,
    CancelParams,
    GetParams,
    ListParams,
    Message,
    SendParams,
    StreamItem,
    Task,
    new_id,
    new_task,
    set_status,
    shown,
    task_state,
    with_history,
)
from a2a.runtime.executors import adispatch, get_executor
from a2a.runtime.runner import get_runner
from a2a.service import page_tokens, push_configs, streams
from a2a.service.context import INTERNAL, CallContext, load_task
from stores.base import TaskPage, TaskQuery
from stores.fields import (
    AGENT,
    CALL,
    CLIENT_MESSAGES,
    DELEGATIONS,
    FILE_BYTES,
    LEASE,
    OWNER,
    REPLY,
    TENANT,
    task_call,
    task_generation,
)

logger = logging.getLogger(__name__)


def _shaped(task: Task, params: SendParams | GetParams | ListParams) -> Task:
    """``task`` as the request asked for it: its last ``historyLength`` messages and its
    last ``timelineLength`` timeline entries (spec 3.2.4; the timeline only 1.1 shows)."""
    return with_history(timeline.with_timeline(task, params.timeline_length), params.history_length)


def _new_task(ctx: CallContext, params: SendParams, followed: bool) -> Task:
    """The task for a new message, not saved yet: the caller owns it, and it keeps
    how the caller called (``_call``) for the handler, wherever it runs. Its metadata is
    the client's, but for the key delegation reserves (:data:`stores.fields.DELEGATIONS`).
    ``followed``: a stream follows it, which keeps its events (:func:`a2a.core.replay.follow`)."""
    message = params.message
    metadata = {k: v for k, v in params.metadata.items() if k != DELEGATIONS} if params.metadata else None
    task = new_task(message, context_id=message.get("contextId") or new_id(), metadata=metadata)
    if ctx.caller:
        task[OWNER] = ctx.caller
    if ctx.tenant:
        task[TENANT] = ctx.tenant
    if ctx.agent_name != DEFAULT_AGENT:  # the default agent's tasks stay as they were before agents
        task[AGENT] = ctx.agent_name
    if (trace := tracing.carrier()) is not None:  # the handler's run joins this request's trace
        task[tracing.TRACE_KEY] = trace
    new_context = not message.get("contextId")  # its handler reads no earlier conversation
    task[CALL] = call_record(ctx.version, ctx.binding, ctx.extensions, turn=1, new_context=new_context)
    return replay.follow(task) if followed else task


async def _start(ctx: CallContext, params: SendParams, followed: bool = False) -> Task:
    """Create the task for a new message, or resubmit the interrupted task it continues
    (``followed``: by a stream, :func:`_new_task`)."""
    check_input_modes(params.message, ctx.agent.settings.INPUT_MODES)
    push_config = await push_configs.check_send_config(params.push_config)  # refused before any task exists
    message = params.message
    if message.get("taskId"):
        task = await _continue(ctx, message, params.if_generation_match, followed)
    else:
        task = _new_task(ctx, params, followed)
        async with _discarded_unless_saved(ctx, task["id"], await _offloaded(ctx, task)):
            task = await lifecycle.create(ctx.store, task, queued=get_executor().queued)
    hold_credentials(task["id"], dict(ctx.credentials))  # for its handler's delegations, not saved
    tracing.annotate(task)
    if push_config is not None:  # saved before the runner starts: it hears every later transition
        await push_configs.attach_config(ctx, task["id"], push_config)
    return task


async def _offloaded(ctx: CallContext, task: Task) -> list[str]:
    """Write the new task's large file parts to the storage (a2a.core.files), in place; the
    storage names written. A part naming another task's stored file is refused first."""
    parts = task["history"][0].get("parts") or ()
    files.check_references(parts, task["id"], ctx.origin)
    if not files.carries_bytes(parts):
        return []
    base = ctx.origin + ctx.agent.path("jsonrpc")
    return await asyncio.to_thread(files.offload_message, task["history"][0], task, base=base)


def _direct(ctx: CallContext, params: SendParams) -> bool:
    """Whether the agent's handler runs before any task exists (it is marked
    ``direct_reply``): a new message, with no push-notification config to attach."""
    if params.message.get("taskId") or params.push_config is not None:
        return False
    return answers_directly(ctx.agent.settings.HANDLER)


@contextlib.asynccontextmanager
async def _direct_answer(
    ctx: CallContext, params: SendParams, followed: bool = False
) -> AsyncIterator[tuple[Subscription, Task | Message]]:
    """Run the ``direct_reply`` handler on the new message's task, not saved yet: the
    subscription to the task's events (open before the task can exist, so none slips
    by) and the answer, the handler's Message or the task once created."""
    task = _new_task(ctx, params, followed)
    written = await _offloaded(ctx, task)
    hold_credentials(task["id"], dict(ctx.credentials))
    with bus.subscribe(task["id"], ctx.store) as events:
        await events.ready()
        async with _discarded_unless_saved(ctx, task["id"], written):
            check_input_modes(params.message, ctx.agent.settings.INPUT_MODES)
            answer = await asyncio.wrap_future(get_runner().answer(task))
        if written and _is_message(answer):  # no task is ever saved: nothing references its files
            await asyncio.to_thread(files.discard, written)
        yield events, answer


def _is_message(answer: Task | Message) -> bool:
    return answer.get("kind") == "message"


@tracing.traced("SendMessage")
async def send_message(params: SendParams, ctx: CallContext = INTERNAL) -> Task | Message:
    """Start a task for the message (or continue the interrupted task it names).

    Non-blocking: answers with the task as submitted. Blocking: waits until the task
    settles (terminal or interrupted) or ``A2A_BLOCKING_TIMEOUT`` passes, and answers
    with the task as stored, or with the handler's direct reply Message. A
    ``direct_reply`` handler that answers at once: the Message, and no task exists.
    """
    if _direct(ctx, params):
        async with _direct_answer(ctx, params) as (events, answer):
            if _is_message(answer) or not params.blocking:
                return answer if _is_message(answer) else _shaped(answer, params)
            return await _settled(ctx, events, answer, params)
    task = await _start(ctx, params)
    task_id = task["id"]
    if not params.blocking:
        await adispatch(task_id, ctx.agent_name)
        return _shaped(task, params)
    with bus.subscribe(task_id, ctx.store) as events:  # subscribe first: no transition can slip by
        await events.ready()
        await adispatch(task_id, ctx.agent_name)
        return await _settled(ctx, events, task, params)


async def _settled(ctx: CallContext, events: Subscription, task: Task, params: SendParams) -> Task | Message:
    """The task once the turn ``task`` began settles (or ``A2A_BLOCKING_TIMEOUT`` passed),
    as stored; as the turn ended, when another caller's follow-up began the next one
    meanwhile (:func:`streams.turn_answer`). The handler's reply Message if it answered with one."""
    ended = await streams.settle(events, task)
    with tracing.store("get", task["id"]):
        stored = await ctx.store.aget(task["id"])
    if stored is None:
        raise TaskNotFoundError(task["id"])
    settled = streams.turn_answer(ended, stored)
    if settled.get(REPLY) and settled["status"].get("message"):
        return settled["status"]["message"]
    return _shaped(settled, params)


@tracing.traced("SendStreamingMessage")
async def stream_message(params: SendParams, ctx: CallContext = INTERNAL) -> AsyncIterator[StreamItem]:
    """SendStreamingMessage: the task as submitted, then each update until it settles.

    The stream follows this message's turn: it closes when the task reaches a terminal
    state or an interrupted one (``input-required``, ``auth-required``: spec 11.7, and
    v0.3's ``final``); the answer to the question is another message, with its own
    stream. Errors (bad input, unknown task) are raised before the first item. A
    ``direct_reply`` handler that answers at once: exactly that one Message.
    """
    if _direct(ctx, params):
        async with _direct_answer(ctx, params, followed=True) as (events, answer):
            if _is_message(answer):
                yield StreamItem("message", message=answer)
                return
            opening = timeline.with_timeline(answer, params.timeline_length)
            async for item in streams.numbered(streams.follow(events, opening, params.history_length), ctx):
                yield item
        return
    task = await _start(ctx, params, followed=True)
    with bus.subscribe(task["id"], ctx.store) as events:
        await events.ready()
        await adispatch(task["id"], ctx.agent_name)
        opening = timeline.with_timeline(task, params.timeline_length)  # (the first item's)
        stream = streams.follow(events, opening, params.history_length, until=SETTLED_STATES)
        async for item in streams.numbered(stream, ctx):
            yield item


@tracing.traced("SubscribeToTask", task_id="id")
async def subscribe_to_task(params: GetParams, ctx: CallContext = INTERNAL) -> AsyncIterator[StreamItem]:
    """SubscribeToTask: the task as it is now, then each update until it is terminal.

    The stream follows the task, not one turn of it: a task waiting in
    ``input-required`` or ``auth-required`` keeps it open (spec 3.1.6: "can be used
    with any task that is not in a terminal state; the stream MUST terminate when the
    task reaches a terminal state"), and it carries the follow-up turns too."""
    with bus.subscribe(params.id, ctx.store) as events:  # before the snapshot: nothing falls between
        await events.ready()
        await _follow(ctx, params.id)
        task = await load_task(params.id, ctx)
        opening = streams.resumed(task, params.last_event_id, params.history_length)
        if lifecycle.is_terminal(task) and opening in (None, []):
            raise UnsupportedOperationError(
                f"Task {params.id} is {task_state(task)}; there is nothing left to subscribe to",
                metadata={"taskId": params.id},
            )
        stream = streams.follow(events, task, params.history_length, until=TERMINAL_STATES, opening=opening)
        async for item in streams.numbered(stream, ctx):
            yield item


async def _follow(ctx: CallContext, task_id: str) -> None:
    """Keep the events of the caller's task from now on (:func:`a2a.core.replay.follow`),
    so this stream's client can resume after the last it saw: one save, the first time a
    stream follows a task not terminal. A store that cannot save it costs the client
    only that: it resumes with the gap marker and the whole task."""

    def change(task: Task) -> Task | None:
        if replay.followed(task) or lifecycle.is_terminal(task) or not ctx.owns(task):
            return None
        return replay.follow(task)

    if not a2a_settings.STREAM_REPLAY_EVENTS:
        return  # no event is kept for anyone: nothing to mark
    try:
        await lifecycle.transition(ctx.store, task_id, change, publish=False)
    except Exception:
        logger.warning("task %s: could not keep its stream events for a resumption", task_id, exc_info=True)


def check_input_modes(message: Message, accepted: list[str] | None = None) -> None:
    """ContentTypeNotSupportedError for a part whose media type the agent does not take
    (``accepted``: the agent's ``INPUT_MODES``, else ``A2A_INPUT_MODES``; ``*/*`` and
    ``type/*`` are wildcards)."""
    accepted = a2a_settings.INPUT_MODES if accepted is None else accepted
    for i, part in enumerate(message.get("parts", ())):
        kind = part.get("kind")
        media = (
            "text/plain"
            if kind == "text"
            else "application/json"
            if kind == "data"
            else (part.get("file") or {}).get("mimeType") or "application/octet-stream"
        )
        major = media.split("/", 1)[0]
        if not any(m in ("*/*", media, f"{major}/*") for m in accepted):
            raise ContentTypeNotSupportedError(
                f"message.parts[{i}] is {shown(media, 80)}, which this agent does not accept "
                f"(it accepts {', '.join(accepted) or 'nothing'})",
                metadata={"mediaType": media},
            )


async def _continue(ctx: CallContext, message: Message, expected: int | None = None, followed: bool = False) -> Task:
    """Append a follow-up message to a task waiting for input and resubmit it; with
    ``expected`` (A2A 1.1 ``ifGenerationMatch``), only while the task's generation is
    that: checked on the stored task in the very compare-and-swap save, so of two
    follow-ups expecting the same generation exactly one is taken. ``followed``: by a
    stream (:func:`_new_task`)."""
    task_id = message["taskId"]
    trace = tracing.carrier()
    file_bytes, written = await _offload_follow_up(ctx, message)

    def change(task: Task) -> Task:
        state = task_state(task)
        if not ctx.owns(task):
            raise TaskNotFoundError(task_id)
        if expected is not None and task_generation(task) != expected:
            raise TaskGenerationMismatchError(task_id, expected, task_generation(task))
        if file_bytes is not None:
            task[FILE_BYTES] = file_bytes
        if lifecycle.is_terminal(task):
            raise UnsupportedOperationError(
                f"Task {task_id} is {state} and cannot take more messages; start a new task "
                f"(you may reuse its contextId)"
            )
        if state not in INTERRUPTED_STATES:
            raise UnsupportedOperationError(f"Task {task_id} is still {state}; wait for it or cancel it")
        if message.get("contextId") and message["contextId"] != task.get("contextId"):
            raise InvalidParamsError("does not match the task's contextId", field="message.contextId")
        added = {**message, "contextId": task.get("contextId", "")}
        task["history"] = [*(task.get("history") or ()), added]
        task[CLIENT_MESSAGES] = [added]  # a step of its own, and a timeline entry (A2A 1.1 draft)
        turn = task_call(task).get("turn") or 1
        task[CALL] = call_record(ctx.version, ctx.binding, ctx.extensions, turn=int(turn) + 1)
        limits.keep_history(task)  # at most A2A_MAX_HISTORY messages: the oldest go
        task[LEASE] = leases.new_lease(queued=get_executor().queued)  # in flight again: a lost hand-off is found
        if trace is not None:  # this run joins the trace of the message that resumes it
            task[tracing.TRACE_KEY] = trace
        return set_status(replay.follow(task) if followed else task, "submitted")

    async with _discarded_unless_saved(ctx, task_id, written):
        task = await lifecycle.transition(ctx.store, task_id, change)
        if task is None:
            raise TaskNotFoundError(task_id)
    return task


async def _offload_follow_up(ctx: CallContext, message: Message) -> tuple[int | None, list[str]]:
    """The task's file bytes with this follow-up message's (None without files), its large
    file parts written to the storage (a2a.core.files) once the caller is known to own the
    task, and the storage names of the files written. A part naming a stored file of
    another task is refused first (the task's own, of an earlier turn, it may name)."""
    files.check_references(message.get("parts") or (), message["taskId"], ctx.origin)
    if not files.carries_bytes(message.get("parts") or ()):
        return None, []
    task = dict(await load_task(message["taskId"], ctx))
    base = ctx.origin + ctx.agent.path("jsonrpc")
    written = await asyncio.to_thread(files.offload_message, message, task, base=base)
    return int(task.get(FILE_BYTES) or 0), written


def _discarded_unless_saved(
    ctx: CallContext, task_id: str, written: Collection[str]
) -> contextlib.AbstractAsyncContextManager[None]:
    """On an error (the message refused, the save failed), delete the files ``written`` for
    it that the stored task does not reference: a refused message leaves no file behind.
    What a crash leaves, a2a.core.file_orphans removes. Nothing written: nothing to do."""
    return _discarding(ctx, task_id, written) if written else contextlib.nullcontext()


@contextlib.asynccontextmanager
async def _discarding(ctx: CallContext, task_id: str, written: Collection[str]) -> AsyncIterator[None]:
    try:
        yield
    except Exception:
        with contextlib.suppress(Exception):  # the error is the answer; an orphan is swept later
            stored = await ctx.store.aget(task_id)
            kept = files.referenced(stored) if stored is not None else set()
            await asyncio.to_thread(files.discard, [name for name in written if name not in kept])
        raise


@tracing.traced("GetTask", task_id="id")
async def get_task(params: GetParams, ctx: CallContext = INTERNAL) -> Task:
    """GetTask; with ``current_generation`` (A2A 1.1 long-poll), the task once its
    generation is past it (:func:`a2a.service.streams.past`)."""
    if params.current_generation is None:
        task = await load_task(params.id, ctx)
    else:
        with bus.subscribe(params.id, ctx.store) as events:  # before the read: no change falls between
            await events.ready()
            task = await load_task(params.id, ctx)
            task = await streams.past(events, task, params.current_generation, lambda: load_task(params.id, ctx))
    return _shaped(task, params)


@tracing.traced("CancelTask", task_id="id")
async def cancel_task(params: CancelParams, ctx: CallContext = INTERNAL) -> Task:
    """Cancel a task that has not settled; a terminal task stays as it is."""

    def change(task: Task) -> Task:
        if not ctx.owns(task):
            raise TaskNotFoundError(params.id)
        if lifecycle.is_terminal(task):
            raise TaskNotCancelableError(
                f"Task {params.id} is {task_state(task)} and cannot be canceled",
                metadata={"taskId": params.id},
            )
        return set_status(task, "canceled")

    task = await lifecycle.transition(ctx.store, params.id, change)
    if task is None:
        raise TaskNotFoundError(params.id)
    tracing.annotate(task)
    get_runner().cancel(params.id)
    return task


@tracing.traced("ListTasks")
async def list_tasks(params: ListParams, ctx: CallContext = INTERNAL) -> TaskPage:
    """ListTasks: the caller's tasks in the request's tenant, a page at a time; its page
    tokens are sealed to the caller and the filters (:mod:`a2a.service.page_tokens`)."""
    bound = page_tokens.task_listing(params, ctx)
    try:
        query = TaskQuery(
            context_id=params.context_id,
            state=params.state,
            updated_after=params.updated_after,
            page_size=params.page_size,
            page_token=page_tokens.unseal(params.page_token, bound) if params.page_token else None,
            owner=ctx.scope,  # the caller's own tasks, in the request's tenant
        )
        with tracing.store("list"):
            page = await ctx.store.alist(query)
    except ValueError as exc:
        raise InvalidParamsError(str(exc)) from None
    page.next_page_token = page_tokens.seal(page.next_page_token, bound)
    tasks = []
    for task in page.tasks:
        task = _shaped(task, params)
        if not params.include_artifacts and "artifacts" in task:
            task = {k: v for k, v in task.items() if k != "artifacts"}
        tasks.append(task)
    page.tasks = tasks
    return page
