"""The stream logic that orders a task's events, skips old and repeated versions, and
catches up from the store after a gap or a resync (a2a.service.streams.follow)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from a2a.core.events import (
    RESYNC,
    Subscription,
    TaskEvent,
)
from a2a.protocol.errors import TaskNotFoundError
from a2a.service import streams
from stores.backends import get_task_store
from tests.event_builders import art, task


def follow(snapshot: dict, feed: list, *, remote: bool = False, store_task: dict | None = None) -> list:
    """Run streams.follow over a subscription fed ``feed`` (events, or RESYNC)."""

    async def run():
        sub = Subscription(snapshot["id"], remote=remote)
        for item in feed:
            sub.queue.put_nowait(item)
        return [item async for item in streams.follow(sub, snapshot, None)]

    if store_task is not None:
        get_task_store().save(store_task)
    return asyncio.run(asyncio.wait_for(run(), 10))


def test_events_in_order_are_sent_as_they_are():
    snap = task("t1", 2)
    v3 = task("t1", 3, artifacts=[art("a", "1")])
    v4 = task("t1", 4, artifacts=[art("a", "1", "2")])
    v5 = task("t1", 5, "completed", artifacts=[art("a", "1", "2"), art("r", "done")])
    items = follow(
        snap,
        [
            TaskEvent(v3, "artifact", art("a", "1")),
            TaskEvent(v4, "artifact", art("a", "2"), append=True, last_chunk=True),
            TaskEvent(v5),
        ],
    )
    assert [(i.kind, i.append) for i in items] == [
        ("task", False),
        ("artifact", False),
        ("artifact", True),
        ("artifact", False),
        ("status", False),
    ]
    assert items[2].artifact == art("a", "2") and items[2].last_chunk
    assert items[3].artifact == art("r", "done")
    assert items[4].final


def test_old_and_repeated_versions_are_skipped():
    snap = task("t1", 3)
    items = follow(
        snap,
        [
            TaskEvent(task("t1", 2)),  # older than the snapshot
            TaskEvent(task("t1", 3)),  # the snapshot itself
            TaskEvent(task("t1", 4, status={"state": "working", "message": "m"})),
            TaskEvent(task("t1", 4, status={"state": "working", "message": "m"})),  # twice (local and remote)
            TaskEvent(task("t1", 5, "completed")),
        ],
    )
    assert [i.kind for i in items] == ["task", "status", "status"]
    assert items[1].task["_version"] == 4 and items[2].final


def test_a_gap_catches_up_with_whole_artifacts_and_drops_the_late_version():
    snap = task("t1", 1, artifacts=[art("a", "1")])
    v3 = task("t1", 3, artifacts=[art("a", "1", "2", "3")])
    items = follow(
        snap,
        [
            TaskEvent(v3, "artifact", art("a", "3"), append=True),  # v2 (chunk "2") is missing
            TaskEvent(task("t1", 2, artifacts=[art("a", "1", "2")]), "artifact", art("a", "2"), append=True),  # late
            TaskEvent(task("t1", 4, "completed", artifacts=v3["artifacts"])),
        ],
    )
    assert [i.kind for i in items] == ["task", "artifact", "status"]
    whole = items[1]
    assert whole.artifact == art("a", "1", "2", "3") and not whole.append and not whole.last_chunk
    assert items[2].final


def test_partial_events_are_rebuilt_from_the_previous_version():
    """Events without their task's artifacts (too big for a NOTIFY): the stream
    rebuilds the artifacts from the version before and the chunk, and sends the
    updates as they are; when the shape does not match, it reads the store."""
    snap = task("t1", 1, artifacts=[art("a", "1")])
    v2 = TaskEvent(task("t1", 2), "artifact", art("a", "2"), append=True, partial=[["a", 2]])
    v3 = TaskEvent(task("t1", 3, status={"state": "working", "message": "m"}), partial=[["a", 2]])
    v4 = TaskEvent(task("t1", 4, "completed"), partial=[["a", 2], ["r", 1]])  # a result artifact came too
    stored = task("t1", 4, "completed", artifacts=[art("a", "1", "2"), art("r", "done")])
    items = follow(snap, [v2, v3, v4], store_task=stored)
    assert [(i.kind, i.append) for i in items] == [
        ("task", False),
        ("artifact", True),
        ("status", False),
        ("artifact", False),
        ("status", False),
    ]
    assert items[1].artifact == art("a", "2")
    assert items[2].task["artifacts"] == [art("a", "1", "2")]
    assert items[3].artifact == art("r", "done") and items[4].final


def test_a_partial_event_after_a_gap_reads_the_store():
    snap = task("t1", 1, artifacts=[art("a", "1")])
    stored = task("t1", 3, artifacts=[art("a", "1", "2", "3")])
    v3 = TaskEvent(task("t1", 3), "artifact", art("a", "3"), append=True, partial=[["a", 3]])
    v4 = TaskEvent(task("t1", 4, "completed"), partial=[["a", 3]])
    items = follow(snap, [v3, v4], store_task=stored)
    assert [i.kind for i in items] == ["task", "artifact", "status"]
    assert items[1].artifact == art("a", "1", "2", "3") and not items[1].append
    assert items[2].final and items[2].task["artifacts"] == stored["artifacts"]


def test_a_resync_reads_the_store():
    snap = task("t1", 1)
    stored = task("t1", 7, "input-required", artifacts=[art("x", "big")])
    items = follow(snap, [RESYNC, RESYNC], store_task=stored)
    assert [i.kind for i in items] == ["task", "artifact", "status"]
    assert items[1].artifact == art("x", "big") and items[1].last_chunk  # settled: nothing more comes
    assert items[2].final and items[2].task["status"]["state"] == "input-required"


def test_a_resync_with_nothing_new_sends_nothing():
    snap = task("t1", 4)
    items = follow(snap, [RESYNC, TaskEvent(task("t1", 5, "completed"))], store_task=snap)
    assert [i.kind for i in items] == ["task", "status"]


def test_a_resync_for_a_deleted_task_ends_the_stream_with_task_not_found():
    snap = task("gone-" + uuid.uuid4().hex, 1)
    with pytest.raises(TaskNotFoundError):
        follow(snap, [RESYNC])


def test_an_idle_remote_stream_looks_at_the_store(settings):
    """The last event was lost (no broker message, no resync): the keepalive-time look
    at the store ends the stream anyway; a stream on the in-process bus does not look."""
    settings.A2A_STREAM_KEEPALIVE = 0.05
    snap = task("t1", 1)
    get_task_store().save(task("t1", 2, "completed"))
    items = follow(snap, [], remote=True)
    assert [i.kind for i in items] == ["task", "status"] and items[-1].final

    async def local():
        sub = Subscription("t1")
        stream = streams.follow(sub, snap, None)
        return [await stream.__anext__(), await stream.__anext__()]

    assert [i.kind for i in asyncio.run(local())] == ["task", "keepalive"]


# === a wait for one turn (a blocking SendMessage) ===================================================


def turn(version: int, state: str, turn_number: int, *texts: str, **extra) -> dict:
    """The task at ``version``, in turn ``turn_number``; ``texts``: its history, ``user:``
    or ``agent:`` each."""
    history = [{"role": role, "parts": [{"kind": "text", "text": t}]} for role, t in (x.split(":") for x in texts)]
    return task("t1", version, state, _call={"turn": turn_number}, history=history, **extra)


def settle(began: dict, feed: list) -> TaskEvent | None:
    async def run():
        sub = Subscription("t1")
        for item in feed:
            sub.queue.put_nowait(item)
        return await streams.settle(sub, began)

    return asyncio.run(asyncio.wait_for(run(), 10))


def test_a_wait_for_a_turn_skips_the_late_event_of_the_turn_before():
    """The question that ended the turn before, published late (after this turn's
    message was saved), does not end this turn's wait."""
    began = turn(5, "submitted", 2, "user:a", "agent:q", "user:b")
    late = TaskEvent(turn(4, "input-required", 1, "user:a", "agent:q"))
    own = TaskEvent(turn(7, "input-required", 2, "user:a", "agent:q", "user:b", "agent:q2"))
    working = TaskEvent(turn(6, "working", 2))
    assert settle(began, [late, working, own]) is own


def test_a_turn_ended_before_the_next_began_answers_the_task_as_stored():
    own = TaskEvent(turn(7, "input-required", 2, "user:a", "agent:q", "user:b", "agent:q2"))
    canceled = turn(8, "canceled", 2, "user:a", "agent:q", "user:b", "agent:q2")
    assert streams.turn_answer(own, canceled) is canceled  # the same turn, later: as it is now
    assert streams.turn_answer(None, canceled) is canceled  # (no end heard: the timeout)


def test_a_turn_followed_by_another_callers_answers_as_it_ended():
    """Another caller's follow-up began turn 3 before this caller read the task: the
    answer is turn 2 as it ended, its history up to its own end, never turn 3's state."""
    stored = turn(9, "working", 3, "user:a", "agent:q", "user:b", "agent:q2", "user:c", artifacts=[art("a", "1", "2")])
    local = TaskEvent(turn(7, "input-required", 2, "user:a", "agent:q", "user:b", "agent:q2"))
    assert streams.turn_answer(local, stored) == local.task
    # From another process: no history, and (too big for the broker) no artifacts, only their shape.
    carried = {k: v for k, v in local.task.items() if k != "history"}
    remote = TaskEvent(carried, partial=[["a", 1]])
    answer = streams.turn_answer(remote, stored)
    assert answer["status"]["state"] == "input-required" and answer["_version"] == 7
    assert [m["parts"][0]["text"] for m in answer["history"]] == ["a", "q", "b", "q2"]
    assert answer["artifacts"] == [art("a", "1")]


# === the setting ==================================================================================
