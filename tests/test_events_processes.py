"""Streams across processes, end to end: two uvicorn servers share one task store and
one event backend; a task sent to B (and run there) is streamed from A, every event in
order, with no gap between the snapshot and the live events; the webhook hears each
version once, from B alone.

Runs on the file store with Redis pub/sub and, when A2A_TEST_POSTGRES_URL is set, on
the ORM store on PostgreSQL with LISTEN/NOTIFY.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from django.conf import settings

from a2a.testing import WireClient
from a2a.testing.client import rpc_body
from tests.helpers import live_result as rpc
from tests.push.support import Receiver
from tests.server import ServerURL, manage, postgres_database, running_server, site_env

pytestmark = pytest.mark.slow

REDIS_URL = os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
V10 = {"A2A-Version": "1.0"}
SETUPS = ["file+redis"] + (["orm-postgres+postgres"] if settings.POSTGRES_URL else [])


@pytest.fixture(scope="module", params=SETUPS)
def servers(request, tmp_path_factory) -> Iterator[tuple[ServerURL, ServerURL]]:
    """Servers A and B, sharing the store and the event backend."""
    tmp = tmp_path_factory.mktemp("events")
    common = {
        "A2A_HANDLER": "tests.handlers.scripted",
        "A2A_EVENTS_CHANNEL": f"a2a-test-{uuid.uuid4().hex}:",
        "A2A_PUSH_ALLOW_PRIVATE_URLS": "true",
        "A2A_PUSH_RETRY_DELAY": "0.05",
        "A2A_STREAM_KEEPALIVE": "5",
    }
    with contextlib.ExitStack() as stack:
        if request.param == "file+redis":
            env = site_env(
                TASK_STORE=f"file:{tmp / 'tasks'}",
                DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
                A2A_EVENTS=REDIS_URL,
                **common,
            )
        else:
            database = stack.enter_context(postgres_database(settings.POSTGRES_URL, "a2a_events"))
            env = site_env(TASK_STORE="orm", DATABASE_URL=database, A2A_EVENTS="postgres", **common)
        manage("migrate", "--noinput", env=env)
        a = stack.enter_context(running_server(env, log=tmp / "a.log"))
        b = stack.enter_context(running_server(env, log=tmp / "b.log"))
        yield a, b


def wait_state(base: str, task_id: str, state: str) -> dict:
    deadline = time.monotonic() + 15
    while True:
        task = rpc(base, "GetTask", {"id": task_id})
        if task["status"]["state"] == state:
            return task
        assert time.monotonic() < deadline, task
        time.sleep(0.02)


def subscribe(base: str, task_id: str, on_first=None) -> list[dict]:
    """SubscribeToTask: every SSE data frame's result, until the server ends the stream."""
    events = []
    body = rpc_body("SubscribeToTask", {"id": task_id}, "s")
    with httpx.stream("POST", f"{base}/a2a/", json=body, headers=V10, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                frame = orjson.loads(line[6:])
                assert "result" in frame, frame
                events.append(frame["result"])
                if on_first is not None and len(events) == 1:
                    on_first()
    return events


def describe(result: dict) -> str:
    ((key, value),) = result.items()
    if key in ("task", "statusUpdate"):
        message = (value["status"].get("message") or {}).get("parts") or [{}]
        state = value["status"]["state"].removeprefix("TASK_STATE_")
        return f"{key}:{state}:{message[0].get('text', '')}"
    artifact = value["artifact"]
    texts = "".join(p["text"] for p in artifact["parts"])
    return f"artifact:{artifact.get('artifactId') if value.get('append') else ''}:{texts}" + (
        ":append" if value.get("append") else ""
    )


def test_a_stream_on_a_hears_every_event_of_a_task_run_by_b(servers, tmp_path):
    a, b = servers
    gate = tmp_path / "gate"
    script = f"wait:{gate};progress:one;artifact:first;chunk:c:aa;chunk:c:bb;last:c:cc;progress:two"
    task = WireClient(base_url=b).send(script, blocking=False)["task"]
    wait_state(a, task["id"], "TASK_STATE_WORKING")  # B runs it; A sees it in the shared store
    receiver = Receiver()
    try:
        rpc(a, "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": receiver.url()})
        events = subscribe(a, task["id"], on_first=gate.touch)
        seen = [describe(e) for e in events]
        assert seen[0] == "task:WORKING:"
        assert seen[1:] == [
            "statusUpdate:WORKING:one",
            "artifact::first",
            "artifact::aa",
            "artifact:c:bb:append",
            "artifact:c:cc:append",
            "statusUpdate:WORKING:two",
            f"artifact::done: {script}",
            "statusUpdate:COMPLETED:",
        ]
        assert events[-1]["statusUpdate"]["taskId"] == task["id"]
        # The webhook: one POST per version saved since the config, all from B (the
        # process that saved them); A, which heard every one of them, sent none.
        hits = receiver.wait_for(7)
        time.sleep(0.5)  # anything extra would have come by now
        assert len(receiver.hits) == 7, [h.state for h in receiver.hits]
        assert [h.state for h in hits] == ["TASK_STATE_WORKING"] * 6 + ["TASK_STATE_COMPLETED"]
        bodies = [orjson.dumps(h.body, option=orjson.OPT_SORT_KEYS) for h in receiver.hits]
        assert len(set(bodies)) == 7  # seven versions, none twice
    finally:
        receiver.close()


def test_no_gap_between_the_snapshot_and_the_live_events(servers):
    """Subscribe on A while B saves a progress update every few milliseconds: after the
    snapshot's step k the stream has k+1, k+2, ... to the last, none missing or twice."""
    a, b = servers
    steps = 150
    task = WireClient(base_url=b).send(
        ";".join(f"progress:{i};sleep:0.004" for i in range(1, steps + 1)), blocking=False
    )["task"]
    wait_state(a, task["id"], "TASK_STATE_WORKING")
    seen = [describe(e) for e in subscribe(a, task["id"])]
    first = seen[0].rsplit(":", 1)[1]
    start = int(first) if first else 0
    assert start < steps, "the task finished before the subscription: make the script longer"
    progress = [s for s in seen[1:] if s.startswith("statusUpdate:WORKING:")]
    assert [int(s.rsplit(":", 1)[1]) for s in progress] == list(range(start + 1, steps + 1))
    assert seen[-1] == "statusUpdate:COMPLETED:"


def test_several_subscribers_on_both_servers(servers, tmp_path):
    """Four streams, two on each server, on one task: the same events for each."""
    a, b = servers
    gate = tmp_path / "gate"
    task = WireClient(base_url=a).send(f"wait:{gate};progress:x;artifact:y;progress:z", blocking=False)["task"]
    wait_state(b, task["id"], "TASK_STATE_WORKING")
    results: dict[int, list[str]] = {}
    subscribed = threading.Barrier(5)

    def follow(i: int, base: str) -> None:
        results[i] = [describe(e) for e in subscribe(base, task["id"], on_first=subscribed.wait)]

    threads = [threading.Thread(target=follow, args=(i, base)) for i, base in enumerate((a, a, b, b))]
    for thread in threads:
        thread.start()
    subscribed.wait(15)
    Path(gate).touch()
    for thread in threads:
        thread.join(30)
    assert len(results) == 4
    assert all(r == results[0] for r in results.values()), results
    assert results[0][1:] == [
        "statusUpdate:WORKING:x",
        "artifact::y",
        "statusUpdate:WORKING:z",
        f"artifact::done: wait:{gate};progress:x;artifact:y;progress:z",
        "statusUpdate:COMPLETED:",
    ]


def test_a_cancel_on_a_ends_a_stream_on_b_while_b_saves_progress(servers):
    """B runs the task and saves progress every few milliseconds; A cancels it: the two
    processes' versions may cross on the broker, and the stream on B still ends once,
    on canceled (B's later progress is refused: a terminal state is final)."""
    a, b = servers
    task = WireClient(base_url=b).send(";".join(f"progress:{i};sleep:0.005" for i in range(1, 400)), blocking=False)[
        "task"
    ]
    wait_state(b, task["id"], "TASK_STATE_WORKING")

    def cancel_after_a_while() -> None:
        time.sleep(0.3)
        canceled = rpc(a, "CancelTask", {"id": task["id"]})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"

    canceller = threading.Thread(target=cancel_after_a_while)
    seen = [describe(e) for e in subscribe(b, task["id"], on_first=canceller.start)]
    canceller.join(15)
    assert seen[-1] == "statusUpdate:CANCELED:"
    assert all(s.startswith("statusUpdate:WORKING:") for s in seen[1:-1]), seen
    progress = [int(s.rsplit(":", 1)[1]) for s in seen[1:-1]]
    assert progress == sorted(set(progress))  # in order, none twice
    assert rpc(b, "GetTask", {"id": task["id"]})["status"]["state"] == "TASK_STATE_CANCELED"
