"""Where a person sees the remote tasks a task started: the admin's task detail and the
browsable agent page, both from the metadata key delegation writes (which a client's own
metadata cannot set)."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.template.loader import render_to_string
from django.urls import reverse

from a2a.handlers.delegation import METADATA_KEY
from a2a.http.browse import task_view
from stores.backends import get_task_store
from stores.fields import DELEGATIONS, task_delegations
from stores.memory import MemoryTaskStore
from tests.helpers import send_direct

pytestmark = pytest.mark.django_db

RECORD = {"agent": "billing", "url": "https://billing.example.com/.well-known/agent-card.json",
          "taskId": "remote-1", "contextId": "rctx", "state": "completed"}  # fmt: skip
FORGED = {"agent": "evil", "url": "javascript:alert(1)", "taskId": "remote-2", "state": "working"}


@pytest.fixture(autouse=True)
def store(settings) -> MemoryTaskStore:
    settings.TASK_STORE = MemoryTaskStore()
    return get_task_store()


def saved_task(store: MemoryTaskStore) -> dict:
    task = {"kind": "task", "id": "local-1", "contextId": "ctx", "status": {"state": "completed"},
            "metadata": {METADATA_KEY: [RECORD, FORGED, "not a record"]}}  # fmt: skip
    store.save(task)
    return task


def test_the_key_is_one(settings):
    assert METADATA_KEY == DELEGATIONS == "a2a.delegations"


def test_records_are_read_safely():
    task = {"metadata": {DELEGATIONS: [RECORD, FORGED, "not a record", {"taskId": 3}]}}
    assert task_delegations(task) == [RECORD, {**FORGED, "url": "", "contextId": ""}]
    assert task_delegations({"metadata": {DELEGATIONS: "nonsense"}}) == []
    assert task_delegations({}) == []


def test_the_admin_detail_links_the_remote_tasks(admin_client, store):
    saved_task(store)
    body = admin_client.get(reverse("admin:stores_taskrecord_change", args=[quote("local-1")])).content.decode()
    assert "Remote tasks:" in body
    assert f'<a href="{RECORD["url"]}" rel="noopener noreferrer">billing</a>: task <code>remote-1</code>' in body
    assert "javascript:" not in body.split("task_json")[0].split("Remote tasks:")[1].split("</ul>")[0]
    assert "evil: task <code>remote-2</code>" in body


def test_the_browsable_page_lists_them(store):
    view = task_view(saved_task(store))
    assert [d["taskId"] for d in view["delegations"]] == ["remote-1", "remote-2"]
    html = render_to_string("a2a/agent.html", {"task": view, "card": {}})
    assert f'<a href="{RECORD["url"]}" rel="noopener noreferrer">billing</a>' in html
    assert "javascript:" not in html


def test_a_client_cannot_set_the_key(store):
    message = {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
    task = send_direct(message, metadata={DELEGATIONS: [FORGED], "mine": 1})
    assert store.get(task["id"])["metadata"] == {"mine": 1}
