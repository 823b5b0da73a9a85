"""The browsable agent (a2a/http/browse.py) with Django's test client: who may see it
(A2A_BROWSABLE_AGENT), the page without JavaScript (a blocking send, the task shown,
an input-required answered, a file attached, cancel), and the stream endpoint's SSE."""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient, Client

from a2a.asgi import A2AASGIHandler
from a2a.http import browse
from stores.backends import get_task_store, resolve_store

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = "/a2a/browse/"


@pytest.fixture
def scripted(settings):
    settings.TASK_STORE = resolve_store("memory")  # a fresh one
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_INPUT_MODES = ["text/plain", "application/json"]
    settings.A2A_SKILLS = [
        {"id": "weather", "name": "Weather", "description": "Forecasts", "tags": ["meteo"], "examples": ["Rain?"]}
    ]


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("ops", password="pw", is_staff=True)


@pytest.fixture
def client_staff(staff) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    return client


def csrf(client: Client) -> str:
    response = client.get(PAGE)
    assert response.status_code == 200
    return response.cookies["csrftoken"].value


def submit(client: Client, **data) -> object:
    """The page's form, posted (with its CSRF token)."""
    return client.post(PAGE, {"csrfmiddlewaretoken": csrf(client), **data})


# --- Who may see it -----------------------------------------------------------------------


def test_anonymous_is_sent_to_the_login(client):
    response = client.get(PAGE)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/a2a/browse/")
    assert client.post(PAGE + "stream", {"text": "hi"}).status_code == 302


def test_signed_in_non_staff_may_not_send(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("pat", password="pw"))
    assert client.get(PAGE).status_code == 302
    assert client.post(PAGE + "stream", {"text": "hi"}).status_code == 403


def test_staff_see_the_card(client_staff, scripted):
    response = client_staff.get(PAGE)
    page = response.content.decode()
    assert "toolnexus-agent" in page
    assert "Weather" in page and "Rain?" in page and "meteo" in page  # the skill, its example and tag
    assert "JSONRPC" in page and "HTTP+JSON" in page and "/a2a/rest" in page  # interfaces
    assert "streaming" in page and "No authentication" in page  # capabilities, security
    assert 'id="send"' in page and "a2a/agent.js" in page


def test_the_setting_closes_the_page(client, staff, settings):
    client.force_login(staff)
    settings.A2A_BROWSABLE_AGENT = False
    assert client.get(PAGE).status_code == 404
    assert client.post(PAGE + "stream", {"text": "hi"}).status_code == 404
    assert client.post(PAGE, {"text": "hi"}).status_code == 404


def test_the_setting_opens_the_page(client, settings, scripted):
    settings.A2A_BROWSABLE_AGENT = "public"
    page = client.get(PAGE).content.decode()
    assert "Weather" in page and 'id="send"' in page
    response = client.post(PAGE, {"text": "hello"})
    assert response.status_code == 200
    assert "done: hello" in response.content.decode()


def test_public_page_of_an_authenticated_agent_sends_for_staff_only(client, settings, scripted):
    settings.A2A_BROWSABLE_AGENT = "public"
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    page = client.get(PAGE).content.decode()
    assert "sign in as staff" in page and 'id="send"' not in page
    assert "bearer" in page.lower()  # the security scheme is shown
    assert client.post(PAGE, {"text": "hi"}).status_code == 403
    assert client.post(PAGE + "stream", {"text": "hi"}).status_code == 403


def test_the_page_needs_a_csrf_token(client_staff, scripted):
    assert client_staff.post(PAGE, {"text": "hi"}).status_code == 403
    assert client_staff.post(PAGE + "stream", {"text": "hi"}).status_code == 403


def test_direct_asgi_leaves_the_page_to_the_middleware(settings):
    settings.A2A_DIRECT_ASGI = True
    handler = A2AASGIHandler()
    assert handler._direct_view("/a2a/browse/") is None
    assert handler._direct_view("/a2a/browse/stream") is None
    assert handler._direct_view("/a2a/") is not None


# --- The page without JavaScript ----------------------------------------------------------


def test_send_ask_answer_and_open_in_the_admin(client_staff, staff, scripted):
    response = submit(client_staff, text="progress:Looking;ask:Which city?")
    page = response.content.decode()
    assert response.status_code == 200
    assert "input-required" in page and "Which city?" in page
    (task,) = _tasks()
    task_id = task["id"]
    assert f'name="taskId" value="{task_id}"' in page  # the form answers this task
    assert f"/admin/stores/taskrecord/{task_id}/change/" in page
    stored = get_task_store().get(task_id)
    assert stored["_call"]["binding"] == "browser"
    assert stored.get("_owner", "") == ""  # an agent without authentication: unowned

    response = submit(client_staff, text="artifact:Paris forecast", taskId=task_id)
    page = response.content.decode()
    assert "completed" in page and "Paris forecast" in page and "done: artifact:Paris forecast" in page


def lines(page: str) -> list[tuple[str, str]]:
    """(classes, text) of each line of the page's conversation."""
    found = re.findall(r'<li class="(message [^"]*|status)"[^>]*>(.*?)</li>', page, re.S)
    return [(classes, html.unescape(re.sub(r"<[^>]+>", "", text)).strip()) for classes, text in found]


def test_the_task_reads_as_a_conversation(client_staff, scripted):
    """The user's message, then the agent's progress and replies in the order they came
    (the timeline): an artifact's chunks joined in one, the handler's answer; no line for
    a status without a message (no "submitted: task ...")."""
    script = "progress:Reading;chunk:r:Hel;chunk:r:lo;last:r: world"
    page = submit(client_staff, text=script).content.decode()
    (task,) = _tasks()
    assert lines(page) == [
        ("message user", f"you{script}"),
        ("status", "working: Reading"),
        ("message agent artifact", "toolnexus-agentHello world"),
        ("message agent artifact", f"toolnexus-agentdone: {script}"),
    ]
    assert page.count(f'data-reply="{task["id"]}/r"') == 1
    assert "submitted:" not in page and page.count(">working<") == 1  # the progress line, once


def test_a_status_message_is_a_line_a_question_a_message(client_staff, scripted):
    assert lines(submit(client_staff, text="fail:Out of quota").content.decode()) == [
        ("message user", "youfail:Out of quota"),
        ("status", "failed: Out of quota"),
    ]
    assert lines(submit(client_staff, text="ask:Which city?").content.decode()) == [
        ("message user", "youask:Which city?"),
        ("message agent question", "toolnexus-agentWhich city?"),
    ]


def test_a_direct_reply_follows_the_message_it_answers(client_staff, scripted):
    assert lines(submit(client_staff, text="reply:Hello to you").content.decode()) == [
        ("message user", "youreply:Hello to you"),
        ("message agent", "toolnexus-agentHello to you"),
    ]


def test_the_staff_user_owns_the_task_on_an_authenticated_agent(client_staff, staff, settings, scripted):
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    page = submit(client_staff, text="hello").content.decode()
    assert "done: hello" in page
    (task,) = _tasks()
    assert task["_owner"] == str(staff.pk)  # as the A2A authentication names the user


def test_a_file_is_attached_as_bytes(client_staff, scripted):
    upload = _file("notes.txt", b"hello file", "text/plain")
    response = client_staff.post(PAGE, {"csrfmiddlewaretoken": csrf(client_staff), "text": "see file", "file": upload})
    assert response.status_code == 200
    (task,) = _tasks()
    file_part = task["history"][0]["parts"][1]
    assert file_part["kind"] == "file"
    assert file_part["file"]["name"] == "notes.txt"
    assert base64.b64decode(file_part["file"]["bytes"]) == b"hello file"
    assert "notes.txt (text/plain, 10 bytes)" in response.content.decode()


#: What the page says of a CSV file to an agent taking text and JSON.
REFUSED_CSV = (
    "This agent does not accept CSV files (text/csv). It accepts: text (text/plain), JSON data (application/json)."
)


def test_a_file_of_a_refused_type_is_an_error_on_the_page(client_staff, scripted):
    """Said in words (no ``message.parts[1]``), the typed text kept in the form, no task."""
    upload = _file("sales.csv", b"a,b\n1,2\n", "text/csv")
    data = {"csrfmiddlewaretoken": csrf(client_staff), "text": "Sum the <b> column", "file": upload}
    response = client_staff.post(PAGE, data)
    assert response.status_code == 400
    body = response.content.decode()
    assert re.search(r'<p class="error" id="error">([^<]*)</p>', body).group(1) == REFUSED_CSV
    assert "parts[" not in body
    assert '<textarea id="id_text" name="text" placeholder="Type a message">Sum the &lt;b&gt; column</textarea>' in body
    assert '<section id="task" hidden>' in body
    assert _tasks() == []


def test_the_stream_refuses_a_file_type_in_words(staff, scripted):
    asyncio.run(_the_stream_refuses_a_file_type_in_words(staff))


async def _the_stream_refuses_a_file_type_in_words(staff) -> None:
    client = AsyncClient()
    await client.aforce_login(staff)
    response = await client.post(PAGE + "stream", {"text": "hi", "file": _file("s.csv", b"a,b", "text/csv")})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"] == REFUSED_CSV
    assert error["code"] == -32005  # still the protocol's ContentTypeNotSupportedError


@pytest.mark.parametrize(
    ("media", "words"),
    [
        ("text/csv", "CSV files (text/csv)"),
        ("image/*", "image files (image/*)"),
        ("*/*", "any file (*/*)"),
        ("application/vnd.ms-excel", "files of type application/vnd.ms-excel"),
    ],
)
def test_media_types_in_words(media, words):
    assert browse._media_words(media) == words


def test_an_empty_message_is_an_error(client_staff, scripted):
    response = submit(client_staff, text="  ")
    assert response.status_code == 400
    assert "Type a message or attach a file" in response.content.decode()


def test_cancel_from_the_page(client_staff, scripted):
    page = submit(client_staff, text="ask:Sure?").content.decode()
    (task,) = _tasks()
    assert 'id="cancel-button"' in page
    token = csrf(client_staff)
    response = client_staff.post(PAGE + "cancel", {"csrfmiddlewaretoken": token, "taskId": task["id"]})
    assert response.status_code == 200 and "canceled" in response.content.decode()
    assert get_task_store().get(task["id"])["status"]["state"] == "canceled"
    # the script's form: JSON (v1.0); a second cancel is TaskNotCancelable
    response = client_staff.post(
        PAGE + "cancel", {"taskId": task["id"]}, headers={"X-CSRFToken": token, "Accept": "application/json"}
    )
    assert response.status_code == 400  # TaskNotCancelable (spec 5.4: FAILED_PRECONDITION)
    assert response.json()["error"]["code"] == -32002


def test_a_task_by_id(client_staff, scripted):
    submit(client_staff, text="hello")
    (task,) = _tasks()
    page = client_staff.get(PAGE, {"task": task["id"]}).content.decode()
    assert "done: hello" in page
    assert client_staff.get(PAGE, {"task": "nope"}).status_code == 404


# --- The stream endpoint -------------------------------------------------------------------


def test_the_stream_is_v1_sse(staff, scripted):
    asyncio.run(_the_stream_is_v1_sse(staff))


async def _the_stream_is_v1_sse(staff) -> None:
    client = AsyncClient()
    await client.aforce_login(staff)
    response = await client.post(PAGE + "stream", {"text": "progress:Reading;artifact:A table;ask:Which city?"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    events = [json.loads(line[len("data: ") :]) for line in body.splitlines() if line.startswith("data: ")]
    assert "task" in events[0]
    task_id = events[0]["task"]["id"]
    states = [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]
    assert states[-1] == "TASK_STATE_INPUT_REQUIRED"
    assert "TASK_STATE_WORKING" in states
    assert any(
        e["artifactUpdate"]["artifact"]["parts"] == [{"text": "A table"}] for e in events if "artifactUpdate" in e
    )
    assert events[-1]["statusUpdate"]["status"]["message"]["parts"] == [{"text": "Which city?"}]

    response = await client.post(PAGE + "stream", {"text": "fine", "taskId": task_id})
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    assert "TASK_STATE_COMPLETED" in body and "done: fine" in body


def test_the_stream_answers_a_bad_message_with_json(staff, scripted):
    asyncio.run(_the_stream_answers_a_bad_message_with_json(staff))


async def _the_stream_answers_a_bad_message_with_json(staff) -> None:
    client = AsyncClient()
    await client.aforce_login(staff)
    response = await client.post(PAGE + "stream", {"text": "hi", "taskId": "no-such-task"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32001


def _file(name: str, content: bytes, content_type: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type=content_type)


def _tasks() -> list[dict]:
    return list(get_task_store().scan())


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        (False, ""),
        (None, ""),
        ("false", ""),
        ("off", ""),
        ("staff", "staff"),
        ("public", "public"),
        ("PUBLIC ", "public"),
        ("typo", "staff"),
    ],
)
def test_the_setting_from_the_environment(settings, value, mode):
    settings.A2A_BROWSABLE_AGENT = value
    assert browse.browsable_mode() == mode


def test_a_streamed_reply_is_one_text():
    """The page's conversation: an artifact's consecutive text parts (a streamed reply's
    chunks) are one text, as the script grows them (stores.fields.joined_parts)."""
    chunks = [{"kind": "text", "text": t} for t in ("Rain ", "in Oslo", " tomorrow")]
    task = {"id": "t", "status": {"state": "completed"}, "artifacts": [{"artifactId": "r", "parts": chunks}]}
    (reply,) = browse.conversation(task)
    assert reply["parts"] == [{"kind": "text", "text": "Rain in Oslo tomorrow"}]
