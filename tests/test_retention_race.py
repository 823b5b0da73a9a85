"""Retention never splits a conversation a follow-up has just joined (issue 29): whether a
conversation has expired is decided again by the store at the moment of the delete, so a
follow-up stored in it, or a task of it resumed, after the sweep read it keeps it whole.
On every store, with threads racing the sweeps, and with a second OS process sweeping
the same store (PostgreSQL, the file store); a follow-up arriving after the conversation
is gone gets what it gets for an unknown task, or starts a new conversation."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db import connections

from a2a.core import lifecycle
from a2a.handlers import HandlerRequest, Reply, direct_reply
from a2a.protocol.errors import TaskNotFoundError
from a2a.protocol.model import SendParams, set_status
from a2a.service import operations
from stores.base import MAX_PAGE_SIZE, TaskQuery, TaskStore
from stores.file import FileTaskStore
from stores.retention import Policy, delete_contexts, sweep
from stores.timestamps import format_timestamp
from tests.conftest import STORE_KINDS
from tests.db_marks import store_params
from tests.server import ROOT, site_env

#: The issue's policy: a task in either state expires a second after its last change.
POLICY = Policy.from_setting({"completed": 1, "input-required": 1})
#: Seconds each race runs (``A2A_RACE_SECONDS`` for a longer one).
RACE_SECONDS = float(os.environ.get("A2A_RACE_SECONDS", "2"))


def _stamp(age: dt.timedelta) -> str:
    return format_timestamp(dt.datetime.now(dt.UTC) - age)


def old_task(task_id: str, context: str, state: str = "completed") -> dict:
    """A task of ``context`` whose last change was an hour ago: expired by :data:`POLICY`."""
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context,
        "status": {"state": state, "timestamp": _stamp(dt.timedelta(hours=1))},
        "history": [],
        "_version": 1,
    }


def follow_up(context: str, references: list[str]) -> dict:
    """A new task in ``context`` (working: it does not expire) referring to ``references``."""
    task_id = f"f-{uuid.uuid4().hex[:12]}"
    message = {"kind": "message", "role": "user", "messageId": task_id, "parts": [{"kind": "text", "text": "more"}]}
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context,
        "status": {"state": "working", "timestamp": _stamp(dt.timedelta(0))},
        "history": [{**message, "contextId": context, "taskId": task_id, "referenceTaskIds": references}],
        "_version": 1,
    }


def conversation(store: TaskStore, context: str) -> list[str]:
    """Two finished tasks and one waiting for input, all expired: the conversation's ids.
    The waiting one is saved first as working (which never expires) and last as expired,
    so a sweep that runs while the conversation is being made (``_expire_more``) sees it
    whole or not at all: never its first task alone, expired, as all there is of it."""
    ids = [f"{context}-a", f"{context}-b", f"{context}-w"]
    store.save(old_task(ids[2], context, "working"))
    for task_id, state in zip(ids, ("completed", "completed", "input-required"), strict=True):
        store.save(old_task(task_id, context, state))
    return ids


def context_ids(store: TaskStore, context: str) -> set[str]:
    page = store.list(TaskQuery(context_id=context, owner="", page_size=MAX_PAGE_SIZE))
    return {t["id"] for t in page.tasks}


def resume(store: TaskStore, task_id: str) -> dict | None:
    """The client answers the waiting task: it runs again (``working``); None when it is gone."""

    def change(task: dict) -> dict | None:
        return set_status(task, "working") if task["status"]["state"] == "input-required" else None

    return lifecycle.transition_sync(store, task_id, change)


def swept(store: TaskStore) -> list[str]:
    return [t["id"] for batch in sweep(store, POLICY) for t in batch]


def after_the_sweep_reads(store: TaskStore, context: str, action) -> None:
    """Run ``action()`` once, right after the sweep has read ``context`` (and decided it has expired)."""
    read = store.list
    done = threading.Event()

    def list_then_act(query=None):
        page = read(query)
        if query is not None and query.context_id == context and not done.is_set():
            done.set()
            action()
        return page

    store.list = list_then_act  # type: ignore[method-assign]


# --- A follow-up between the sweep's read and its delete, on every store ----------------------


@pytest.mark.parametrize("store_kind", store_params(transaction=False))
def test_a_follow_up_stored_after_the_sweep_read_its_conversation_keeps_it_whole(store):
    talk, alone = conversation(store, "talk"), conversation(store, "alone")
    new = follow_up("talk", [talk[0]])
    after_the_sweep_reads(store, "talk", lambda: store.save(new, expected_version=0))
    assert sorted(swept(store)) == sorted(alone)  # the lone conversation goes, whole
    assert context_ids(store, "talk") == {*talk, new["id"]}  # the followed one stays, whole
    assert context_ids(store, "alone") == set()


@pytest.mark.parametrize("store_kind", store_params(transaction=False))
def test_a_continuation_after_the_sweep_read_its_conversation_keeps_it_whole(store):
    talk = conversation(store, "talk")
    after_the_sweep_reads(store, "talk", lambda: resume(store, talk[2]))
    assert swept(store) == []
    assert context_ids(store, "talk") == set(talk)
    assert store.get(talk[2])["status"]["state"] == "working"


@pytest.mark.parametrize("store_kind", store_params(transaction=False))
def test_a_conversation_changed_in_any_way_is_kept_and_one_unchanged_goes(store):
    """The store's own check, without a sweep: a task added, one missing, one moved on."""
    talks = {name: conversation(store, name) for name in ("same", "added", "moved", "short")}
    read = {name: [store.get(i) for i in ids] for name, ids in talks.items()}
    store.save(follow_up("added", []), expected_version=0)
    resume(store, talks["moved"][2])
    read["short"] = read["short"][:2]  # the sweep missed one: never a half
    lone, moved_on = ({**old_task(i, "", "completed"), "contextId": ""} for i in ("lone", "moved-on"))
    store.save(lone)
    store.save({**moved_on, "_version": 2})  # no context: each a conversation of its own
    deleted = delete_contexts(store, [*read.values(), [lone], [moved_on]])
    assert sorted(t["id"] for t in deleted) == sorted([*talks["same"], "lone"])
    assert store.get("moved-on") is not None
    assert {n for n in talks if context_ids(store, n)} == {"added", "moved", "short"}


def test_the_default_delete_contexts_compares_the_conversation_first():
    """A store of one's own without ``delete_contexts``: the contract's default (best effort)."""
    from stores.memory import MemoryTaskStore

    store = MemoryTaskStore()
    talks = {name: conversation(store, name) for name in ("same", "added", "moved")}
    read = {name: [store.get(i) for i in ids] for name, ids in talks.items()}
    store.save(follow_up("added", []), expected_version=0)
    resume(store, talks["moved"][2])
    lone = {**old_task("lone", "", "completed"), "contextId": ""}  # no context: a conversation of its own
    store.save(lone)
    deleted = TaskStore.delete_contexts(store, [*read.values(), [lone]])
    assert sorted(t["id"] for t in deleted) == sorted([*talks["same"], "lone"])
    assert {n for n in talks if context_ids(store, n)} == {"added", "moved"}


# --- After the conversation is gone ------------------------------------------------------------

SEEN: list[list[str]] = []


@direct_reply
def reading_handler(request: HandlerRequest):
    """Records the earlier conversation it reads (``context_tasks``), then answers."""
    SEEN.append([t["id"] for t in request.context_tasks()])
    return Reply("seen")


@pytest.mark.parametrize("store_kind", store_params())
def test_after_a_conversation_is_gone_a_continuation_is_unknown_and_a_follow_up_starts_anew(use_store, settings):
    settings.A2A_HANDLER = "tests.test_retention_race.reading_handler"
    talk = conversation(use_store, "talk")
    assert sorted(swept(use_store)) == sorted(talk)
    answer = {"kind": "message", "role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "Paris"}]}
    with pytest.raises(TaskNotFoundError):  # as for any unknown task
        asyncio.run(operations.send_message(SendParams(message={**answer, "taskId": talk[2], "contextId": "talk"})))
    SEEN.clear()
    again = {**answer, "messageId": "m2", "contextId": "talk", "referenceTaskIds": [talk[0]]}
    result = asyncio.run(operations.send_message(SendParams(message=again)))
    assert SEEN == [[]]  # a new conversation: nothing earlier to read
    assert result["kind"] == "message"  # so the direct reply stays a Message, and no task is stored
    assert context_ids(use_store, "talk") == set()


@pytest.mark.parametrize("store_kind", store_params())
def test_a_direct_handler_reading_its_conversation_is_stored_in_it_first(use_store, settings):
    """A direct handler's task does not exist while it runs: once it has read the earlier
    conversation, the task is stored in it, so no sweep can take what it read away."""
    settings.A2A_HANDLER = "tests.test_retention_race.reading_handler"
    talk = conversation(use_store, "talk")
    SEEN.clear()
    first = {"kind": "message", "role": "user", "messageId": "m3", "contextId": "talk", "parts": [{"kind": "text"}]}
    first["parts"][0]["text"] = "and then?"
    result = asyncio.run(operations.send_message(SendParams(message=first)))
    assert [sorted(ids) for ids in SEEN] == [sorted(talk)]
    [created] = context_ids(use_store, "talk") - set(talk)  # its task, stored before the read
    task = use_store.get(created)
    assert task["status"]["state"] == "completed" and result["messageId"] == task["status"]["message"]["messageId"]


# --- Follow-ups racing sweeps: threads, every store -------------------------------------------


@dataclass
class Race:
    """What the follow-ups of a race did and saw."""

    #: (follow-up or resumed task id, the ids it refers to, its conversation read right after it was stored)
    joined: list[tuple[str, list[str], set[str]]] = field(default_factory=list)
    unknown: int = 0  # continuations of a task already gone
    lock: threading.Lock = field(default_factory=threading.Lock)


def _follow(store: TaskStore, talks: dict[str, list[str]], race: Race, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    try:
        while not stop.is_set():
            with race.lock:
                context, ids = rng.choice(list(talks.items())[-60:])  # the latest: still there, mostly
            if rng.random() < 0.5:
                task = follow_up(context, [rng.choice(ids)])
                store.save(task, expected_version=0)
                joined, references = task["id"], task["history"][0]["referenceTaskIds"]
            elif resume(store, ids[2]) is not None:
                joined, references = ids[2], []
            else:  # answered already, or gone (the client hears "task not found")
                with race.lock:
                    race.unknown += store.get(ids[2]) is None
                continue
            seen = context_ids(store, context)
            with race.lock:
                race.joined.append((joined, references, seen))
            time.sleep(rng.uniform(0, 0.01))
    finally:
        connections.close_all()


def _sweep_until(store: TaskStore, stop: threading.Event) -> None:
    try:
        while not stop.is_set():
            swept(store)
    finally:
        connections.close_all()


def _expire_more(store: TaskStore, talks: dict[str, list[str]], race: Race, stop: threading.Event) -> None:
    """Keep adding expired conversations: the sweeps always have some to delete."""
    try:
        n = len(talks)
        while not stop.is_set():
            ids = conversation(store, f"talk-{n:04d}")
            with race.lock:
                talks[f"talk-{n:04d}"] = ids
            n += 1
            time.sleep(0.002)
    finally:
        connections.close_all()


def race_sweeps(store: TaskStore, talks: dict[str, list[str]], *, seconds: float, sweepers: int = 2) -> Race:
    """Follow-ups and continuations (three threads) racing ``sweepers`` sweeping threads
    for ``seconds``, while more conversations expire; the threads switch often."""
    race, stop = Race(), threading.Event()
    threads = [threading.Thread(target=_follow, args=(store, talks, race, stop, n)) for n in range(3)]
    threads.append(threading.Thread(target=_expire_more, args=(store, talks, race, stop)))
    threads += [threading.Thread(target=_sweep_until, args=(store, stop)) for _ in range(sweepers)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        for thread in threads:
            thread.start()
        time.sleep(seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        sys.setswitchinterval(interval)
    return race


def assert_no_split(store: TaskStore, talks: dict[str, list[str]], race: Race) -> dict[str, int]:
    """Every conversation has all its first tasks or none of them; every task that joined
    one (a follow-up, a continuation) still has every task it saw beside itself, and
    every task it refers to, unless that was gone before it joined (a new conversation)."""
    present = {t["id"] for t in store.scan()}
    halves = {c: sorted(set(ids) & present) for c, ids in talks.items() if 0 < len(set(ids) & present) < len(ids)}
    assert not halves, f"conversations split: {halves}"
    lost, anew = [], 0
    for joined, references, seen in race.joined:
        assert joined in seen, "a task that joined a conversation is listed in it"
        if missing := seen - present:
            lost.append((joined, sorted(missing)))
        anew += any(r not in seen for r in references)
    assert not lost, f"tasks that lost what they saw beside them: {lost}"
    gone = sum(not (set(ids) & present) for ids in talks.values())
    return {"joined": len(race.joined), "unknown": race.unknown, "anew": anew, "gone": gone}


@pytest.mark.parametrize("store_kind", store_params())
def test_follow_ups_racing_sweeps_never_split_a_conversation(store):
    talks = {f"talk-{i:04d}": conversation(store, f"talk-{i:04d}") for i in range(40)}
    race = race_sweeps(store, talks, seconds=RACE_SECONDS)
    counts = assert_no_split(store, talks, race)
    assert counts["joined"] > 0 and counts["gone"] > 0  # the race ran both ways


# --- A second OS process sweeping the same store -----------------------------------------------

SWEEPER = """
import sys, time
import django
django.setup()
from stores.backends import get_task_store
from stores.retention import Policy, sweep
store, policy = get_task_store(), Policy.from_setting({"completed": 1, "input-required": 1})
print("ready", flush=True)
deadline = time.monotonic() + float(sys.argv[1])
rounds = 0
while time.monotonic() < deadline:
    rounds += sum(1 for _ in sweep(store, policy))
print(rounds, flush=True)
"""


def _database_url(store) -> str:
    db = connections[store.using].settings_dict
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def sweeping_process(store: TaskStore, tmp_path: Path, seconds: float) -> subprocess.Popen:
    """A process of the example site sweeping ``store`` for ``seconds``, started and ready."""
    env = site_env(A2A_LOG_LEVEL="WARNING")
    if isinstance(store, FileTaskStore):
        env.update(
            TASK_STORE=json.dumps({"BACKEND": f"file:{store.directory}", "OPTIONS": {"syscalls": store.syscalls.name}}),
            DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        )
    else:
        env.update(TASK_STORE="orm", DATABASE_URL=_database_url(store))
    command = [sys.executable, "-c", SWEEPER, str(seconds)]
    proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr and proc.stderr.read()
    return proc


@pytest.mark.parametrize(
    "store_kind", store_params(kinds=["file", "file-c"] + (["orm-postgres"] if "orm-postgres" in STORE_KINDS else []))
)
def test_follow_ups_racing_another_process_sweeps_never_split_a_conversation(store, tmp_path):
    talks = {f"talk-{i:04d}": conversation(store, f"talk-{i:04d}") for i in range(40)}
    if isinstance(store, FileTaskStore):
        store.list(TaskQuery())  # the index built: the other process journals into it
    proc = sweeping_process(store, tmp_path, RACE_SECONDS)
    race = race_sweeps(store, talks, seconds=RACE_SECONDS, sweepers=1)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    counts = assert_no_split(store, talks, race)
    assert counts["joined"] > 0 and counts["gone"] > 0


# --- The file store: a delete a crash interrupted ----------------------------------------------


class Crash(BaseException):
    """The process dies here."""


@pytest.mark.parametrize("then", ["sweep", "follow-up"])
def test_a_file_store_delete_a_crash_interrupted_is_finished_first(tmp_path, monkeypatch, then, file_syscalls):
    store = FileTaskStore(tmp_path / "tasks", fsync=False, syscalls=file_syscalls)
    talk = conversation(store, "talk")
    removed = []
    remove = FileTaskStore._remove

    def remove_then_crash(self, path, task_id, found):
        if removed:
            raise Crash
        removed.append(task_id)
        return remove(self, path, task_id, found)

    monkeypatch.setattr(FileTaskStore, "_remove", remove_then_crash)
    with pytest.raises(Crash):
        swept(store)
    monkeypatch.undo()
    assert len(context_ids(store, "talk")) == 2  # a crash in the middle: part of it is left
    store = FileTaskStore(tmp_path / "tasks", fsync=False, syscalls=file_syscalls)  # the next process
    if then == "sweep":
        assert sorted(swept(store)) == sorted(set(talk) - set(removed))
        assert context_ids(store, "talk") == set()
    else:
        new = follow_up("talk", [talk[0]])
        store.save(new, expected_version=0)
        assert context_ids(store, "talk") == {new["id"]}  # a new conversation, never a half of the old one
    assert list((tmp_path / "tasks" / ".locks" / "deleting").iterdir()) == []
