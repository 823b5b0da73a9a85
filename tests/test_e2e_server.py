"""End to end: the real site under uvicorn, driven over HTTP as a toolnexus client
drives it, stopped and restarted; the completed Task is still there (the seeds'
third example, in Python), on the file store and the ORM store (SQLite, and
PostgreSQL when A2A_TEST_POSTGRES_URL is set)."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest
from django.conf import settings

from a2a.testing import WireClient
from stores.file import FileTaskStore
from tests.server import manage, postgres_database, running_server, site_env

pytestmark = pytest.mark.slow


def toolnexus_round_trip(base: str, text: str) -> tuple[str, dict]:
    """What toolnexus's A2A agent tool does: card -> SendMessage (non-blocking) ->
    poll GetTask until terminal."""
    card = httpx.get(f"{base}/.well-known/agent-card.json", timeout=5).json()
    endpoint = card["url"]
    client = WireClient(base_url=endpoint, version=None, timeout=10)
    where = {"path": endpoint, "status": 200}  # the card's URL as it is; every answer an HTTP 200
    message = {"role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": text}]}
    params = {"message": message, "configuration": {"blocking": False}}
    sent = client.rpc("SendMessage", params, request_id=str(uuid.uuid4()), **where)["result"]
    assert sent["status"]["state"] == "submitted"
    deadline = time.monotonic() + 15
    while True:
        task = client.rpc("GetTask", {"id": sent["id"]}, request_id=str(uuid.uuid4()), **where)["result"]
        if task["status"]["state"] in ("completed", "failed", "canceled", "rejected"):
            return endpoint, task
        assert time.monotonic() < deadline, task
        time.sleep(0.025)


def test_file_store_task_survives_the_server(tmp_path, file_syscalls):
    tasks = tmp_path / "tasks"
    env = site_env(TASK_STORE=f"file:{tasks}", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    manage("migrate", "--noinput", env=env)
    with running_server(env, log=tmp_path / "server.log") as base:
        _, task = toolnexus_round_trip(base, "archive this")
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0] == {"kind": "text", "text": "echo: archive this"}
    # The server is gone: a brand-new store over the same directory has the task.
    survived = FileTaskStore(tasks, syscalls=file_syscalls).get(task["id"])
    assert survived["status"]["state"] == "completed"
    assert survived["artifacts"] == task["artifacts"]
    # And a new server answers GetTask for it, in v1.0 too.
    with running_server(env, log=tmp_path / "server.log") as base:
        again = WireClient(base_url=base, timeout=10).rpc("GetTask", {"id": task["id"]}, status=200)["result"]
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"
    assert again["artifacts"][0]["parts"][0] == {"text": "echo: archive this"}


def orm_database_urls() -> list[str]:
    urls = ["sqlite"]
    if "postgres" in settings.DATABASES:
        urls.append("postgres")
    return urls


@pytest.fixture(params=orm_database_urls())
def database_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite3'}"
        return
    with postgres_database(settings.POSTGRES_URL, "a2a_e2e") as url:
        yield url


def test_orm_store_task_survives_a_restart(tmp_path, database_url):
    env = site_env(TASK_STORE="orm", DATABASE_URL=database_url)
    manage("migrate", "--noinput", env=env)
    with running_server(env, log=tmp_path / "server.log") as base:
        _, task = toolnexus_round_trip(base, "keep me")
    assert task["status"]["state"] == "completed"
    with running_server(env, log=tmp_path / "server.log") as base:
        again = WireClient(base_url=base, version=None, timeout=10).rpc("GetTask", {"id": task["id"]}, status=200)
        listed = WireClient(base_url=base, timeout=10).rpc("ListTasks", {"contextId": task["contextId"]}, status=200)
    assert again["result"] == task
    assert [t["id"] for t in listed["result"]["tasks"]] == [task["id"]]


def test_memory_store_serves_under_several_concurrent_clients(tmp_path):
    import concurrent.futures

    env = site_env(TASK_STORE="memory", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    with running_server(env, log=tmp_path / "server.log") as base, concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: toolnexus_round_trip(base, f"n{i}")[1], range(24)))
    assert sorted(r["artifacts"][0]["parts"][0]["text"] for r in results) == sorted(f"echo: n{i}" for i in range(24))
    assert len({r["id"] for r in results}) == 24
