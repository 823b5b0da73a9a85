"""Resumable streams (a2a.core.replay, docs/extensions/resumable-streams.md), end to end.

The cut-point matrix: a multi-event task's SendStreamingMessage stream is cut after each
event index in turn and the client reconnects (SubscribeToTask, ``Last-Event-ID`` or the
request metadata key, on JSON-RPC and HTTP+JSON); the events seen before and after add
up to exactly the task's events, numbered 1..N with no gap and no duplicate. On every
store (memory, file, ORM on SQLite and PostgreSQL), across a server restart (the durable
stores), and across two processes with Redis and PostgreSQL events. Set
``A2A_REPLAY_MATRIX=<path>`` to have the table (store x events x cut -> events seen)
written there as Markdown.

The in-process tests: the gap marker past the kept events, bad ``Last-Event-ID`` values,
the card, private fields never on the wire.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from django.conf import settings

from a2a.core import replay
from a2a.testing.client import WireClient, rpc_body
from tests.helpers import live_result, rpc10
from tests.server import ServerURL, manage, postgres_database, running_server, site_env

REDIS_URL = os.environ.get("A2A_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
V10 = {"A2A-Version": "1.0"}
#: The task: 9 stream events (submitted, working, one, first, aa, bb, two, the result, completed).
SCRIPT = "sleep:0.15;progress:one;artifact:first;chunk:c:aa;last:c:bb;sleep:0.15;progress:two"
SETUPS = ["memory", "file", "orm-sqlite", "file+redis"] + (
    ["orm-postgres", "orm-postgres+postgres", "orm-postgres+redis"] if settings.POSTGRES_URL else []
)
#: (setup, cut index) -> what the reconnection saw, for the matrix.
MATRIX: dict[tuple[str, int], str] = {}


@dataclass
class Frame:
    id: int | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


@dataclass
class Setup:
    name: str
    env: dict[str, str]
    stack: contextlib.ExitStack
    tmp: Path
    servers: list[ServerURL] = field(default_factory=list)

    @property
    def restarts(self) -> bool:
        return self.name in ("file", "orm-sqlite", "orm-postgres")

    def start(self, count: int) -> None:
        self.servers = [
            self.stack.enter_context(running_server(self.env, log=self.tmp / f"{uuid.uuid4().hex}.log"))
            for _ in range(count)
        ]


#: Sends that return at once (the task submitted), in v1.0.
SUBMIT = WireClient(version="1.0")


def frames(response: httpx.Response, stop_after: int | None = None) -> list[Frame]:
    """The SSE events of ``response`` (id and JSON-RPC result or error; a bare
    StreamResponse for HTTP+JSON), stopping after ``stop_after`` of them (the cut)."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        body = orjson.loads(response.read())
        return [Frame(None, error=body.get("error", body))]
    found: list[Frame] = []
    seq: int | None = None
    for line in response.iter_lines():
        if line.startswith("id: "):
            seq = int(line[4:])
        elif line.startswith("data: "):
            body = orjson.loads(line[6:])
            if "jsonrpc" not in body:
                body = {"result": body} if "error" not in body else body
            found.append(Frame(seq, body.get("result"), body.get("error")))
            seq = None
            if stop_after is not None and len(found) >= stop_after:
                break
    return found


def stream_message(base: str, text: str, stop_after: int | None = None) -> list[Frame]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    body = rpc_body("SendStreamingMessage", {"message": message})
    with httpx.stream("POST", f"{base}/a2a/", json=body, headers=V10, timeout=30) as response:
        return frames(response, stop_after)


def resubscribe(base: str, task_id: str, last: int, how: str) -> list[Frame]:
    """Reconnect after event ``last``: ``how`` is "header" (JSON-RPC, Last-Event-ID),
    "metadata" (JSON-RPC, the request metadata key) or "rest" (HTTP+JSON, Last-Event-ID);
    each activates the extension, so each event's metadata carries its number too."""
    headers = {**V10, "A2A-Extensions": replay.URI}
    if how == "rest":
        url, method, body = f"{base}/a2a/rest/tasks/{task_id}:subscribe", "GET", None
        headers["Last-Event-ID"] = str(last)
    else:
        params: dict[str, Any] = {"id": task_id}
        if how == "metadata":
            params["metadata"] = {replay.KEY: {"lastEventId": last}}
        else:
            headers["Last-Event-ID"] = str(last)
        url, method, body = (
            f"{base}/a2a/",
            "POST",
            rpc_body("SubscribeToTask", params, 2),
        )
    with httpx.stream(method, url, json=body, headers=headers, timeout=30) as response:
        return frames(response)


def describe(result: dict[str, Any]) -> str:
    ((key, value),) = ((k, v) for k, v in result.items() if k != "metadata")
    if key in ("task", "statusUpdate"):
        message = (value["status"].get("message") or {}).get("parts") or [{}]
        return f"{key}:{value['status']['state'].removeprefix('TASK_STATE_')}:{message[0].get('text', '')[:20]}"
    texts = "".join(p["text"] for p in value["artifact"]["parts"])
    return f"artifact:{texts[:20]}" + (":append" if value.get("append") else "")


def wait_state(base: str, task_id: str, state: str) -> None:
    deadline = time.monotonic() + 20
    while live_result(base, "GetTask", {"id": task_id})["status"]["state"] != state:
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.fixture(scope="module", params=SETUPS)
def setup(request, tmp_path_factory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("replay")
    store, _, events = request.param.partition("+")
    common = {"A2A_HANDLER": "tests.handlers.scripted", "A2A_STREAM_KEEPALIVE": "2"}
    with contextlib.ExitStack() as lasting, contextlib.ExitStack() as stack:  # (the database outlives the servers)
        database = f"sqlite:///{tmp / 'db.sqlite3'}"
        if store == "orm-postgres":
            database = lasting.enter_context(postgres_database(settings.POSTGRES_URL, "a2a_replay"))
        task_store = {"memory": "memory", "file": f"file:{tmp / 'tasks'}"}.get(store, "orm")
        if events:
            common["A2A_EVENTS"] = REDIS_URL if events == "redis" else "postgres"
            common["A2A_EVENTS_CHANNEL"] = f"a2a-replay-{uuid.uuid4().hex}"
        env = site_env(TASK_STORE=task_store, DATABASE_URL=database, **common)
        manage("migrate", "--noinput", env=env)
        found = Setup(request.param, env, stack, tmp)
        found.start(2 if events else 1)
        yield found


@pytest.mark.slow
def test_a_stream_cut_after_each_event_resumes_with_exactly_the_rest(setup):
    """Cut after each index, reconnect: the events seen are the task's, each once, in order."""
    whole = stream_message(setup.servers[0], SCRIPT)
    expected = [describe(f.result) for f in whole if f.result]
    count = len(expected)
    assert [f.id for f in whole] == list(range(1, count + 1)) and count == 9, expected
    cuts = []
    for cut in range(count):  # the first stream of every cut, then (maybe) a restart, then the reconnections
        first = stream_message(setup.servers[0], SCRIPT, stop_after=cut + 1)
        cuts.append((cut, first, first[0].result["task"]["id"]))
    if setup.restarts:
        for _, _, task_id in cuts:
            wait_state(setup.servers[0], task_id, "TASK_STATE_COMPLETED")
        setup.stack.close()  # a new stack for the new server
        setup.stack = contextlib.ExitStack()
        setup.start(1)
    again = setup.servers[-1]  # the other process, when there are two
    for cut, first, task_id in cuts:
        how = ("header", "metadata", "rest")[cut % 3]
        rest = resubscribe(again, task_id, first[-1].id, how)
        if cut == count - 1:  # it saw the final event: nothing is left to resume
            assert len(rest) == 1 and rest[0].error["code"] in (-32004, 400), rest  # (JSON-RPC, HTTP+JSON)
            assert "nothing left" in rest[0].error["message"]
            MATRIX[(setup.name, cut)] = f"0 (after id {first[-1].id}: UnsupportedOperation, {how})"
            continue
        seen = first + rest
        assert [f.id for f in seen] == list(range(1, count + 1)), (cut, how, [f.id for f in seen])
        assert [describe(f.result) for f in seen] == expected, (cut, how)
        for f in rest:  # the extension is activated: each event's metadata carries its number
            ((_, value),) = ((k, v) for k, v in f.result.items())
            assert value["metadata"][replay.KEY] == {"seq": f.id}
        MATRIX[(setup.name, cut)] = f"{len(rest)} (ids {rest[0].id}..{rest[-1].id}, {how})"
    setup.stack.close()


@pytest.fixture(scope="module", autouse=True)
def matrix_table() -> Iterator[None]:
    yield
    path = os.environ.get("A2A_REPLAY_MATRIX")
    if not path or not MATRIX:
        return
    names = sorted({name for name, _ in MATRIX}, key=SETUPS.index)
    cuts = sorted({cut for _, cut in MATRIX})
    lines = ["| cut after event # | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for cut in cuts:
        cells = [MATRIX.get((name, cut), "-") for name in names]
        lines.append(f"| {cut + 1} | " + " | ".join(cells) + " |")
    Path(path).write_text("\n".join(lines) + "\n")


# --- in process: the gap marker, bad input, the card, the wire --------------------------------------------


def _stream_in_process(method: str, params: dict, headers: dict | None = None) -> list[Frame]:
    from tests.helpers import ASGI

    raw: list[str] = []
    body = rpc_body(method, params)
    response = ASGI.request("POST", "/a2a/", json=body, headers={**V10, **(headers or {})})
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return [Frame(None, error=response.json().get("error"))]
    found, seq = [], None
    for line in response.text.splitlines():
        raw.append(line)
        if line.startswith("id: "):
            seq = int(line[4:])
        elif line.startswith("data: "):
            frame = orjson.loads(line[6:])
            found.append(Frame(seq, frame.get("result"), frame.get("error")))
            seq = None
    return found


@pytest.fixture
def scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_STREAM_KEEPALIVE = 1


def _finished_task(text: str = "progress:one;artifact:first;chunk:c:aa;last:c:bb;progress:two") -> list[Frame]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    return _stream_in_process("SendStreamingMessage", {"message": message})


def test_every_event_of_a_stream_carries_its_number_and_a_plain_client_sees_no_metadata(scripted):
    whole = _finished_task()
    assert [f.id for f in whole] == list(range(1, 10))
    assert all("metadata" not in next(iter(f.result.values())) for f in whole[1:])  # not activated: as before


def test_past_the_kept_events_the_stream_says_so_then_sends_the_whole_task(scripted, settings):
    settings.A2A_STREAM_REPLAY_EVENTS = 3
    whole = _finished_task()
    task_id = whole[0].result["task"]["id"]
    resumed = _stream_in_process("SubscribeToTask", {"id": task_id}, {"Last-Event-ID": "2"})
    marker, task = resumed
    assert marker.id is None and marker.result["statusUpdate"]["metadata"][replay.KEY] == {
        "gap": {"after": 2, "seq": 9}
    }
    assert task.id == 9 and task.result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(task.result["task"]["artifacts"]) == 3
    # the last three are kept: resuming after the sixth gets exactly them
    kept = _stream_in_process("SubscribeToTask", {"id": task_id}, {"Last-Event-ID": "6"})
    assert [f.id for f in kept] == [7, 8, 9] and kept[-1].result["statusUpdate"]["status"][
        "state"
    ] == "TASK_STATE_COMPLETED"


def test_events_older_than_the_max_age_are_not_replayed(scripted, settings):
    whole = _finished_task()
    settings.A2A_STREAM_REPLAY_MAX_AGE = 0.0001
    time.sleep(0.01)
    resumed = _stream_in_process("SubscribeToTask", {"id": whole[0].result["task"]["id"]}, {"Last-Event-ID": "5"})
    assert resumed[0].result["statusUpdate"]["metadata"][replay.KEY]["gap"] == {"after": 5, "seq": 9}


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("abc", "Last-Event-ID"),
        ("-1", "Last-Event-ID"),
        ("99", "Last-Event-ID"),
        ("6.5", "Last-Event-ID"),
        ({"lastEventId": "x"}, "metadata"),
        ({"lastEventId": 6.5}, "metadata"),  # a fraction names no event
        ({"lastEventId": -6.0}, "metadata"),
        ({"lastEventId": True}, "metadata"),
    ],
)
def test_a_bad_last_event_id_is_invalid_params(scripted, value, field):
    task_id = _finished_task()[0].result["task"]["id"]
    if isinstance(value, dict):
        frames_ = _stream_in_process("SubscribeToTask", {"id": task_id, "metadata": {replay.KEY: value}})
    else:
        frames_ = _stream_in_process("SubscribeToTask", {"id": task_id}, {"Last-Event-ID": value})
    assert len(frames_) == 1 and frames_[0].error["code"] == -32602, frames_
    assert field in frames_[0].error["message"]


@pytest.mark.parametrize(
    ("metadata", "header"),
    [({"lastEventId": 6.0}, None), ({"lastEventId": "6.0"}, None), ({"lastEventId": "6"}, None), (None, "6.0")],
)
def test_an_integral_float_or_numeric_text_resumes_like_the_number(scripted, metadata, header):
    # The official SDK keeps metadata as a protobuf Struct, whose numbers are doubles: the
    # event number it was given comes back as 6.0 (it was refused: "not 6.0").
    task_id = _finished_task()[0].result["task"]["id"]
    params: dict[str, Any] = {"id": task_id}
    if metadata is not None:
        params["metadata"] = {replay.KEY: metadata}
    resumed = _stream_in_process("SubscribeToTask", params, {"Last-Event-ID": header} if header else None)
    assert [f.id for f in resumed] == [7, 8, 9], resumed


def test_a_whole_number_is_exact():
    assert [replay.whole_number(v) for v in (0, 7, 7.0, "7", "007", "7.00", 2.0**53)] == [0, 7, 7, 7, 7, 7, 2**53]
    refused = (7.5, "7.5", "7.", "7e0", " 7", "", -1, -1.0, 2.0**60, float("inf"), float("nan"), True, None, [7])
    assert [replay.whole_number(v) for v in refused] == [None] * len(refused)


def test_the_private_fields_never_reach_the_wire(scripted):
    task_id = _finished_task()[0].result["task"]["id"]
    task = rpc10("GetTask", {"id": task_id})["result"]
    listed = rpc10("ListTasks", {})["result"]["tasks"]
    assert all(not k.startswith("_") for t in [task, *listed] for k in t)
    from stores.backends import get_task_store

    stored = get_task_store().get(task_id)
    assert stored["_seq"] == 9 and [e["s"] for e in stored["_events"]] == list(range(2, 10))


def test_the_card_declares_the_extension(scripted):
    from tests.helpers import http

    for version in ("1.0", "0.3"):
        card = http("GET", "/.well-known/agent-card.json", headers={"A2A-Version": version}).json()
        [declared] = [e for e in card["capabilities"]["extensions"] if e["uri"] == replay.URI]
        assert not declared.get("required")  # optional; false, its default, is left out (signed cards)


def test_a_live_stream_behind_a_resync_takes_the_missed_events_from_the_log(scripted):
    """Two subscribers, one told to resync mid-stream: both see every numbered event once."""
    from a2a.core.events import bus

    gate = Path(f"/tmp/a2a-replay-gate-{uuid.uuid4().hex}")
    text = f"wait:{gate};progress:one;artifact:first;progress:two"
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    timer = threading.Timer(0.3, lambda: (bus.resync(), gate.touch()))
    timer.start()
    try:
        seen = _stream_in_process("SendStreamingMessage", {"message": message})
    finally:
        timer.cancel()
        gate.unlink(missing_ok=True)
    assert [f.id for f in seen] == list(range(1, len(seen) + 1)) and len(seen) == 7


def test_grpc_streams_carry_the_numbers_in_metadata_and_resume_after_last_event_id(settings):
    """gRPC has no SSE id: an activating client reads each number from the event's
    metadata and resumes with the ``last-event-id`` call metadata."""
    pytest.importorskip("grpc")
    from a2a.grpc import a2a_pb2 as pb
    from tests.test_grpc import collect, message_request, run

    settings.A2A_HANDLER = "tests.handlers.scripted"
    activate = (("a2a-extensions", replay.URI),)

    def seq(item: Any) -> int:
        update = getattr(item, item.WhichOneof("payload"))
        return int(update.metadata[replay.KEY]["seq"])

    async def body(stub):
        whole = await collect(
            stub.SendStreamingMessage(message_request("progress:one;artifact:first"), metadata=activate)
        )
        task_id = whole[0].task.id
        resume = (*activate, ("last-event-id", "3"))
        rest = await collect(stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=task_id), metadata=resume))
        return whole, rest

    whole, rest = run(body)
    assert [seq(i) for i in whole] == [1, 2, 3, 4, 5, 6]
    assert [seq(i) for i in rest] == [4, 5, 6] and [i.WhichOneof("payload") for i in rest] == [
        "artifact_update",
        "artifact_update",
        "status_update",
    ]


def test_a_client_that_missed_nothing_gets_a_stream_at_once_then_the_live_events(scripted, tmp_path):
    gate = tmp_path / "gate"
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": f"wait:{gate};progress:one"}]}
    task = rpc10("SendMessage", {"message": message, "configuration": {"returnImmediately": True}})["result"]["task"]
    from stores.backends import get_task_store
    from tests.helpers import wait_for_state

    seq = wait_for_state(get_task_store(), task["id"], {"working"})["_seq"]
    timer = threading.Timer(1.5, gate.touch)  # after a keepalive period (1 s): the stream opened with nothing
    timer.start()
    try:
        rest = _stream_in_process("SubscribeToTask", {"id": task["id"]}, {"Last-Event-ID": str(seq)})
    finally:
        timer.cancel()
    assert [f.id for f in rest] == list(range(seq + 1, seq + 4)), rest  # one, the result, completed


def test_v0_3_resubscribe_resumes_too(scripted):
    task_id = _finished_task()[0].result["task"]["id"]
    body = rpc_body("tasks/resubscribe", {"id": task_id})
    from tests.helpers import ASGI

    response = ASGI.request("POST", "/a2a/", json=body, headers={"A2A-Version": "0.3", "Last-Event-ID": "7"})
    lines = [line for line in response.text.splitlines() if line.startswith(("id: ", "data: "))]
    results = [orjson.loads(line[6:])["result"] for line in lines if line.startswith("data: ")]
    assert [line for line in lines if line.startswith("id: ")] == ["id: 8", "id: 9"]
    assert [r["kind"] for r in results] == ["artifact-update", "status-update"] and results[-1]["final"] is True


def test_a_task_no_stream_follows_is_numbered_but_keeps_no_log(scripted):
    """No stream, no client holding a number: the events are numbered (the task's
    generation) but not kept, which spares each save the log's work."""
    from stores.backends import get_task_store
    from tests.helpers import wait_for_state

    task_id = SUBMIT.send("progress:one;artifact:first;progress:two", blocking=False)["task"]["id"]
    stored = wait_for_state(get_task_store(), task_id, {"completed"})
    assert stored["_seq"] == 7 and "_events" not in stored  # submitted, working, one, first, two, result, completed
    resumed = _stream_in_process("SubscribeToTask", {"id": task_id}, {"Last-Event-ID": "2"})
    assert resumed[0].id is None and resumed[0].result["statusUpdate"]["metadata"][replay.KEY]["gap"] == {
        "after": 2,
        "seq": 7,
    }


def test_a_task_followed_from_subscribe_on_keeps_its_events_for_a_resumption(scripted, tmp_path):
    """A task sent without a stream, then subscribed to: from the subscription on its
    events are kept, so a client that saw the first of them resumes after it exactly."""
    from stores.backends import get_task_store
    from tests.helpers import wait_for_state

    gate = tmp_path / "gate"
    task_id = SUBMIT.send(f"wait:{gate};progress:one;artifact:first;progress:two", blocking=False)["task"]["id"]
    seq = wait_for_state(get_task_store(), task_id, {"working"})["_seq"]
    assert "_events" not in get_task_store().get(task_id)
    timer = threading.Timer(0.5, gate.touch)
    timer.start()
    try:
        whole = _stream_in_process("SubscribeToTask", {"id": task_id})
    finally:
        timer.cancel()
    assert [f.id for f in whole] == list(range(seq, seq + 6)), whole  # the task, one, first, two, result, completed
    rest = _stream_in_process("SubscribeToTask", {"id": task_id}, {"Last-Event-ID": str(seq + 1)})
    assert [f.id for f in rest] == [seq + 2, seq + 3, seq + 4, seq + 5], rest  # no gap marker: the log reaches back
    assert [e["s"] for e in get_task_store().get(task_id)["_events"]] == list(range(seq + 1, seq + 6))


def test_subscribing_keeps_nothing_when_no_event_is_kept(scripted, settings, tmp_path):
    from stores.backends import get_task_store
    from tests.helpers import wait_for_state

    settings.A2A_STREAM_REPLAY_EVENTS = 0
    gate = tmp_path / "gate"
    task_id = SUBMIT.send(f"wait:{gate}", blocking=False)["task"]["id"]
    working = wait_for_state(get_task_store(), task_id, {"working"})
    timer = threading.Timer(0.3, gate.touch)
    timer.start()
    try:
        _stream_in_process("SubscribeToTask", {"id": task_id})
    finally:
        timer.cancel()
    done = get_task_store().get(task_id)
    assert "_events" not in done and done["_version"] == working["_version"] + 1  # completed: no mark saved


def test_subscribing_to_a_finished_or_unknown_task_saves_nothing(scripted):
    from stores.backends import get_task_store
    from tests.helpers import wait_for_state

    task_id = SUBMIT.send("progress:one", blocking=False)["task"]["id"]
    finished = wait_for_state(get_task_store(), task_id, {"completed"})
    _stream_in_process("SubscribeToTask", {"id": task_id})
    assert get_task_store().get(task_id) == finished
    unknown = _stream_in_process("SubscribeToTask", {"id": str(uuid.uuid4())})
    assert unknown[0].error["code"] == -32001


def test_a_follow_up_sent_on_a_stream_keeps_the_tasks_events_from_then_on(scripted):
    from stores.backends import get_task_store
    from tests.helpers import wait_for_state

    task_id = SUBMIT.send("ask:which one?", blocking=False)["task"]["id"]
    asked = wait_for_state(get_task_store(), task_id, {"input-required"})
    assert "_events" not in asked
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": "progress:one"}],
        "taskId": task_id,
    }
    seen = _stream_in_process("SendStreamingMessage", {"message": message})
    # The follow-up's message takes the next number (a step of the 1.1 draft's timeline),
    # which no stream shows; its status (the task resubmitted) the one after.
    first = asked["_seq"] + 2
    assert [f.id for f in seen] == list(range(first, first + len(seen))), seen
    kept = get_task_store().get(task_id)["_events"]  # from the follow-up's own save on
    assert [e["s"] for e in kept] == [first - 1, *(f.id for f in seen)]
    assert kept[0]["k"] == "m" and "message" not in kept[0]  # a number, not a copy of the message


def test_a_direct_handlers_task_on_a_stream_keeps_its_events(settings):
    settings.A2A_HANDLER = "tests.test_handler_api.starts_then_works"
    from stores.backends import get_task_store

    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "go"}]}
    seen = _stream_in_process("SendStreamingMessage", {"message": message})
    task_id = seen[0].result["task"]["id"]
    assert [f.id for f in seen] == [1, 2, 3], seen  # created working, the result, completed
    assert [e["s"] for e in get_task_store().get(task_id)["_events"]] == [2, 3]
