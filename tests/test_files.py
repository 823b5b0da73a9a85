"""File parts through Django's storage (a2a.core.files, a2a.http.files): a large file part
is kept in the storage as a ``url`` part, downloaded by the task's owner only, read by the
handler, refused over the limits, and deleted with its task; on every store."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.urls import reverse
from rest_framework.authtoken.models import Token

from a2a.core import files
from a2a.ops.checks import check_files
from a2a.protocol.errors import InvalidParamsError
from a2a.protocol.v03 import check_base64
from a2a.testing import WireClient
from a2a.testing.client import rpc_body
from stores.retention import delete_tasks
from tests.helpers import call
from tests.helpers import rpc10 as rpc

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

CONTENT = os.urandom(300_000)
V10 = {"A2A-Version": "1.0"}
#: A v0.3 configuration, as the v1.0 requests here have always carried it.
BLOCKING = {"blocking": True}


@pytest.fixture
def agent(settings, use_store, tmp_path):
    return file_agent(settings, tmp_path)


def file_agent(settings, tmp_path):
    """The agent these tests call: offloading over 100 kB to a storage in ``tmp_path``, its
    callers' headers (alice, bob)."""
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    settings.A2A_HANDLER = "tests.handlers.digest"
    settings.STORAGES = {
        **settings.STORAGES,
        "a2a-files": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    settings.A2A_FILES_STORAGE = "a2a-files"
    settings.A2A_FILES_OFFLOAD_BYTES = 100_000
    settings.A2A_INPUT_MODES = settings.A2A_OUTPUT_MODES = ["text/plain", "application/octet-stream"]
    alice = Token.objects.create(user=User.objects.create_user("alice")).key
    bob = Token.objects.create(user=User.objects.create_user("bob")).key
    return {"alice": {"Authorization": f"Bearer {alice}"}, "bob": {"Authorization": f"Bearer {bob}"}}


def file_message(content: bytes, **extra):
    raw = base64.b64encode(content).decode()
    part = {"raw": raw, "mediaType": "application/octet-stream", "filename": "data.bin"}
    return {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [part], **extra}


def test_a_large_part_is_stored_and_served_to_its_owner_only(agent, store):
    task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)["task"]
    # The handler read the content from the storage.
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    answer = task["status"].get("message") or task["artifacts"][0]
    assert f"{hashlib.sha256(CONTENT).hexdigest()} {len(CONTENT)}" in str(answer)
    part = task["history"][0]["parts"][0]
    assert "raw" not in part and part["mediaType"] == "application/octet-stream" and part["filename"] == "data.bin"
    url = part["url"]
    assert url.startswith("http://testserver/a2a/files/" + task["id"] + "/")
    path = url.removeprefix("http://testserver")
    stored = store.get(task["id"])
    assert "bytes" not in stored["history"][0]["parts"][0]["file"]
    download = call("GET", path, headers=agent["alice"])
    assert download.status_code == 200 and download.content == CONTENT
    assert 'filename="data.bin"' in download.headers["content-disposition"]
    # Another caller, no caller, an unknown file: 404, like an unknown task.
    assert call("GET", path, headers=agent["bob"]).status_code == 404
    assert call("GET", path).status_code == 404
    assert call("GET", path + "x", headers=agent["alice"]).status_code == 404
    assert call("GET", f"/a2a/files/{task['id']}/..", headers=agent["alice"]).status_code == 404


def test_a_small_part_stays_inline(agent):
    task = WireClient(headers=agent["alice"]).send(file_message(b"small"), configuration=BLOCKING)["task"]
    assert task["history"][0]["parts"][0]["raw"] == base64.b64encode(b"small").decode()


def test_limits_answer_413(agent, settings):
    settings.A2A_FILES_MAX_PART_BYTES = len(CONTENT) - 1
    error = rpc("SendMessage", {"message": file_message(CONTENT)}, agent["alice"])["error"]
    assert error["code"] == -32600 and "A2A_FILES_MAX_PART_BYTES" in error["message"]
    rest = call(
        "POST", "/a2a/rest/message:send", json={"message": file_message(CONTENT)}, headers={**agent["alice"], **V10}
    )
    assert rest.status_code == 413 and "A2A_FILES_MAX_PART_BYTES" in rest.json()["error"]["message"]
    settings.A2A_FILES_MAX_PART_BYTES = None
    settings.A2A_FILES_MAX_TASK_BYTES = len(CONTENT) * 2 - 1
    two = file_message(CONTENT)
    two["parts"] *= 2
    error = rpc("SendMessage", {"message": two}, agent["alice"])["error"]
    assert error["code"] == -32600 and "A2A_FILES_MAX_TASK_BYTES" in error["message"]
    assert not os.path.exists(files.storage().path("a2a-files"))  # refused before anything was written


def test_deleting_the_task_deletes_its_files(agent, store):
    task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)["task"]
    name = files.stored_name({"kind": "file", "file": {"uri": task["history"][0]["parts"][0]["url"]}})
    assert files.storage().exists(name)
    assert delete_tasks(store, [store.get(task["id"])])
    assert not files.storage().exists(name)


def test_a_large_artifact_part_is_stored_and_deleted_with_its_task(agent, store):
    sent = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "big:200000"}]}}
    task = rpc("SendMessage", {**sent, "configuration": {"blocking": True}}, agent["alice"])["result"]["task"]
    part = task["artifacts"][0]["parts"][0]
    assert "raw" not in part and part["filename"] == "out.bin"
    path = part["url"]
    assert path.startswith(f"/a2a/files/{task['id']}/")  # no A2A_PUBLIC_URL: a path on the agent's host
    assert call("GET", path, headers=agent["alice"]).content == b"x" * 200_000
    assert call("GET", path, headers=agent["bob"]).status_code == 404
    name = files.stored_name({"kind": "file", "file": {"uri": path}})
    assert delete_tasks(store, [store.get(task["id"])]) and not files.storage().exists(name)


def test_a_follow_up_message_is_offloaded_and_counted_in_the_task(agent, settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_FILES_MAX_TASK_BYTES = len(CONTENT) * 2
    first = file_message(CONTENT)
    first["parts"].append({"text": "ask:more?"})
    task = WireClient(headers=agent["alice"]).send(first, configuration=BLOCKING)["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # Bob cannot add files to Alice's task: nothing is written for him.
    before = files.storage().listdir(files.prefix(task["id"]))[1]
    error = WireClient(headers=agent["bob"]).rpc(
        "SendMessage", {"message": file_message(CONTENT, taskId=task["id"]), "configuration": BLOCKING}
    )["error"]
    assert error["code"] == -32001 and files.storage().listdir(files.prefix(task["id"]))[1] == before
    # Over the task's limit with the first message's file: refused.
    error = WireClient(headers=agent["alice"]).rpc(
        "SendMessage", {"message": file_message(CONTENT + b"!", taskId=task["id"]), "configuration": BLOCKING}
    )["error"]
    assert error["code"] == -32600 and "A2A_FILES_MAX_TASK_BYTES" in error["message"]
    done = WireClient(headers=agent["alice"]).send(file_message(CONTENT, taskId=task["id"]), configuration=BLOCKING)[
        "task"
    ]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    follow_up = done["history"][-2 if done["history"][-1]["role"] == "ROLE_AGENT" else -1]
    assert (
        call("GET", follow_up["parts"][0]["url"].removeprefix("http://testserver"), headers=agent["alice"]).content
        == CONTENT
    )


def test_system_check_names_an_unknown_storage(settings):
    settings.A2A_FILES_STORAGE = "nowhere"
    [error] = check_files()
    assert error.id == "a2a.E120" and "'nowhere'" in error.msg
    settings.A2A_FILES_STORAGE = "default"
    assert check_files() == []


def test_the_admin_links_and_downloads_an_offloaded_part(agent, admin_client):
    task = WireClient(headers=agent["alice"]).send(file_message(CONTENT), configuration=BLOCKING)["task"]
    # the conversation reads the task's timeline: the user's message is its first entry
    download = reverse("admin:stores_taskrecord_download", args=[quote(task["id"]), "timeline", 0, 0])
    body = admin_client.get(reverse("admin:stores_taskrecord_change", args=[quote(task["id"])])).content.decode()
    assert f'href="{download}"' in body
    response = admin_client.get(download)
    assert response.status_code == 200 and b"".join(response.streaming_content) == CONTENT
    assert response["Content-Disposition"] == 'attachment; filename="data.bin"'
    files.delete_files([task["id"]])
    assert admin_client.get(download).status_code == 404  # gone from the storage


def test_a_v03_client_gets_a_uri_part(agent):
    raw = base64.b64encode(CONTENT).decode()
    file = {"bytes": raw, "mimeType": "application/octet-stream", "name": "data.bin"}
    message = {"kind": "message", "messageId": "m03", "role": "user", "parts": [{"kind": "file", "file": file}]}
    body = rpc_body("message/send", {"message": message})
    task = call("POST", "/a2a/", json=body, headers=agent["alice"]).json()["result"]
    sent = task["history"][0]["parts"][0]["file"]
    assert "bytes" not in sent and sent["name"] == "data.bin" and sent["mimeType"] == "application/octet-stream"
    path = sent["uri"].removeprefix("http://testserver")
    assert call("GET", path, headers=agent["alice"]).content == CONTENT


@pytest.mark.parametrize("bad", ["A" * (3 << 20) + "!AAA", "QQ==" * 300_000, "A" * ((2 << 20) + 1)])
def test_large_invalid_base64_is_refused_however_it_is_sliced(bad):
    with pytest.raises(InvalidParamsError, match="not valid base64"):
        check_base64(bad, "part.raw")
    assert check_base64("QUJD" * 600_000 + "QQ==", "part.raw")


def test_another_agents_file_is_served_on_its_own_routes_only(agent, settings):
    settings.A2A_AGENTS = {"billing": {"HANDLER": "tests.handlers.digest", "INPUT_MODES": ["application/octet-stream"]}}
    body = rpc_body("SendMessage", {"message": file_message(CONTENT)})
    sent = call("POST", "/agents/billing/a2a/", json=body, headers={**agent["alice"], **V10}).json()
    url = sent["result"]["task"]["history"][0]["parts"][0]["url"]
    path = url.removeprefix("http://testserver")
    assert path.startswith("/agents/billing/a2a/files/")
    assert call("GET", path, headers=agent["alice"]).content == CONTENT
    # The default agent's route does not serve the billing agent's task's file.
    assert call("GET", path.removeprefix("/agents/billing"), headers=agent["alice"]).status_code == 404


def test_the_agent_page_links_and_downloads_its_visitors_files_only(agent, client):
    # A staff visitor owns the tasks they send from the page; the page's links use its
    # sign-in (a session), not the A2A route's bearer token.
    alice = User.objects.get(username="alice")
    alice.is_staff = True
    alice.save()
    client.force_login(alice)
    page = client.post("/a2a/browse/", {"text": "", "file": _upload()})
    assert page.status_code == 200, page.content[:300]
    body = page.content.decode()
    [link] = [href for href in body.split('href="')[1:] if href.startswith("files/")]
    link = link.split('"', 1)[0]
    task_id = link.split("/")[1]
    assert f'<a href="{link}" download>data.bin' in body
    again = client.get("/a2a/browse/", {"task": task_id}).content.decode()
    assert f'href="{link}"' in again
    download = client.get("/a2a/browse/" + link)
    assert download.status_code == 200 and asyncio.run(_read(download)) == CONTENT
    # Another staff visitor, a signed-out one: not theirs.
    bob = User.objects.get(username="bob")
    bob.is_staff = True
    bob.save()
    client.force_login(bob)
    assert client.get("/a2a/browse/" + link).status_code == 404
    client.logout()
    assert client.get("/a2a/browse/" + link).status_code == 302  # to the login page


async def _read(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


def _upload():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("data.bin", CONTENT, content_type="application/octet-stream")
