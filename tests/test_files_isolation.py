"""A stored file is its task's alone (a2a.core.files): a message naming another task's
stored file (another caller's, another agent's, or another task of the same caller) is
refused with -32602 before anything is written, on every binding and version; a part that
names one anyway (through another host's URL) gets no content from ``open_part``, nor
from the admin; a follow-up may name its own task's files."""

from __future__ import annotations

import hashlib
import os

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

from a2a.core import files
from a2a.testing import WireClient
from a2a.testing.client import rpc_body
from tests.helpers import call
from tests.helpers import rpc10 as rpc
from tests.test_files import BLOCKING, CONTENT, V10, file_agent, file_message

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

DIGEST = f"{hashlib.sha256(CONTENT).hexdigest()} {len(CONTENT)}"


@pytest.fixture
def agent(settings, use_store, tmp_path):
    return file_agent(settings, tmp_path)


def _stored(headers: dict[str, str], path: str = "/a2a/") -> tuple[str, str]:
    """Send a large file to the agent at ``path``: its task's id and the file's URL."""
    body = rpc_body("SendMessage", {"message": file_message(CONTENT)})
    task = call("POST", path, json=body, headers={**headers, **V10}).json()["result"]["task"]
    return task["id"], task["history"][0]["parts"][0]["url"]


def _naming(url: str, **extra) -> dict:
    part = {"url": url, "mediaType": "application/octet-stream", "filename": "data.bin"}
    return {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [part], **extra}


def _task_dirs() -> set[str]:
    return set(files.storage().listdir("a2a-files")[0])


def test_naming_another_callers_file_is_refused_on_every_binding(agent):
    alice_task, url = _stored(agent["alice"])
    path = url.removeprefix("http://testserver")
    for named in (url, path, files.stored_name({"kind": "file", "file": {"uri": url}})):
        error = WireClient(headers=agent["bob"]).rpc(
            "SendMessage", {"message": _naming(named), "configuration": BLOCKING}
        )["error"]
        assert error["code"] == -32602 and "another task" in error["message"], named
    rest = call("POST", "/a2a/rest/message:send", json={"message": _naming(url)}, headers={**agent["bob"], **V10})
    assert rest.status_code == 400 and "another task" in rest.json()["error"]["message"]
    file = {"uri": url, "mimeType": "application/octet-stream", "name": "data.bin"}
    message = {"kind": "message", "messageId": "m03", "role": "user", "parts": [{"kind": "file", "file": file}]}
    body = rpc_body("message/send", {"message": message})
    v03 = call("POST", "/a2a/", json=body, headers=agent["bob"]).json()
    assert v03["error"]["code"] == -32602 and DIGEST not in str(v03)
    stream = call("POST", "/a2a/rest/message:stream", json={"message": _naming(url)}, headers={**agent["bob"], **V10})
    assert stream.status_code == 400 and DIGEST not in stream.text
    # Refused before anything was written: Bob has no task, the storage only Alice's.
    assert rpc("ListTasks", {}, agent["bob"])["result"]["tasks"] == []
    assert _task_dirs() == {alice_task}


def test_naming_another_agents_file_or_another_own_task_is_refused(agent, settings):
    settings.A2A_AGENTS = {"billing": {"HANDLER": "tests.handlers.digest", "INPUT_MODES": ["application/octet-stream"]}}
    _, billing_url = _stored(agent["alice"], "/agents/billing/a2a/")
    error = WireClient(headers=agent["alice"]).rpc(
        "SendMessage", {"message": _naming(billing_url), "configuration": BLOCKING}
    )["error"]
    assert error["code"] == -32602 and "another task" in error["message"]
    _, first_url = _stored(agent["alice"])  # the same caller's other task: not this one's either
    error = WireClient(headers=agent["alice"]).rpc(
        "SendMessage", {"message": _naming(first_url), "configuration": BLOCKING}
    )["error"]
    assert error["code"] == -32602 and "another task" in error["message"]


def test_a_follow_up_may_name_its_own_tasks_file(agent, settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    first = file_message(CONTENT)
    first["parts"].append({"text": "ask:more?"})
    task = WireClient(headers=agent["alice"]).send(first, configuration=BLOCKING)["task"]
    url = task["history"][0]["parts"][0]["url"]
    done = WireClient(headers=agent["alice"]).send(_naming(url, taskId=task["id"]), configuration=BLOCKING)["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    [follow_up] = [m for m in done["history"] if m["role"] == "ROLE_USER"][1:]
    part = {"kind": "file", "file": {"uri": follow_up["parts"][0]["url"]}}
    with files.open_part(part, task["id"]) as handle:
        assert handle.read() == CONTENT


@pytest.mark.parametrize("owner", ["bob", "billing"])
def test_a_handler_opens_no_file_of_another_task(agent, settings, owner):
    """Another host's URL is an external one (not refused), but its path names Alice's file:
    the handler reading it gets no content, nor does the admin."""
    settings.A2A_AGENTS = {"billing": {"HANDLER": "tests.handlers.digest", "INPUT_MODES": ["application/octet-stream"]}}
    alice_task, url = _stored(agent["alice"], "/agents/billing/a2a/" if owner == "billing" else "/a2a/")
    elsewhere = "https://elsewhere.example" + url.removeprefix("http://testserver")
    sender = agent["bob" if owner == "bob" else "alice"]
    task = WireClient(headers=sender).send(_naming(elsewhere), configuration=BLOCKING)["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED" and DIGEST not in str(task)
    part = {"kind": "file", "file": {"uri": elsewhere}}
    with pytest.raises(FileNotFoundError):
        files.open_part(part, task["id"])
    with files.open_part(part, alice_task) as handle:  # its own task reads it
        assert handle.read() == CONTENT


def test_the_admin_downloads_no_file_of_another_task(agent, admin_client):
    _, url = _stored(agent["alice"])
    task = WireClient(headers=agent["bob"]).rpc(
        "SendMessage",
        {
            "message": _naming("https://elsewhere.example" + url.removeprefix("http://testserver")),
            "configuration": BLOCKING,
        },
    )
    for section in ("history", "timeline"):  # the conversation links either
        download = reverse(
            "admin:stores_taskrecord_download", args=[quote(task["result"]["task"]["id"]), section, 0, 0]
        )
        response = admin_client.get(download)
        assert response.status_code == 404, section


@pytest.mark.parametrize(
    "uri",
    [
        "/a2a/files/../0123456789abcdef0123456789abcdef-x.bin",  # out of a2a-files/
        "/a2a/files/t/..",
        "/a2a/files/t/notes.txt",  # not a key this app makes: someone else's files/ URL
        "https://example.com/docs/files/2024/report.pdf",
    ],
)
def test_only_the_names_this_app_makes_are_stored_names(uri):
    assert files.stored_name({"kind": "file", "file": {"uri": uri}}) is None
