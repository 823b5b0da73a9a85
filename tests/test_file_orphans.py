"""Stored files no task references (a2a.core.file_orphans): what a crash between a file's
write and its task's save leaves (simulated at each step), removed by ``a2a_repair`` and
the periodic sweep once older than the grace period, never a referenced or a young file;
the download route serves only referenced files; a task's emptied directory goes; a
refused follow-up leaves nothing; ``copy --move`` and the health probe delete through the
one path (``tasks_deleted``). On every store."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from a2a.core import file_orphans, files
from a2a.handlers import HandlerRequest, Reply, direct_reply
from a2a.ops.checks import check_files
from a2a.runtime import file_sweep
from a2a.testing import WireClient
from stores.backends import resolve_store
from stores.retention import delete_tasks, tasks_deleted
from tests.handlers import digest
from tests.helpers import call
from tests.test_files import BLOCKING, CONTENT, file_agent, file_message

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

GRACE = 3600.0
BASE = "http://testserver/a2a/"


@pytest.fixture
def agent(settings, use_store, tmp_path):
    return file_agent(settings, tmp_path)


class Killed(BaseException):
    """kill -9 at this point: no ``except Exception`` cleanup runs."""


def age(name: str, seconds: float) -> None:
    """Date a stored file (or directory) ``seconds`` back, as if written then."""
    path = files.storage().path(name)
    when = time.time() - seconds
    os.utime(path, (when, when))


def stored_names(task_id: str) -> set[str]:
    try:
        return {f"{files.prefix(task_id)}/{n}" for n in files.storage().listdir(files.prefix(task_id))[1]}
    except FileNotFoundError:
        return set()


def killed_mid_write(task_id: str) -> str:
    """A new message's file written partly, then the process killed (the file part's
    content is decoded into the storage a slice at a time)."""
    reads = 0
    original = files._Base64Reader.readinto

    def dies_on_the_second_slice(self, buffer):
        nonlocal reads
        reads += 1
        if reads > 1:
            raise Killed
        return original(self, buffer)

    message = file_message(CONTENT)["parts"]
    parts = [{"kind": "file", "file": {"bytes": p["raw"], "name": "data.bin"}} for p in message]
    files._Base64Reader.readinto = dies_on_the_second_slice
    try:
        with pytest.raises(Killed):
            files.offload(parts, task_id, base=BASE)
    finally:
        files._Base64Reader.readinto = original
    [name] = stored_names(task_id)
    assert 0 < files.storage().size(name) < len(CONTENT)  # partial
    return name


def killed_before_the_save(task: dict) -> list[str]:
    """A message's file written whole (what the operations do before the task's save),
    then the process killed before the save."""
    message = {"role": "user", "parts": [{"kind": "file", "file": {"bytes": file_message(CONTENT)["parts"][0]["raw"]}}]}
    written = files.offload_message(message, dict(task), base=BASE)
    assert len(written) == 1 and files.storage().size(written[0]) == len(CONTENT)
    return written


@pytest.fixture
def crashed(agent, store):
    """The storage after a crash at each step, and what a task references; every file dated
    past the grace period but ``young`` (a file being written now)."""
    kept_task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)["task"]
    referenced = files.referenced(store.get(kept_task["id"]))
    assert len(referenced) == 1
    partial = killed_mid_write(uuid.uuid4().hex)  # no task: killed while writing
    whole = killed_before_the_save({"id": uuid.uuid4().hex})[0]  # no task: killed before the first save
    follow_up = killed_before_the_save(store.get(kept_task["id"]))[0]  # a follow-up killed before its save
    young = killed_before_the_save({"id": uuid.uuid4().hex})[0]
    for name in [*referenced, partial, whole, follow_up]:
        age(name, GRACE + 60)
    return {"orphans": {partial, whole, follow_up}, "kept": {*referenced, young}, "agent": agent}


def test_repair_removes_exactly_the_orphans_past_the_grace_period(crashed, store, settings):
    out, err = StringIO(), StringIO()
    call_command("a2a_repair", "--dry-run", stdout=out, stderr=err)
    if not store.shared:  # the memory store's tasks are in the server's process, not the command's
        assert "not checked" in err.getvalue()
        assert {n for n in crashed["orphans"] | crashed["kept"] if files.storage().exists(n)} == (
            crashed["orphans"] | crashed["kept"]
        )
        return
    assert {line.split(":")[0] for line in out.getvalue().splitlines() if line.startswith("a2a-files/")} == crashed[
        "orphans"
    ]
    assert "Would remove 3 stored file(s)" in err.getvalue()
    assert all(files.storage().exists(n) for n in crashed["orphans"])  # a dry run removes nothing
    call_command("a2a_repair", stdout=StringIO(), stderr=(err := StringIO()))
    assert "Removed 3 stored file(s)" in err.getvalue()
    assert not any(files.storage().exists(n) for n in crashed["orphans"])
    assert all(files.storage().exists(n) for n in crashed["kept"])
    # The directories of tasks that never existed are gone with their files.
    assert {d for d in file_orphans.task_directories() if not stored_names(d)} == set()


def test_the_sweep_removes_the_orphans_on_every_store(crashed, store):
    removed = file_orphans.sweep([store], file_orphans.task_directories(), older_than=GRACE)
    assert {o.name for o in removed} == crashed["orphans"]
    reasons = {o.name.split("/")[1]: o.reason for o in removed}
    assert sorted(set(reasons.values())) == ["its task does not exist", "not referenced by its task"]
    assert all(files.storage().exists(n) for n in crashed["kept"])
    assert file_orphans.sweep([store], file_orphans.task_directories(), older_than=GRACE) == []


def test_a_task_in_another_store_in_use_keeps_its_files(crashed, store):
    """Per-agent stores: a file is kept while a task of any store in use references it."""
    [whole] = [n for n in crashed["orphans"] if store.get(n.split("/")[1]) is None and n.endswith("-file")]
    task_id = whole.split("/")[1]
    other = resolve_store("memory")  # an agent's own store, holding that task
    part = {"kind": "file", "file": {"uri": f"{BASE}files/{task_id}/{whole.rsplit('/', 1)[1]}"}}
    other.save(
        {
            "id": task_id,
            "contextId": "c",
            "kind": "task",
            "status": {"state": "completed"},
            "history": [{"role": "user", "messageId": "m", "parts": [part]}],
        }
    )
    removed = file_orphans.sweep([store, other], file_orphans.task_directories(), older_than=GRACE)
    assert {o.name for o in removed} == crashed["orphans"] - {whole}
    assert files.storage().exists(whole)


def test_the_periodic_sweep_is_bounded_and_goes_round(agent, store, settings):
    names = [killed_before_the_save({"id": f"t{n}"})[0] for n in range(5)]
    for name in names:
        age(name, GRACE + 60)
    sweeper = file_sweep.Sweeper(per_pass=2)
    assert len(sweeper.run_pass()) == 2 and len(sweeper.run_pass()) == 2
    assert len(sweeper.run_pass()) == 1 and sweeper.run_pass() == []
    assert file_orphans.task_directories() == []  # each emptied directory went with its files


def test_the_periodic_sweep_runs_by_itself(agent, store, settings):
    settings.A2A_FILES_ORPHAN_INTERVAL = 0.05
    [name] = killed_before_the_save({"id": "gone"})
    age(name, GRACE + 60)

    async def run_a_while():
        sweeping = asyncio.ensure_future(file_sweep.keep_sweeping())
        for _ in range(100):
            await asyncio.sleep(0.05)
            if not files.storage().exists(name):
                break
        sweeping.cancel()

    asyncio.run(run_a_while())
    assert not files.storage().exists(name)


def test_a_refused_follow_up_leaves_no_file(agent, store):
    task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)[
        "task"
    ]  # completed: a follow-up is refused
    before = stored_names(task["id"])
    error = WireClient(headers=agent["alice"]).rpc(
        "SendMessage", {"message": file_message(CONTENT, taskId=task["id"]), "configuration": BLOCKING}
    )["error"]
    assert error["code"] == -32004
    assert stored_names(task["id"]) == before


def test_the_route_serves_only_a_file_its_task_references(agent, store):
    task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)["task"]
    url = task["history"][0]["parts"][0]["url"].removeprefix("http://testserver")
    assert call("GET", url, headers=agent["alice"]).status_code == 200
    # A file under the task's directory that the task does not reference (one being
    # written, or left partial by a crash): 404.
    [stray] = killed_before_the_save(store.get(task["id"]))
    stray_url = f"/a2a/files/{task['id']}/{stray.rsplit('/', 1)[1]}"
    assert files.storage().exists(stray)
    assert call("GET", stray_url, headers=agent["alice"]).status_code == 404


def test_deleting_a_task_removes_its_emptied_directory(agent, store):
    task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)["task"]
    directory = files.storage().path(files.prefix(task["id"]))
    assert os.path.isdir(directory)
    assert delete_tasks(store, [store.get(task["id"])])
    assert not os.path.exists(directory)


def test_repair_removes_an_old_empty_directory_only(agent, store):
    old, young = files.storage().path(files.prefix("old")), files.storage().path(files.prefix("young"))
    os.makedirs(old)
    os.makedirs(young)
    age(files.prefix("old"), GRACE + 60)
    file_orphans.sweep([store], ["old", "young"], older_than=GRACE)
    assert not os.path.exists(old) and os.path.isdir(young)


def test_the_grace_period_is_checked(settings):
    settings.A2A_FILES_ORPHAN_GRACE = 0
    settings.A2A_FILES_ORPHAN_INTERVAL = -1
    errors = check_files()
    assert {e.msg.split()[0] for e in errors} == {"A2A_FILES_ORPHAN_GRACE", "A2A_FILES_ORPHAN_INTERVAL"}


@pytest.fixture
def deletions():
    heard = []

    def hear(**kwargs):
        heard.append(kwargs)

    tasks_deleted.connect(hear, dispatch_uid="test-file-orphans")
    yield heard
    tasks_deleted.disconnect(dispatch_uid="test-file-orphans")


def test_copy_move_deletes_through_the_one_path_and_keeps_the_files(agent, store, tmp_path, deletions, settings):
    task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)["task"]
    store.push_configs.save_push_config(
        {"taskId": task["id"], "id": "hook", "url": "https://example.com/hook"}  # goes with the task
    )
    names = stored_names(task["id"])
    target = f"file:{tmp_path / 'moved'}"
    err = StringIO()
    call_command("a2a_tasks", "copy", "--to", target, "--move", stdout=StringIO(), stderr=err)
    [heard] = deletions
    assert [t["id"] for t in heard["tasks"]] == [task["id"]] and heard["moved_to"] is not None
    assert store.get(task["id"]) is None and store.push_configs.list_push_configs(task["id"]) == []
    copy = heard["moved_to"].get(task["id"])
    assert files.referenced(copy) == names and all(files.storage().exists(n) for n in names)  # the copy's
    assert "keep their stored files" in err.getvalue()  # the target is not a store in use (yet)
    settings.TASK_STORE = target  # the move's target in use: its task keeps the files from the sweep
    assert file_orphans.sweep([heard["moved_to"]], [task["id"]], older_than=0) == []


def test_the_health_probe_deletes_through_the_one_path(agent, store, deletions):
    response = call("GET", "/healthz")
    assert response.status_code == 200, response.text
    [heard] = deletions
    assert heard["store"] is store and heard["tasks"][0]["id"].startswith("healthz-")
    assert store.get(heard["tasks"][0]["id"]) is None


@direct_reply
def replies_with_the_digest(request: HandlerRequest) -> Reply:
    """A direct_reply handler reading the message's file: a Message, no task, ever."""
    return Reply(digest(request))


def test_a_direct_reply_leaves_no_file(agent, store, settings):
    settings.A2A_HANDLER = f"{__name__}.replies_with_the_digest"
    answer = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)
    assert "message" in answer and str(len(CONTENT)) in str(answer)  # the handler read the stored file
    assert store.list().tasks == [] and file_orphans.task_directories() == []
