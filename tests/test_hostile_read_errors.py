"""Issue 14, item 1: a store read that fails for now (out of file descriptors, a
database error) is told apart from a task that is gone. The heartbeat, the reaper
and the runner leave the task as it is and try again later; a client asking for the
task is told the store cannot read it now (-32603 / HTTP 503, JSON), never "not found".

The fault is injected on every store: the file store's reads and writes fail with
EMFILE (as when a stranger holds every descriptor of the process), the ORM store's
queries raise ``OperationalError``, the memory store's reads raise StoreUnavailable.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
import os
import threading
import time
import uuid
from typing import Any

import httpx
import pytest
from django.db import OperationalError

from a2a.asgi import get_asgi_application
from a2a.protocol.model import new_task
from a2a.runtime import reaper
from a2a.runtime.runner import Runner
from a2a.testing import WireClient
from stores.base import StoreUnavailable, TaskQuery, TaskStore
from stores.file import NOT_CACHED, FileTaskStore
from stores.file import fsio as file_module
from stores.file.syscalls import Syscalls
from stores.orm import OrmTaskStore
from stores.timestamps import format_timestamp, now_iso
from tests.db_marks import store_params
from tests.helpers import wait_for_state as wait_for

pytestmark = pytest.mark.django_db


@pytest.fixture(params=store_params(transaction=True))
def store_kind(request) -> str:
    return request.param


class Fault:
    """While ``on``: the store cannot read nor write (as its kind fails for real)."""

    def __init__(self, store: TaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.active = threading.Event()
        self.hits = 0
        active = self.active

        def hit() -> bool:
            if active.is_set():
                self.hits += 1
                return True
            return False

        if isinstance(store, FileTaskStore):
            read_file, atomic_write = file_module.read_file, file_module.atomic_write
            directory = str(store.directory)

            def failing_read(path: str | os.PathLike[str], syscalls: Syscalls, *, to_end: bool = False) -> bytes:
                if os.fspath(path).startswith(directory) and hit():
                    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
                return read_file(path, syscalls, to_end=to_end)

            def failing_write(target: str, data: bytes, syscalls: Syscalls, **kwargs: Any) -> int:
                if hit():  # no descriptor for the temp file
                    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
                return atomic_write(target, data, syscalls, **kwargs)

            monkeypatch.setattr(file_module, "read_file", failing_read)
            monkeypatch.setattr(file_module, "atomic_write", failing_write)
            monkeypatch.setattr("stores.file.fsio.read_if_cached", lambda path: NOT_CACHED)  # reads go through _read
        elif isinstance(store, OrmTaskStore):
            select, update = OrmTaskStore._select_task, OrmTaskStore._update_if_version

            def failing_select(self, task_id):
                if hit():
                    raise OperationalError("could not receive data from server: Connection timed out")
                return select(self, task_id)

            def failing_update(self, *args):
                if hit():
                    raise OperationalError("could not receive data from server: Connection timed out")
                return update(self, *args)

            monkeypatch.setattr(OrmTaskStore, "_select_task", failing_select)
            monkeypatch.setattr(OrmTaskStore, "_update_if_version", failing_update)
        else:
            get, save = store.get, store.save

            def failing_get(task_id):
                if hit():
                    raise StoreUnavailable("could not read the task now: injected; try again")
                return get(task_id)

            def failing_save(*args, **kwargs):
                if hit():
                    raise StoreUnavailable("could not save the task now: injected; try again")
                return save(*args, **kwargs)

            monkeypatch.setattr(store, "get", failing_get)
            monkeypatch.setattr(store, "aget", lambda task_id: asyncio.to_thread(failing_get, task_id))
            monkeypatch.setattr(store, "save", failing_save)


def message(text: str) -> dict:
    parts = [{"kind": "text", "text": text}]
    return {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user", "parts": parts}


def test_a_read_error_while_a_handler_runs_never_ends_the_task(use_store, settings, monkeypatch, caplog, heard):
    """The store cannot be read for longer than a lease while the handler runs: the
    heartbeat cannot renew, the reaper runs, and yet the task completes normally."""
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_LEASE_SECONDS = 1.0  # a heartbeat every third of a second
    settings.A2A_LEASE_CHECK_INTERVAL = 0.3
    fault = Fault(use_store, monkeypatch)
    runner = Runner(1)
    try:
        task = {**new_task(message("sleep:2.5"), context_id="c"), "_version": 1}
        use_store.save(task)
        runner.submit(task["id"])
        wait_for(use_store, task["id"], {"working"})
        fault.active.set()
        time.sleep(1.6)  # longer than the lease: several heartbeats and reaper checks fail
        fault.active.clear()
        assert fault.hits >= 3
        assert runner.active == 1  # the handler was left running
        done = wait_for(use_store, task["id"], {"completed", "failed", "canceled"})
    finally:
        runner.shutdown(grace=2)
    assert done["status"]["state"] == "completed", done["status"]
    assert done["artifacts"][0]["parts"][0]["text"] == "done: sleep:2.5"
    states = [t["status"]["state"] for t in heard if t["id"] == task["id"]]
    assert "canceled" not in states and "failed" not in states, states
    assert "canceled while running" not in caplog.text


def rest_get(app, path: str) -> httpx.Response:
    return WireClient(app=app, version=None).request("GET", path)


def test_get_task_while_the_store_cannot_read_is_unavailable_not_not_found(use_store, monkeypatch):
    app = get_asgi_application()
    task = {**new_task(message("x"), context_id="c"), "_version": 1}
    use_store.save(task)
    fault = Fault(use_store, monkeypatch)
    fault.active.set()
    response = WireClient(app=app, version=None).rpc_response("GetTask", {"id": task["id"]})
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == -32603, error  # an internal error, not -32001 "task not found"
    assert error["message"].startswith("could not read the task now: ") and error["message"].endswith("try again")
    cancel = WireClient(app=app, version=None).rpc("CancelTask", {"id": task["id"]})["error"]
    assert cancel["code"] == -32603 and "try again" in cancel["message"]
    rest = rest_get(app, f"/a2a/rest/tasks/{task['id']}")
    assert rest.status_code == 503 and rest.headers["content-type"].startswith("application/")
    assert rest.json()["error"]["status"] == "UNAVAILABLE"
    assert rest.json()["error"]["message"] == error["message"]
    fault.active.clear()
    assert (
        WireClient(app=app, version=None).rpc_response("GetTask", {"id": task["id"]}).json()["result"]["id"]
        == task["id"]
    )
    assert use_store.get(task["id"])["status"]["state"] == "submitted"  # nothing changed


def test_the_reaper_leaves_an_expired_task_it_cannot_read(use_store, monkeypatch):
    """A check that meets a read error decides nothing (the task is not "gone")."""
    task = {**new_task(message("x"), context_id="c"), "_version": 2}
    task["status"] = {"state": "working", "timestamp": now_iso()}
    expired = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
    task["_lease"] = {"owner": "gone:1:dead", "expires": format_timestamp(expired), "runs": 1}
    use_store.save(task)
    fault = Fault(use_store, monkeypatch)
    fault.active.set()
    try:
        outcomes = [r.outcome for r in reaper.reap(use_store)]
    except StoreUnavailable:
        outcomes = ["unavailable"]  # the file store's scan itself could not read: nothing decided
    fault.active.clear()
    assert outcomes in (["skipped"], ["unavailable"])
    assert use_store.get(task["id"])["status"]["state"] == "working"
    assert [r.outcome for r in reaper.reap(use_store)] == ["failed"]  # once it can read: as before


@pytest.mark.parametrize("another_process_wrote", [False, True])
def test_a_listing_during_a_read_error_forgets_no_task(tmp_path, monkeypatch, another_process_wrote, file_syscalls):
    """The file store's listing index: a task it cannot read now is neither dropped
    from the index nor left at an old version (before, it vanished from every listing
    until saved again)."""
    store = FileTaskStore(tmp_path / "tasks", fsync=False, syscalls=file_syscalls)
    for task_id in ("t1", "t2"):
        store.save({**new_task(message(task_id), context_id="c"), "id": task_id})
    assert sorted(t["id"] for t in store.list().tasks) == ["t1", "t2"]
    if another_process_wrote:  # journaled by another store instance: this one reloads t1 on its next page
        other = FileTaskStore(tmp_path / "tasks", fsync=False, syscalls=file_syscalls)
        other.save({**store.get("t1"), "status": {"state": "working", "timestamp": now_iso()}})
    fault = Fault(store, monkeypatch)
    fault.active.set()
    with pytest.raises(StoreUnavailable):
        store.list()
    fault.active.clear()
    listed = {t["id"]: t["status"]["state"] for t in store.list().tasks}
    assert listed == {"t1": "working" if another_process_wrote else "submitted", "t2": "submitted"}
    working = [t["id"] for t in store.list(TaskQuery(state="working")).tasks]  # as the index has it
    assert working == (["t1"] if another_process_wrote else [])


def test_a_real_descriptor_shortage_on_the_file_store(tmp_path, settings, caplog, file_syscalls):
    """No injection: the process really runs out of file descriptors (every free one
    held, as a stranger's half-sent requests do) for longer than a lease while the
    handler runs. The task completes normally."""
    resource = pytest.importorskip("resource")
    store = FileTaskStore(tmp_path / "tasks", fsync=False, syscalls=file_syscalls)
    settings.TASK_STORE = store
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_LEASE_SECONDS = 1.0
    settings.A2A_LEASE_CHECK_INTERVAL = 0.3
    runner = Runner(1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[int] = []
    try:
        task = {**new_task(message("sleep:2.5"), context_id="c"), "_version": 1}
        store.save(task)
        runner.submit(task["id"])
        wait_for(store, task["id"], {"working"})
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 4096), hard))
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError as exc:
            assert exc.errno == errno.EMFILE
        time.sleep(1.6)  # heartbeats and lease checks meet EMFILE
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        done = wait_for(store, task["id"], {"completed", "failed", "canceled"})
    finally:
        runner.shutdown(grace=2)
    assert done["status"]["state"] == "completed", done["status"]
    assert "canceled while running" not in caplog.text
    assert "could not renew the lease of task" in caplog.text  # it did meet the fault
