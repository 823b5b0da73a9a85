"""Following one task on the event bus: what a caller sees of it as it changes.

A stream (SendStreamingMessage, SubscribeToTask) opens with the task as stored, or with
what a resumed stream missed, and then tells each change once, in the task's order,
until the task reaches the states it waits for. A wait (a blocking SendMessage, a
long-polling GetTask) follows the same events until the task has gone far enough. The
operations (:mod:`a2a.service.operations`) subscribe before they read the task, so no
change falls between the read and the subscription, and hand the subscription here.

Why this is a module of its own: the events a subscription hears are not the task's
history, one per save. Saves in several processes cross on the way, a connection to
a cross-process backend may drop some, an event too big to carry its task carries only
a reference to the store (``partial``), and a resumed stream starts from a number the
client names. Telling every change exactly once, in order, from that (and catching up
from the task's log, or from the stored task when the log does not reach back) is one
idea with its own invariants, written once here for every operation that follows a
task. The numbers it goes by are :mod:`a2a.core.replay`'s (``_seq``), else the
task's versions (a task saved before numbers).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from a2a.conf import a2a_settings
from a2a.core import lifecycle, replay
from a2a.core.events import Subscription, TaskEvent, artifacts_shape, with_chunk
from a2a.protocol.errors import InvalidParamsError
from a2a.protocol.model import SETTLED_STATES, TERMINAL_STATES, StreamItem, Task, task_state, with_history
from a2a.service.context import CallContext
from stores.fields import task_call, task_generation, task_seq, task_version


async def follow(
    events: Subscription,
    snapshot: Task,
    history_length: int | None,
    *,
    until: frozenset[str] = SETTLED_STATES,
    opening: list[StreamItem] | None = None,
) -> AsyncIterator[StreamItem]:
    """The stream of one task: ``snapshot`` (or the ``opening`` items of a resumed
    stream), then every event newer than it, until the task reaches one of the states
    ``until`` (the last status is ``final``). Each item carries the task's number of
    its event (``seq``: :mod:`a2a.core.replay`).

    Events are taken in order of their numbers (or versions, for a task saved before
    numbers): an older one (or one already in the snapshot) is skipped; when some were
    missed (events from several processes crossing, a lost connection, a reference too
    big to carry the task) the stream takes them from the task's log, or catches up
    with the newer task when the log does not reach (see :func:`_catch_up`). With a
    cross-process event backend, an idle stream also looks at the store at each
    keepalive, so a lost last event cannot leave it hanging."""
    # A resumed stream opens with what it missed (nothing: a keepalive, so that it starts now).
    first = [_snapshot_item(snapshot, history_length)] if opening is None else opening or [StreamItem("keepalive")]
    for item in first:
        yield item
    if task_state(snapshot) in until or any(item.final for item in first):
        return
    last, version, sent = snapshot, task_version(snapshot), task_seq(snapshot)
    keepalive = a2a_settings.STREAM_KEEPALIVE
    while True:
        try:
            event = await asyncio.wait_for(events.get(), keepalive)
        except TimeoutError:
            stored = await events.read() if events.remote else None
            if stored is None or stored.version <= version:
                yield StreamItem("keepalive")
                continue
            event = stored
        if event.version <= version or event.kind == "task":
            continue  # already in the snapshot, or already sent
        told = await _told(events, event, last, version, sent, until)
        if told is None:
            continue
        items, event = told
        for item in items:
            yield item
            if item.final:
                return
        last, version = event.task, event.version
        sent = max(sent, task_seq(event.task))
        if task_state(event.task) in until:
            return


def _snapshot_item(snapshot: Task, history_length: int | None) -> StreamItem:
    return StreamItem("task", task=with_history(snapshot, history_length), seq=task_seq(snapshot) or None)


async def _told(
    events: Subscription, event: TaskEvent, last: Task, version: int, sent: int, until: frozenset[str]
) -> tuple[list[StreamItem], TaskEvent] | None:
    """The items ``event`` brings to a stream that sent ``last`` (version ``version``,
    event number ``sent``), and the event they came from (the task as stored, when it
    had to be read); None when it brings nothing."""
    if (entries := replay.logged(event, sent)) is not None:
        return [replay.item(event.task, e, until) for e in entries], event
    if event.partial is not None or (sent and event.kind != "sync"):  # the store's log tells what this one cannot
        rebuilt = _rebuild(last, event) if event.partial is not None and event.version == version + 1 else None
        if rebuilt is None:
            event = await events.read()
            if event.version <= version:
                return None
            if (entries := replay.logged(event, sent)) is not None:
                return [replay.item(event.task, e, until) for e in entries], event
        else:
            event = dataclasses.replace(event, task=rebuilt, partial=None)
    task = event.task
    settled = task_state(task) in until
    if event.kind == "sync" or event.version != version + 1:
        items = list(_catch_up(last, task, settled=settled))
    elif event.kind == "artifact" and event.artifact is not None:
        items = [
            StreamItem("artifact", task=task, artifact=event.artifact, append=event.append, last_chunk=event.last_chunk)
        ]
    else:
        items = [*_new_artifacts(last, task, last_chunk=True), StreamItem("status", task=task, final=settled)]
    if items and task_seq(task):  # caught up to the task's last event: a reconnection resumes after it
        items[-1] = dataclasses.replace(items[-1], seq=task_seq(task))
    return items, event


def _rebuild(last: Task, event: TaskEvent) -> Task | None:
    """``event``'s task with its artifacts, rebuilt from those of ``last`` (the version
    before it) and the event's chunk; None when they do not come out as the event says."""
    artifacts = last.get("artifacts") or []
    if event.kind == "artifact" and event.artifact is not None:
        artifacts = with_chunk(artifacts, event.artifact, event.append)
    if artifacts_shape(artifacts) != event.partial:
        return None
    return {**event.task, "artifacts": artifacts} if artifacts else event.task


def _new_artifacts(last: Task, task: Task, *, last_chunk: bool) -> Iterator[StreamItem]:
    """An update with the whole artifact for each artifact of ``task`` that ``last``
    did not have, or had otherwise."""
    before = {a.get("artifactId"): a for a in last.get("artifacts") or ()}
    for artifact in task.get("artifacts") or ():
        if before.get(artifact.get("artifactId")) != artifact:
            yield StreamItem("artifact", task=task, artifact=artifact, last_chunk=last_chunk)


def _catch_up(last: Task, task: Task, *, settled: bool) -> Iterator[StreamItem]:
    """What a stream that sent ``last`` sends when the next version it has is ``task``,
    some versions later: each new or changed artifact whole (not appended; a last
    chunk once the stream ends, ``settled``), then the status when it changed (always
    the last one)."""
    yield from _new_artifacts(last, task, last_chunk=settled)
    if settled or task.get("status") != last.get("status"):
        yield StreamItem("status", task=task, final=settled)


def resumed(task: Task, last: int | None, history_length: int | None) -> list[StreamItem] | None:
    """What a stream resumed after event number ``last`` opens with (resumable streams):
    the logged events after it, or the gap marker and the whole task when the log no
    longer reaches back to it; None for a new stream (it opens with the task)."""
    if last is None:
        return None
    seq = task_seq(task)
    if last > seq:
        raise InvalidParamsError(
            f"is {last}, but task {task['id']}'s last stream event is number {seq}", field="Last-Event-ID"
        )
    logged = replay.after(task, last)
    if logged is None:
        return replay.gap(with_history(task, history_length), last)
    return [replay.item(task, entry, TERMINAL_STATES) for entry in logged]


async def numbered(items: AsyncIterator[StreamItem], ctx: CallContext) -> AsyncIterator[StreamItem]:
    """``items``, each with its number in its metadata when the client activated the
    resumable-streams extension (``A2A-Extensions``); as they are otherwise."""
    if replay.URI not in ctx.extensions:
        async for item in items:
            yield item
        return
    try:
        async for item in items:
            yield replay.numbered(item)
    finally:
        await items.aclose()  # type: ignore[attr-defined]


async def settle(events: Subscription, task: Task) -> TaskEvent | None:
    """The event that says this turn of ``task`` (the version the caller's message
    saved) settled (terminal or interrupted); None when ``A2A_BLOCKING_TIMEOUT`` passed
    first (the task goes on in the background). Events of earlier versions are old
    news, late from their publisher: another turn's."""
    version = task_version(task)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(a2a_settings.BLOCKING_TIMEOUT):
            while True:
                event = await _next(events)
                if event.version > version and task_state(event.task) in SETTLED_STATES:
                    return event
    return None


def turn_answer(settled: TaskEvent | None, stored: Task) -> Task:
    """What a wait for one turn answers: ``stored`` (the task read after ``settled``,
    the event that settled the turn), unless another caller's turn began meanwhile;
    then the task as the turn's own end saved it. An event from another process leaves
    out the history (and, when big, the artifacts): they are taken from ``stored``, as
    far as that turn had them."""
    if settled is None or _turn(stored) == _turn(settled.task):
        return stored
    task = dict(settled.task)
    if "history" not in task:
        task["history"] = _history_before(stored, _turn(stored) - _turn(settled.task))
    if settled.partial is not None:
        task["artifacts"] = _artifacts_shaped(stored.get("artifacts") or [], settled.partial)
    return task


def _turn(task: Task) -> int:
    turn = task_call(task).get("turn")
    return turn if isinstance(turn, int) else 1


def _history_before(task: Task, later: int) -> list:
    """``task``'s history without the last ``later`` turns: each began with its caller's
    message, the only messages of the user role."""
    history = list(task.get("history") or ())
    for _ in range(max(later, 0)):
        starts = [i for i, message in enumerate(history) if message.get("role") == "user"]
        if not starts:
            break
        history = history[: starts[-1]]
    return history


def _artifacts_shaped(artifacts: list, shape: list) -> list:
    """The artifacts an event's ``shape`` (:func:`artifacts_shape`) says it had, from
    ``artifacts`` (later versions append parts; they are left out)."""
    by_id = {a.get("artifactId"): a for a in artifacts}
    return [
        {**by_id[artifact_id], "parts": (by_id[artifact_id].get("parts") or [])[:count]}
        for artifact_id, count in shape
        if artifact_id in by_id
    ]


async def _next(events: Subscription) -> TaskEvent:
    """The subscription's next event; with a cross-process event backend, the task as
    stored when nothing arrived for a keepalive period (an event may have been lost)."""
    while True:
        try:
            return await asyncio.wait_for(events.get(), a2a_settings.STREAM_KEEPALIVE)
        except TimeoutError:
            if events.remote:
                return await events.read()


def answered_at_once(task: Task, generation: int) -> bool:
    """Whether a long-poll past ``generation`` is answered with ``task`` without waiting:
    the task is past it, or terminal (it never moves again)."""
    return task_generation(task) > generation or lifecycle.is_terminal(task)


async def past(events: Subscription, task: Task, generation: int, load: Callable[[], Awaitable[Task]]) -> Task:
    """The task once its generation is past ``generation`` (A2A 1.1 long-poll): ``task``
    (read after ``events`` was subscribed: no change falls between) when it is, or when
    it is terminal (it never moves again); else the task ``load()`` reads when an event
    says it moved; else as it stands after ``A2A_LONG_POLL_TIMEOUT``. The wait holds no
    thread and reads the store only when the task moved; a client that leaves cancels it."""
    try:
        async with asyncio.timeout(a2a_settings.LONG_POLL_TIMEOUT):
            while not answered_at_once(task, generation):
                event = await events.get()  # (a "sync" event: the store says, whatever the bus lost)
                if event.kind == "sync" or task_generation(event.task) > generation:
                    task = await load()
    except TimeoutError:
        task = await load()  # the task as it stands
    return task
