"""Delegation to a second agent of this project: the site under uvicorn, its handler
``tests.handlers.scripted``; the local agent is this test process."""

from __future__ import annotations

import asyncio

import pytest

from a2a.handlers.delegation import METADATA_KEY
from a2a.protocol.model import CancelParams
from a2a.service import operations
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import send_direct, wait_for_state, wait_until
from tests.server import scripted_site
from tests.test_delegation import message, run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    with scripted_site(tmp_path_factory.mktemp("delegation-live")) as base:
        yield base


@pytest.fixture(autouse=True)
def local(settings, remote):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.test_delegation.delegator"
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": remote, "TIMEOUT": 10}}


@pytest.mark.parametrize("stream", [True, False])
def test_progress_and_a_chunked_artifact(stream):
    task = run("progress:reading;chunk:a:x;chunk:a:y;last:a:z;artifact:other", stream=stream, poll_interval=0.05)
    assert task["status"]["state"] == "completed"
    [record] = task["metadata"][METADATA_KEY]
    assert record["state"] == "completed"
    texts = {a["artifactId"].split("/")[-1]: [p["text"] for p in a["parts"]] for a in task["artifacts"]}
    assert texts["a"] == ["x", "y", "z"]  # one artifact, its chunks in order
    assert sorted(len(v) for v in texts.values()) == [1, 1, 3]  # "other" and the remote's "done: ..."


def test_input_required_answered_on_the_next_turn():
    task = run("ask:Which account?")
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"][0]["text"] == "Which account?"
    send_direct(message("artifact:the blue one", taskId=task["id"], contextId=task["contextId"]))
    done = wait_for_state(get_task_store(), task["id"], {"completed", "failed"}, timeout=20)
    assert done["status"]["state"] == "completed"
    assert [r["state"] for r in done["metadata"][METADATA_KEY]] == ["completed"]
    assert "the blue one" in [a["parts"][0]["text"] for a in done["artifacts"]]


def test_a_remote_failure_and_auth_required():
    failed = run("fail:no such account")
    assert failed["status"]["state"] == "failed"
    assert failed["status"]["message"]["parts"][0]["text"].endswith(": no such account")
    assert run("auth:sign in first")["status"]["state"] == "auth-required"


def test_a_local_cancel_cancels_the_remote_task(remote):
    from a2a.client import Client

    task = send_direct(message("sleep:30"), blocking=False)
    store = get_task_store()
    wait_until(lambda: (store.get(task["id"]) or {}).get("metadata", {}).get(METADATA_KEY), timeout=10, what="remote")
    remote_id = store.get(task["id"])["metadata"][METADATA_KEY][0]["taskId"]
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    with Client(remote) as client:
        wait_until(lambda: client.get_task(remote_id)["status"]["state"] == "canceled", timeout=10, what="cancel")


def test_a_remote_answer_in_its_status_message_is_the_local_answer():
    task = run("reply:hello there")  # the remote task completes with its answer as the status message
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][0]["text"] == "hello there"
    assert [r["state"] for r in task["metadata"][METADATA_KEY]] == ["completed"]
