"""The admin's task page and the agent page read a task's timeline (issue 45): the
interaction in the order it happened, artifacts where they began, on every store; a
task kept without a timeline reads as before (the history, the artifacts, the status)."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

from stores.admin.display import parts_text
from stores.backends import get_task_store, resolve_store
from stores.fields import ARTIFACT_GENERATIONS, TIMELINE
from tests.test_browse import PAGE, client_staff, lines, staff, submit  # noqa: F401 (fixtures)
from tests.test_timeline import FIRST_TURN, SECOND_TURN

pytestmark = pytest.mark.django_db(transaction=True)

#: Both turns as the admin shows them: question, progress, artifact, the agent's question,
#: the follow-up, progress, the result.
IN_ORDER = [FIRST_TURN, "one", "aabb", "more?", SECOND_TURN, "two", f"done: {SECOND_TURN}"]


@pytest.fixture(params=["memory", "file", "orm"])
def two_turns(request, tmp_path, settings, client_staff) -> str:  # noqa: F811
    """A task asked on the agent page, that asked back and was answered: its id."""
    spec = {"memory": "memory", "file": {"BACKEND": f"file:{tmp_path}", "OPTIONS": {"fsync": False}}, "orm": "orm"}
    settings.TASK_STORE = resolve_store(spec[request.param])
    settings.A2A_HANDLER = "tests.handlers.scripted"
    submit(client_staff, text=FIRST_TURN)
    (task,) = get_task_store().list().tasks
    submit(client_staff, text=SECOND_TURN, taskId=task["id"])
    assert get_task_store().get(task["id"])["status"]["state"] == "completed"
    return task["id"]


def admin_conversation(admin_client, task_id: str) -> str:
    body = admin_client.get(reverse("admin:stores_taskrecord_change", args=[quote(task_id)])).content.decode()
    return body.split('class="form-row field-history task-conversation">')[1].split("</fieldset>")[0]


def texts(conversation: str) -> list[str]:
    return re.findall(r'<pre class="task-part-text">([^<]*)</pre>', conversation)


def test_the_admin_shows_the_interaction_in_order(admin_client, two_turns):
    conversation = admin_conversation(admin_client, two_turns)
    assert texts(conversation) == IN_ORDER
    roles = re.findall(r'<div class="task-role">([^<]*)</div>', conversation)
    assert [r.split(" · ")[0] for r in roles] == ["user", "default", "default", "default", "user", "default", "default"]


def test_the_agent_page_shows_the_interaction_in_order(client_staff, two_turns):  # noqa: F811
    page = client_staff.get(PAGE, {"task": two_turns}).content.decode()
    assert lines(page) == [
        ("message user", f"you{FIRST_TURN}"),
        ("status", "working: one"),
        ("message agent artifact", "toolnexus-agentaabb"),
        ("message agent", "toolnexus-agentmore?"),  # asked then, answered since: no longer the question
        ("message user", f"you{SECOND_TURN}"),
        ("status", "working: two"),
        ("message agent artifact", f"toolnexus-agentdone: {SECOND_TURN}"),
    ]


def test_a_task_kept_without_a_timeline_reads_as_before(admin_client, client_staff, two_turns):  # noqa: F811
    store = get_task_store()
    task = store.get(two_turns)
    for key in (TIMELINE, ARTIFACT_GENERATIONS):
        task.pop(key)
    store.save(task)
    said = [parts_text(m["parts"]) for m in task["history"]]
    assert texts(admin_conversation(admin_client, two_turns)) == [*said, "aabb", f"done: {SECOND_TURN}"]
    page = client_staff.get(PAGE, {"task": two_turns}).content.decode()
    assert [text for _, text in lines(page)][-2:] == ["toolnexus-agentaabb", f"toolnexus-agentdone: {SECOND_TURN}"]
    assert ("status", "working: one") not in lines(page)  # the history never held the progress


@pytest.mark.parametrize("kind", ["memory", "file", "orm"])
def test_a_failure_shows_once_and_a_timeline_file_downloads(admin_client, kind, tmp_path, settings):
    """The failed status's message, in the timeline, is not repeated after it; a file part
    of a timeline message links to its own part (after the joined text parts) and downloads."""
    spec = {"memory": "memory", "file": {"BACKEND": f"file:{tmp_path}", "OPTIONS": {"fsync": False}}, "orm": "orm"}
    settings.TASK_STORE = store = resolve_store(spec[kind])
    inline = {"kind": "file", "file": {"bytes": "aGVsbG8=", "name": "hello.txt", "mimeType": "text/plain"}}
    asked = {"kind": "message", "role": "user", "messageId": "m1", "parts": [{"text": "Sum "}, {"text": "it"}, inline]}
    why = {"kind": "message", "role": "agent", "messageId": "s1", "parts": [{"kind": "text", "text": "No quota"}]}
    failed = {"state": "failed", "timestamp": "2026-01-01T00:00:00.000Z", "message": why}
    store.save(
        {
            "kind": "task",
            "id": "fails",
            "contextId": "c",
            "status": failed,
            "history": [asked],
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "half"}]}],
            TIMELINE: [{"g": 1, "message": asked}, {"g": 3, "status": failed}],
            ARTIFACT_GENERATIONS: {"a": [2, None]},
        }
    )
    conversation = admin_conversation(admin_client, "fails")
    assert texts(conversation) == ["Sum it", "half", "No quota"]
    download = reverse("admin:stores_taskrecord_download", args=["fails", "timeline", 0, 2])
    assert f'href="{download}"' in conversation
    assert admin_client.get(download).content == b"hello"
    assert (
        admin_client.get(reverse("admin:stores_taskrecord_download", args=["fails", "timeline", 1, 0])).status_code
        == 404
    )
