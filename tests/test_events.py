"""The event backends (a2a/eventbackends) against the real Redis and PostgreSQL, and
the A2A_EVENTS setting (the stream logic that orders their events: test_events_follow.py).

Two backends on one channel stand for two processes: ``mine`` is this process's
(``A2A_EVENTS``), ``other`` publishes with another origin, as a second process would.
Each test has a channel of its own (``a2a-test-<uuid>:``), so tests running beside it
on the same Redis or PostgreSQL hear nothing of it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid

import psycopg
import pytest
import redis
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from a2a.core import replay
from a2a.core.eventbackends.base import BrokerBackend, encode, receive
from a2a.core.eventbackends.memory import MemoryEventBackend
from a2a.core.eventbackends.postgres import PostgresEventBackend, conninfo_for_alias
from a2a.core.eventbackends.redis import RedisEventBackend
from a2a.core.events import (
    RESYNC,
    Subscription,
    TaskEvent,
    bus,
    close_event_backend,
    get_event_backend,
    resolve_event_backend,
)
from a2a.ops import checks
from a2a.protocol.model import GetParams
from a2a.service import operations
from stores.backends import get_task_store
from tests.event_builders import art, task

REDIS_URL = os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = django_settings.POSTGRES_URL
BROKERS = ["redis"] + (["postgres"] if POSTGRES_URL else [])


def make_backend(kind: str, channel: str) -> BrokerBackend:
    backend = resolve_event_backend(REDIS_URL if kind == "redis" else POSTGRES_URL, channel)
    assert isinstance(backend, RedisEventBackend if kind == "redis" else PostgresEventBackend)
    return backend


def connection_name(kind: str, channel: str) -> str:
    return f"a2a-events:{channel}"


def connections(kind: str, channel: str) -> list[int]:
    """The ids (Redis) or pids (PostgreSQL) of the backends' connections on ``channel``."""
    name = connection_name(kind, channel)
    if kind == "redis":
        with redis.Redis.from_url(REDIS_URL) as r:
            return [int(c["id"]) for c in r.client_list() if c.get("name") == name]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchall()
    return [row[0] for row in rows]


def kill_connections(kind: str, channel: str) -> int:
    """Drop every connection of the backends on ``channel`` (the broker's side)."""
    ids = connections(kind, channel)
    if kind == "redis":
        with redis.Redis.from_url(REDIS_URL) as r:
            for client_id in ids:
                r.client_kill_filter(_id=str(client_id))
    else:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            for pid in ids:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return len(ids)


@pytest.fixture(params=BROKERS)
def kind(request) -> str:
    return request.param


@pytest.fixture
def channel() -> str:
    return f"a2a-test-{uuid.uuid4().hex}:"


@pytest.fixture
def pair(kind, channel, settings):
    """(mine, other): this process's backend (A2A_EVENTS) and a second "process"."""
    mine, other = make_backend(kind, channel), make_backend(kind, channel)
    other.origin = "another-process"
    settings.A2A_EVENTS = mine
    assert get_event_backend() is mine
    yield mine, other
    other.close(2)
    mine.close(2)


async def next_item(sub: Subscription, timeout: float = 10.0):
    return await asyncio.wait_for(sub.queue.get(), timeout)


async def next_event(sub: Subscription, timeout: float = 10.0) -> TaskEvent:
    """The next event, skipping resync markers."""
    while True:
        item = await next_item(sub, timeout)
        if isinstance(item, TaskEvent):
            return item


async def heard(sub: Subscription) -> None:
    """Wait until the process's listener hears the channel (it then resyncs subscribers)."""
    assert await next_item(sub) is RESYNC


def drained(backend: BrokerBackend, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while backend.unsent() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert not backend.unsent(), "the backend did not send its events"


# === publish / subscribe on the real brokers ===============================================


def test_events_of_another_process_arrive_in_order(pair):
    _mine, other = pair
    task_id = str(uuid.uuid4())

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            for version in range(1, 201):
                other.publish(TaskEvent(task(task_id, version), kind="artifact", artifact={"artifactId": "a"}))
            other.publish(TaskEvent(task(str(uuid.uuid4()), 1)))  # another task's: not for this subscriber
            other.publish(TaskEvent(task(task_id, 201, "completed")))
            return [await next_event(sub) for _ in range(201)]

    events = asyncio.run(run())
    assert [e.version for e in events] == list(range(1, 202))
    assert {e.task["id"] for e in events} == {task_id}
    assert events[0].kind == "artifact" and events[0].artifact == {"artifactId": "a"}
    assert events[-1].kind == "status" and events[-1].task["status"]["state"] == "completed"
    assert bus.subscriber_count(task_id) == 0


def test_own_events_are_delivered_once_not_echoed(pair):
    mine, other = pair
    task_id = str(uuid.uuid4())

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            for version in (1, 2, 3):
                bus.publish(task(task_id, version))  # this process: delivered at once, and sent
            await asyncio.to_thread(drained, mine)
            other.publish(TaskEvent(task(task_id, 4)))  # reaches us after our own three came back
            return [await next_event(sub) for _ in range(4)], sub.queue.qsize()

    events, left = asyncio.run(run())
    assert [e.version for e in events] == [1, 2, 3, 4]
    assert left == 0


def test_listeners_hear_only_this_process_s_transitions(pair):
    """Push delivery and metrics listen on the bus: a version another process saved
    (and notified its own webhooks of) is never heard by this process's listeners."""
    _mine, other = pair
    task_id = str(uuid.uuid4())
    heard_by_listener: list[int] = []

    def listener(t: dict) -> None:
        heard_by_listener.append(t["_version"])

    bus.add_listener(listener)
    try:

        async def run():
            with bus.subscribe(task_id) as sub:
                await heard(sub)
                other.publish(TaskEvent(task(task_id, 1)))
                await next_event(sub)
                bus.publish(task(task_id, 2))
                await next_event(sub)

        asyncio.run(run())
    finally:
        bus.remove_listener(listener)
    assert heard_by_listener == [2]


def test_a_big_event(pair, kind):
    """Redis carries a 2 MB task whole; a NOTIFY cannot (8000 bytes): it carries a
    reference, and the subscriber reads the task from the store."""
    _mine, other = pair
    task_id = str(uuid.uuid4())
    big = task(task_id, 2, artifacts=[{"artifactId": "big", "parts": [{"kind": "text", "text": "x" * 2_000_000}]}])
    get_task_store().save(big)

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            other.publish(TaskEvent(big, kind="artifact", artifact=big["artifacts"][0]))
            return await sub.get()

    event = asyncio.run(run())
    assert event.task == big
    if kind == "redis":
        assert event.kind == "artifact" and event.artifact == big["artifacts"][0]
    else:
        assert event.kind == "sync"  # read from the store


def test_the_notify_limit(pair, kind):
    """An event of 7999 bytes travels whole on both brokers; one of 8000 bytes, too
    big for a NOTIFY, travels as a reference on PostgreSQL."""
    _mine, other = pair
    task_id = str(uuid.uuid4())
    room = 7999 - len(encode(TaskEvent(task(task_id, 1, pad="")), other.origin))
    fits, too_big = task(task_id, 1, pad="y" * room), task(task_id, 2, pad="y" * (room + 1))
    sizes = len(encode(TaskEvent(fits), other.origin)), len(encode(TaskEvent(too_big), other.origin))
    assert sizes == (7999, 8000)
    get_task_store().save(too_big)

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            other.publish(TaskEvent(fits))
            other.publish(TaskEvent(too_big))
            return [await next_item(sub), await next_item(sub)]

    first, second = asyncio.run(run())
    assert isinstance(first, TaskEvent) and first.task == fits
    if kind == "redis":
        assert isinstance(second, TaskEvent) and second.task == too_big
    else:
        assert second is RESYNC


def test_an_event_with_big_artifacts_leaves_them_behind_on_postgres(pair, kind):
    """A task whose artifacts are too big for a NOTIFY: the event carries the task
    without them, their shape, and the chunk; Redis carries everything. Neither
    carries the history."""
    _mine, other = pair
    task_id = str(uuid.uuid4())
    artifacts = [art("a", "x" * 20_000, "y")]
    version = task(task_id, 3, artifacts=artifacts, history=[{"messageId": "m"}])

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            other.publish(TaskEvent(version, "artifact", art("a", "y"), append=True))
            return await next_event(sub)

    event = asyncio.run(run())
    assert event.artifact == art("a", "y") and event.append and event.version == 3
    assert "history" not in event.task
    if kind == "redis":
        assert event.partial is None and event.task["artifacts"] == artifacts
    else:
        assert event.partial == [["a", 2]] and "artifacts" not in event.task


def test_the_listener_reconnects_and_subscribers_catch_up(pair, kind, channel):
    """The broker drops both connections; events published meanwhile by no one reach
    the subscriber through the store (a resync), and later events arrive again."""
    mine, other = pair
    task_id = str(uuid.uuid4())

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            other.publish(TaskEvent(task(task_id, 1)))
            assert (await next_event(sub)).version == 1
            before = mine.reconnections
            assert await asyncio.to_thread(kill_connections, kind, channel) >= 2  # both backends' listener/publisher
            assert await next_item(sub) is RESYNC  # heard again: read the store
            assert mine.reconnections > before
            other.publish(TaskEvent(task(task_id, 2)))  # its publisher reconnects too
            return await next_event(sub)

    assert asyncio.run(run()).version == 2


def test_the_publisher_resends_after_its_connection_drops(pair, kind, channel):
    _mine, other = pair
    task_id = str(uuid.uuid4())

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            other.publish(TaskEvent(task(task_id, 1)))
            assert (await next_event(sub)).version == 1
            # Only the publisher's connection: the listener (ours) stays.
            listener_ids = set(await asyncio.to_thread(connections, kind, channel))
            other.publish(TaskEvent(task(task_id, 2)))
            await next_event(sub)
            publisher_ids = set(await asyncio.to_thread(connections, kind, channel)) - listener_ids
            await asyncio.to_thread(_kill_ids, kind, publisher_ids)
            for version in (3, 4, 5):
                other.publish(TaskEvent(task(task_id, version)))
            return [(await next_event(sub)).version for _ in range(3)]

    assert asyncio.run(run()) == [3, 4, 5]


def _kill_ids(kind: str, ids: set[int]) -> None:
    if kind == "redis":
        with redis.Redis.from_url(REDIS_URL) as r:
            for client_id in ids:
                r.client_kill_filter(_id=str(client_id))
    else:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            for pid in ids:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_stream_gets_the_final_state_lost_while_disconnected(pair, kind, channel, settings):
    """SubscribeToTask on a task another process runs; the connection drops and the
    completion is saved while no one listens: the stream still ends with it."""
    mine, other = pair
    settings.A2A_STREAM_KEEPALIVE = 30.0  # the resync, not the idle check, must find it
    store = get_task_store()
    task_id = str(uuid.uuid4())
    store.save(replay.follow(task(task_id, 1, history=[])))  # followed already: the subscription saves nothing

    async def run():
        stream = operations.subscribe_to_task(GetParams(id=task_id))
        items = [await stream.__anext__()]  # the snapshot
        await asyncio.to_thread(mine.listening.wait, 10)
        other.publish(TaskEvent(task(task_id, 2), kind="status"))
        items.append(await asyncio.wait_for(stream.__anext__(), 10))
        # The other process completes the task, but its event is lost (the broker drops
        # the connections before delivering it).
        store.save(task(task_id, 3, "completed", artifacts=[{"artifactId": "r", "parts": []}]))
        await asyncio.to_thread(kill_connections, kind, channel)
        items += [item async for item in stream]
        return items

    items = asyncio.run(asyncio.wait_for(run(), 30))
    assert [i.kind for i in items] == ["task", "status", "artifact", "status"]
    assert items[-1].final and items[-1].task["status"]["state"] == "completed"
    assert items[2].artifact == {"artifactId": "r", "parts": []} and items[2].last_chunk


def test_subscribers_share_one_listener_and_leave_nothing_behind(pair, kind, channel):
    _mine, other = pair
    task_ids = [str(uuid.uuid4()) for _ in range(50)]

    async def subscribe_all(round_: int) -> None:
        for task_id in task_ids:
            with bus.subscribe(task_id) as sub:
                other.publish(TaskEvent(task(task_id, round_)))
                await next_event(sub)

    async def run():
        with bus.subscribe(task_ids[0]) as sub:
            await heard(sub)
        await subscribe_all(1)
        threads = threading.active_count()
        for round_ in (2, 3, 4):
            await subscribe_all(round_)
        return threads

    threads = asyncio.run(run())
    assert threading.active_count() == threads  # no thread per subscriber
    assert all(bus.subscriber_count(t) == 0 for t in task_ids)
    assert len(connections(kind, channel)) == 2  # our listener, the other process's publisher
    other.close(2)
    deadline = time.monotonic() + 10
    while len(connections(kind, channel)) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(connections(kind, channel)) == 1  # our one listener


def test_a_subscription_is_ready_once_the_channel_is_heard(pair):
    async def run():
        with bus.subscribe(str(uuid.uuid4())) as sub:
            return await sub.ready(10), await next_item(sub)

    assert asyncio.run(run()) == (True, RESYNC)


def test_a_subscription_to_a_broker_that_is_down_is_not_ready_but_works(settings, channel):
    """Nothing listens (Redis is not there): ready() gives up after its timeout and the
    stream goes on with what this process publishes; the listener keeps trying."""
    down = resolve_event_backend("redis://127.0.0.1:1/0", channel)
    settings.A2A_EVENTS = down
    task_id = str(uuid.uuid4())

    async def run():
        with bus.subscribe(task_id) as sub:
            ready = await sub.ready(0.3)
            bus.publish(task(task_id, 1))
            return ready, await next_event(sub)

    try:
        ready, event = asyncio.run(run())
        assert not ready and event.version == 1
        assert down.reconnections >= 1 and not down.listening.is_set()
    finally:
        down.close(0.5)


def test_a_forked_child_publishes_on_its_own_and_flushes_before_exiting(pair):
    """An RQ-style work-horse: forked from a process whose backend already runs, it
    publishes through a thread of its own, under an origin of its own (the parent
    does not take the child's events for its own), and flushes before ``os._exit``."""
    _mine, _other = pair
    task_id = str(uuid.uuid4())
    from a2a.core.events import flush_events

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            bus.publish(task(task_id, 1))  # the parent's thread is running now
            assert (await next_event(sub)).version == 1
            pid = os.fork()
            if pid == 0:  # the child
                code = 1
                try:
                    bus.publish(task(task_id, 2))
                    code = 0 if flush_events(10) else 2
                finally:
                    os._exit(code)
            _, status = await asyncio.to_thread(os.waitpid, pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            return await next_event(sub)

    assert asyncio.run(run()).version == 2


def test_close_sends_what_is_queued(pair):
    _mine, other = pair
    task_id = str(uuid.uuid4())

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            for version in range(1, 51):
                other.publish(TaskEvent(task(task_id, version)))
            await asyncio.to_thread(other.close, 5)
            return [(await next_event(sub)).version for _ in range(50)]

    assert asyncio.run(run()) == list(range(1, 51))


def test_events_left_by_a_hasty_close_go_out_with_the_next_publish(pair):
    _mine, other = pair
    task_id = str(uuid.uuid4())

    async def run():
        with bus.subscribe(task_id) as sub:
            await heard(sub)
            for version in range(1, 301):
                other.publish(TaskEvent(task(task_id, version)))
            await asyncio.to_thread(other.close, 0)  # no grace: some are left unsent
            other.publish(TaskEvent(task(task_id, 301)))  # a new thread sends them all
            versions = []
            while not versions or versions[-1] < 301:
                versions.append((await next_event(sub)).version)
            return versions

    versions = asyncio.run(run())
    # What a stream keeps (a batch cut short may come twice): every version, in order.
    kept = [v for i, v in enumerate(versions) if v > max(versions[:i], default=0)]
    assert kept == list(range(1, 302))


def test_a_malformed_message_is_dropped_and_logged(caplog):
    receive(b"not json", "me")
    receive(b'{"o": "x", "t": {"no": "id"}}', "me")
    assert caplog.text.count("dropped a malformed event message") == 2


# === ordering, gaps and catching up: the stream's side (no broker needed) ===================


def test_the_default_is_in_process(settings):
    backend = get_event_backend()
    assert isinstance(backend, MemoryEventBackend) and not backend.remote
    close_event_backend()  # nothing to close


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("memory", MemoryEventBackend),
        ("redis://127.0.0.1:6379/3", RedisEventBackend),
        ("rediss://h:6380/0", RedisEventBackend),
        ("postgresql://u@h/db", PostgresEventBackend),
        ("postgres://u@h/db", PostgresEventBackend),
        ("a2a.core.eventbackends.memory.MemoryEventBackend", MemoryEventBackend),
    ],
)
def test_accepted_forms(spec, cls):
    backend = resolve_event_backend(spec, "chan")
    assert type(backend) is cls
    if isinstance(backend, BrokerBackend):
        assert backend.channel == "chan"


@pytest.mark.skipif(not POSTGRES_URL, reason="needs A2A_TEST_POSTGRES_URL (the 'postgres' database alias)")
def test_a_database_alias():
    backend = resolve_event_backend("postgres:postgres", "chan")
    assert isinstance(backend, PostgresEventBackend) and backend.alias == "postgres"
    conninfo = conninfo_for_alias("postgres")
    assert "host=127.0.0.1" in conninfo and "dbname=" in conninfo


@pytest.mark.parametrize(
    ("spec", "channel", "message"),
    [
        ("kafka", "c", "Unknown A2A_EVENTS 'kafka'"),
        ("postgres", "c", "needs a PostgreSQL database, but 'default' is 'django.db.backends.sqlite3'"),
        ("postgres:nope", "c", "names database 'nope', which is not in DATABASES"),
        ("a2a.nothing.Here", "c", "cannot be imported"),
        ("a2a.core.events.TaskEvent", "c", "is not a a2a.core.events.EventBackend subclass"),
        (42, "c", "A2A_EVENTS cannot be a int"),
        ("memory", "", "A2A_EVENTS_CHANNEL must be a non-empty string"),
        ("memory", "x" * 64, "at most 63 bytes"),
        ("memory", None, "A2A_EVENTS_CHANNEL must be"),
    ],
)
def test_refused_forms_name_the_problem(settings, spec, channel, message):
    with pytest.raises(ImproperlyConfigured, match="A2A_EVENTS") as raised:
        resolve_event_backend(spec, channel)
    assert message in str(raised.value)
    settings.A2A_EVENTS = spec
    settings.A2A_EVENTS_CHANNEL = channel
    [error] = checks.check_events()
    assert error.id == "a2a.E060" and message in error.msg


def test_a_missing_redis_package_is_explained(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(ImproperlyConfigured, match="the redis package, which is missing"):
        resolve_event_backend("redis://127.0.0.1:6379/0", "c")


def test_w060_several_processes_on_the_in_process_bus(settings, monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    assert checks.check_events() == []
    settings.A2A_EXPECT_WORKERS = 3
    [warning] = checks.check_events()
    assert warning.id == "a2a.W060" and "A2A_EXPECT_WORKERS=3" in warning.msg
    settings.A2A_EVENTS = REDIS_URL
    assert checks.check_events() == []


def test_changing_the_setting_closes_the_old_backend(settings, channel):
    settings.A2A_EVENTS = REDIS_URL
    settings.A2A_EVENTS_CHANNEL = channel
    backend = get_event_backend()
    assert isinstance(backend, RedisEventBackend) and backend.channel == channel
    backend.publish(TaskEvent(task("t", 1)))
    drained(backend)
    assert backend._loop_thread.running
    settings.A2A_EVENTS = "memory"
    assert isinstance(get_event_backend(), MemoryEventBackend)
    assert backend._loop_thread.loop is None and not backend._loop_thread.thread_alive


def test_the_start_up_log_names_the_backend_and_warns_with_siblings(settings, monkeypatch, caplog, tmp_path, channel):
    import logging

    from a2a.ops import deployment

    settings.TASK_STORE = f"file:{tmp_path}"
    monkeypatch.setattr(deployment, "several_workers", lambda: "uvicorn runs 4 workers")
    with caplog.at_level(logging.INFO, logger="a2a"):
        deployment.log_startup()
    assert "events <MemoryEventBackend>" in caplog.text
    assert caplog.records[-1].levelname == "WARNING" and "A2A_EVENTS keeps" in caplog.records[-1].message
    caplog.clear()
    settings.A2A_EVENTS = REDIS_URL
    settings.A2A_EVENTS_CHANNEL = channel
    with caplog.at_level(logging.INFO, logger="a2a"):
        deployment.log_startup()
    assert caplog.records[-1].levelname == "INFO" and "RedisEventBackend" in caplog.text
