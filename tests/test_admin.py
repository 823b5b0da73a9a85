"""The task admin: one "Tasks" page per configured store (ORM ModelAdmin, or pages read
through the memory and file stores), with filter, search, pagination and detail."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.test import RequestFactory
from django.urls import reverse

from stores.admin import TaskRecordAdmin, parts_text
from stores.base import TaskPage, TaskQuery, TaskStore, format_timestamp
from stores.memory import MemoryTaskStore
from stores.models import TaskRecord
from stores.orm import OrmTaskStore
from stores.resolve import get_task_store, resolve_store

pytestmark = pytest.mark.django_db

STORE_LIST = "/admin/stores/storedtask/"
ORM_LIST = "/admin/stores/taskrecord/"
T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def make_task(i: int, *, state: str = "working", context: str = "ctx-a", task_id: str | None = None) -> dict:
    return {
        "kind": "task",
        "id": task_id or f"task-{i:03d}",
        "contextId": context,
        "status": {
            "state": state,
            "timestamp": format_timestamp(T0 + dt.timedelta(seconds=i)),
            "message": {"kind": "message", "role": "agent", "messageId": f"s{i}", "parts": [{"text": f"status {i}"}]},
        },
        "artifacts": [{"artifactId": "a1", "name": "answer", "parts": [{"kind": "text", "text": f"artifact {i}"}]}],
        "history": [{"kind": "message", "role": "user", "messageId": f"h{i}", "parts": [{"text": f"history {i}"}]}],
        "metadata": {"origin": "test"},
    }


@pytest.fixture(params=["memory", "file", "orm"])
def kind(request) -> str:
    return request.param


@pytest.fixture
def store(kind, tmp_path, settings) -> TaskStore:
    """A fresh store of ``kind``, configured as the project's TASK_STORE."""
    spec = {"memory": "memory", "file": {"BACKEND": f"file:{tmp_path}", "OPTIONS": {"fsync": False}}, "orm": "orm"}
    settings.TASK_STORE = resolve_store(spec[kind])
    assert get_task_store() is settings.TASK_STORE
    return settings.TASK_STORE


@pytest.fixture
def list_url(kind) -> str:
    return ORM_LIST if kind == "orm" else STORE_LIST


def detail_url(kind: str, task_id: str) -> str:
    model = "taskrecord" if kind == "orm" else "storedtask"
    return reverse(f"admin:stores_{model}_change", args=[quote(task_id)])


def rows(response) -> list[tuple[str, str]]:
    """(id, state) of each result row; both admins render the same cell classes."""
    body = response.content.decode()
    ids = re.findall(r'<th class="field-id"><a href="[^"]*">([^<]*)</a></th>', body)
    states = re.findall(r'<td class="field-state">([^<]*)</td>', body)
    return list(zip((html.unescape(i) for i in ids), states, strict=True))


def test_index_shows_exactly_one_tasks_link(admin_client, store, list_url):
    body = admin_client.get("/admin/").content.decode()
    assert f'href="{list_url}"' in body
    other = STORE_LIST if list_url == ORM_LIST else ORM_LIST
    assert other not in body
    assert body.count(">Tasks</a>") == 1


def test_list_shows_ids_and_states(admin_client, store, list_url):
    store.save(make_task(1, state="completed"))
    store.save(make_task(2, state="working"))
    response = admin_client.get(list_url)
    assert response.status_code == 200
    assert rows(response) == [("task-002", "working"), ("task-001", "completed")]


def test_state_filter(admin_client, store, list_url):
    for i, state in enumerate(["completed", "working", "completed", "failed"]):
        store.save(make_task(i, state=state))
    assert rows(admin_client.get(list_url, {"state": "completed"})) == [
        ("task-002", "completed"),
        ("task-000", "completed"),
    ]
    assert rows(admin_client.get(list_url, {"state": "canceled"})) == []


def test_search_by_id_and_by_context(admin_client, store, list_url):
    store.save(make_task(1, context="ctx-a"))
    store.save(make_task(2, context="ctx-b"))
    store.save(make_task(3, context="ctx-b"))
    assert rows(admin_client.get(list_url, {"q": "task-002"})) == [("task-002", "working")]
    assert [i for i, _ in rows(admin_client.get(list_url, {"q": "ctx-b"}))] == ["task-003", "task-002"]
    assert rows(admin_client.get(list_url, {"q": "nothing-like-it"})) == []


def test_pagination(admin_client, store, kind, list_url):
    for i in range(60):
        store.save(make_task(i))
    first = admin_client.get(list_url)
    assert "60 tasks" in first.content.decode() or "60 total" in first.content.decode()
    page1 = [i for i, _ in rows(first)]
    assert len(page1) == 50
    if kind == "orm":
        second = admin_client.get(list_url, {"p": 2})
    else:
        next_href = html.unescape(re.search(r'<a href="([^"]*)" class="next-page">', first.content.decode()).group(1))
        assert "page_token=" in next_href
        second = admin_client.get(list_url + next_href)
        assert 'class="next-page"' not in second.content.decode()
    page2 = [i for i, _ in rows(second)]
    assert len(page2) == 10
    assert sorted(page1 + page2, reverse=True) == page1 + page2 == [f"task-{i:03d}" for i in range(59, -1, -1)]


def test_detail_shows_message_artifacts_history(admin_client, store, kind):
    store.save(make_task(7, state="completed"))
    response = admin_client.get(detail_url(kind, "task-007"))
    assert response.status_code == 200
    body = response.content.decode()
    for text in (
        "task-007",
        "ctx-a",
        "completed",
        "status 7",
        "artifact 7",
        "history 7",
        "answer",
        "&quot;origin&quot;",
    ):
        assert text in body


def test_detail_of_an_id_with_url_characters(admin_client, store, kind):
    odd = "a/b c?d&e_f%2F"
    store.save(make_task(1, task_id=odd))
    listed = admin_client.get(ORM_LIST if kind == "orm" else STORE_LIST).content.decode()
    assert f'href="{detail_url(kind, odd)}"' in listed
    response = admin_client.get(detail_url(kind, odd))
    assert response.status_code == 200
    assert "artifact 1" in response.content.decode()


def test_unknown_id_redirects_with_a_message(admin_client, store, kind):
    response = admin_client.get(detail_url(kind, "no-such-task"), follow=True)
    assert response.status_code == 200
    assert response.redirect_chain and response.redirect_chain[0][1] == 302
    assert "no-such-task" in response.content.decode()
    assert "Perhaps it was deleted?" in response.content.decode()


def test_anonymous_is_sent_to_login(client, store, kind, list_url):
    for url in (list_url, detail_url(kind, "task-001")):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")


def test_inactive_admin_is_forbidden(admin_client, store, list_url):
    other = STORE_LIST if list_url == ORM_LIST else ORM_LIST
    assert admin_client.get(other).status_code == 403


# --- The store-backed pages only ------------------------------------------------------


class PickyStore(MemoryTaskStore):
    """A store that rejects, when listing, a page token it did not make (as the ORM store can)."""

    def list(self, query: TaskQuery | None = None) -> TaskPage:
        if query and query.page_token:
            raise ValueError("stale page token")
        return super().list(query)


@pytest.mark.parametrize(
    ("store_class", "token"),
    [(MemoryTaskStore, "garbage!"), (MemoryTaskStore, "WzEsMl0"), (PickyStore, "WyJ4IiwieSJd")],
)
def test_bad_page_token_shows_an_error_and_the_first_page(admin_client, settings, store_class, token):
    settings.TASK_STORE = store = store_class()
    store.save(make_task(1))
    response = admin_client.get(STORE_LIST, {"page_token": token})
    assert response.status_code == 200
    assert "page token is not valid" in response.content.decode()
    assert rows(response) == [("task-001", "working")]


def test_unknown_state_shows_an_error(admin_client, settings):
    settings.TASK_STORE = store = resolve_store("memory")
    store.save(make_task(1))
    response = admin_client.get(STORE_LIST, {"state": "exploded"})
    assert response.status_code == 200
    assert "Unknown state" in response.content.decode()
    assert rows(response) == [("task-001", "working")]


def test_id_search_keeps_the_state_filter(admin_client, settings):
    settings.TASK_STORE = store = resolve_store("memory")
    store.save(make_task(1, state="completed"))
    assert rows(admin_client.get(STORE_LIST, {"q": "task-001", "state": "completed"})) == [("task-001", "completed")]
    assert rows(admin_client.get(STORE_LIST, {"q": "task-001", "state": "working"})) == []


def test_misconfigured_store_shows_an_error(admin_client, settings):
    settings.TASK_STORE = "no-such-backend"
    response = admin_client.get(STORE_LIST)
    assert response.status_code == 200
    assert "misconfigured" in response.content.decode()
    assert admin_client.get("/admin/").status_code == 200


def test_staff_needs_the_view_permission(client, settings, django_user_model):
    settings.TASK_STORE = resolve_store("memory")
    user = django_user_model.objects.create_user("staff", password="x", is_staff=True)
    client.force_login(user)
    assert client.get(STORE_LIST).status_code == 403
    assert STORE_LIST not in client.get("/admin/").content.decode()
    user.user_permissions.add(Permission.objects.get(codename="view_storedtask", content_type__app_label="stores"))
    client.force_login(django_user_model.objects.get(pk=user.pk))
    assert client.get(STORE_LIST).status_code == 200
    assert STORE_LIST in client.get("/admin/").content.decode()


def test_orm_admin_reads_the_configured_database(settings, admin_user):
    settings.TASK_STORE = OrmTaskStore(using="elsewhere")
    request = RequestFactory().get(ORM_LIST)
    request.user = admin_user
    model_admin = admin.site._registry[TaskRecord]
    assert isinstance(model_admin, TaskRecordAdmin)
    assert model_admin.get_queryset(request).db == "elsewhere"


def test_parts_text():
    parts = [
        {"kind": "text", "text": "hello"},
        {"kind": "data", "data": {"a": 1}},
        {"kind": "file", "file": {"name": "report.pdf", "mimeType": "application/pdf"}},
        "junk",
    ]
    assert parts_text(parts) == 'hello\n{\n  "a": 1\n}\n[file report.pdf (application/pdf)]'
    assert parts_text(None) == ""
