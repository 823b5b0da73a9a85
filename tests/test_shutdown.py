"""A stop (Ctrl-C, SIGTERM) of a real server while a sync handler runs: the task is
saved failed after ``A2A_SHUTDOWN_GRACE`` and the process exits then, however long
the handler's thread goes on (it cannot be interrupted)."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import time
import uuid

import pytest

from a2a.testing import WireClient
from stores.file import FileTaskStore
from tests.server import manage, running_server, site_env

pytestmark = pytest.mark.slow

#: Seconds the handler sleeps: far longer than any bound below.
HANDLER_SLEEPS = 3600
#: Seconds the process may take to exit after the grace (draining, the failed save,
#: the interpreter's exit), on a loaded machine; a fraction of the handler's sleep.
EXIT_BOUND = 60


def orm_task(database, task_id: str) -> dict:
    """The task as the server's ORM store saved it in the SQLite file ``database``."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        (saved,) = db.execute("SELECT task FROM stores_taskrecord WHERE id = ?", (task_id,)).fetchone()
    return json.loads(saved)


@pytest.mark.parametrize("store", ["file", "orm"])
def test_ctrl_c_exits_after_the_grace_with_a_sync_handler_running(tmp_path, store):
    database = tmp_path / "db.sqlite3"
    env = site_env(
        TASK_STORE=f"file:{tmp_path / 'tasks'}" if store == "file" else "orm",
        DATABASE_URL=f"sqlite:///{database}",
        A2A_HANDLER="tests.handlers.stubborn",
        A2A_SHUTDOWN_GRACE="1",
    )
    manage("migrate", "--noinput", env=env)
    with running_server(env, log=tmp_path / "server.log") as base:
        client = WireClient(base_url=base, version=None, timeout=10)
        message = {
            "role": "user",
            "messageId": str(uuid.uuid4()),
            "parts": [{"kind": "text", "text": str(HANDLER_SLEEPS)}],
        }
        task = client.rpc("SendMessage", {"message": message, "configuration": {"blocking": False}})["result"]
        deadline = time.monotonic() + EXIT_BOUND
        while client.rpc("GetTask", {"id": task["id"]})["result"]["status"]["state"] != "working":
            assert time.monotonic() < deadline, "the handler never started"
            time.sleep(0.05)
        base.process.send_signal(signal.SIGINT)
        base.process.wait(EXIT_BOUND)  # it used to wait for the handler's thread: an hour
    stored = FileTaskStore(tmp_path / "tasks").get(task["id"]) if store == "file" else orm_task(database, task["id"])
    assert stored["status"]["state"] == "failed"
    assert "shut down" in stored["status"]["message"]["parts"][0]["text"]
