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

from stores.admin.display import parts_text
from stores.admin.options import TaskRecordAdmin
from stores.backends import get_task_store, resolve_store
from stores.base import TaskPage, TaskQuery, TaskStore
from stores.memory import MemoryTaskStore
from stores.models import TaskRecord
from stores.orm import OrmTaskStore
from stores.timestamps import format_timestamp

pytestmark = pytest.mark.django_db

TASK_LIST = "/admin/stores/taskrecord/"  # the one task list, whatever the store
OLD_LIST = "/admin/stores/storedtask/"  # the memory and file stores' list under the StoredTask model: redirects
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
    return TASK_LIST


def detail_url(kind: str, task_id: str) -> str:
    return reverse("admin:stores_taskrecord_change", args=[quote(task_id)])


def rows(response) -> list[tuple[str, str]]:
    """(id, state) of each result row; both admins render the same cell classes."""
    body = response.content.decode()
    ids = re.findall(r'<th class="field-task_id"><a href="[^"]*"><span class="task-id" title="([^"]*)">', body)
    badge = r'<span class="task-state task-state-[a-z-]+">([^<]*)</span>'
    states = re.findall(rf'<td class="field-state[a-z_]*">{badge}</td>', body)
    return list(zip((html.unescape(i) for i in ids), states, strict=True))


def test_index_shows_exactly_one_tasks_link(admin_client, store, list_url):
    body = admin_client.get("/admin/").content.decode()
    assert f'href="{list_url}"' in body
    assert OLD_LIST not in body
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
    listed = admin_client.get(TASK_LIST).content.decode()
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


def test_the_former_list_url_redirects_to_the_one_list(admin_client, store, kind):
    store.save(make_task(1))
    response = admin_client.get(OLD_LIST, {"state": "working"})
    assert response.status_code == 302 and response["Location"] == TASK_LIST + "?state=working"
    old_detail = admin_client.get(OLD_LIST + "task-001/change/")
    assert old_detail["Location"] == detail_url(kind, "task-001")
    assert rows(admin_client.get(OLD_LIST, {"state": "working"}, follow=True)) == [("task-001", "working")]


def test_one_title_whatever_the_store(admin_client, store):
    body = admin_client.get(TASK_LIST).content.decode()
    assert "<h1>Tasks</h1>" in body and "<title>Tasks |" in body
    assert "Select task to view" not in body


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
    response = admin_client.get(TASK_LIST, {"page_token": token})
    assert response.status_code == 200
    assert "page token is not valid" in response.content.decode()
    assert rows(response) == [("task-001", "working")]


def test_unknown_state_shows_an_error(admin_client, settings):
    settings.TASK_STORE = store = resolve_store("memory")
    store.save(make_task(1))
    response = admin_client.get(TASK_LIST, {"state": "exploded"})
    assert response.status_code == 200
    assert "Unknown state" in response.content.decode()
    assert rows(response) == [("task-001", "working")]


def test_id_search_keeps_the_state_filter(admin_client, settings):
    settings.TASK_STORE = store = resolve_store("memory")
    store.save(make_task(1, state="completed"))
    assert rows(admin_client.get(TASK_LIST, {"q": "task-001", "state": "completed"})) == [("task-001", "completed")]
    assert rows(admin_client.get(TASK_LIST, {"q": "task-001", "state": "working"})) == []


def test_misconfigured_store_shows_an_error(admin_client, settings):
    settings.TASK_STORE = "no-such-backend"
    response = admin_client.get(TASK_LIST)
    assert response.status_code == 200
    assert "misconfigured" in response.content.decode()
    assert admin_client.get("/admin/").status_code == 200


def test_staff_needs_the_view_permission(client, settings, django_user_model):
    settings.TASK_STORE = resolve_store("memory")
    user = django_user_model.objects.create_user("staff", password="x", is_staff=True)
    client.force_login(user)
    assert client.get(TASK_LIST).status_code == 403
    assert TASK_LIST not in client.get("/admin/").content.decode()
    user.user_permissions.add(Permission.objects.get(codename="view_storedtask", content_type__app_label="stores"))
    client.force_login(django_user_model.objects.get(pk=user.pk))
    assert client.get(TASK_LIST).status_code == 200
    assert TASK_LIST in client.get("/admin/").content.decode()


def test_orm_admin_reads_the_configured_database(settings, admin_user):
    settings.TASK_STORE = OrmTaskStore(using="elsewhere")
    request = RequestFactory().get(TASK_LIST)
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
    chunks = [{"kind": "text", "text": "Hel"}, {"kind": "text", "text": "lo, "}, {"text": "world"}, *parts[1:2]]
    assert parts_text(chunks) == 'Hello, world\n{\n  "a": 1\n}'  # a streamed answer's chunks: one text


#: A streamed answer: 292 chunks appended to one artifact, one text part each.
WORDS = [f"word{i} " for i in range(292)]


def test_a_streamed_answer_reads_as_one_text(admin_client, store, kind, list_url):
    """The task page shows an artifact's consecutive text parts as one text (not 292
    lines); the list's preview reads an agent message in chunks as its words; a file
    part after them keeps its own download link (its index in the stored parts)."""
    task = recent_task("streamed", state="completed")
    del task["status"]["message"]
    chunks = [{"kind": "text", "text": word} for word in WORDS]
    inline = {"kind": "file", "file": {"bytes": "aGVsbG8=", "name": "hello.txt", "mimeType": "text/plain"}}
    parts = [*chunks, inline, {"kind": "text", "text": "PS"}]
    task["artifacts"] = [{"artifactId": "r", "name": "answer", "parts": parts}]
    said = ["The fore", "cast for ", "Oslo"]
    task["history"].append({"role": "agent", "messageId": "a1", "parts": [{"kind": "text", "text": t} for t in said]})
    store.save(task)
    body = admin_client.get(detail_url(kind, "streamed")).content.decode()
    conversation = body.split('class="form-row field-history task-conversation">')[1].split("</fieldset>")[0]
    texts = re.findall(r'<pre class="task-part-text">([^<]*)</pre>', conversation)
    assert texts == ["history 0", "The forecast for Oslo", "".join(WORDS), "PS"]
    download = reverse("admin:stores_taskrecord_download", args=["streamed", "artifacts", 0, len(WORDS)])
    assert f'href="{download}"' in conversation
    assert admin_client.get(download).content == b"hello"
    listed = admin_client.get(list_url).content.decode()
    assert '<div class="task-answer" title="The forecast for Oslo">The forecast for Oslo</div>' in listed


# --- Badges, relative times, filters, readable detail, actions (every store) ----------------


def recent_task(task_id: str, *, state: str = "working", ago: dt.timedelta = dt.timedelta(minutes=5), **kw) -> dict:
    task = make_task(0, state=state, task_id=task_id, **kw)
    task["status"]["timestamp"] = format_timestamp(dt.datetime.now(dt.UTC) - ago)
    return task


def test_list_shows_badges_and_relative_times(admin_client, store, list_url):
    store.save(recent_task("fresh", state="completed", ago=dt.timedelta(hours=3)))
    body = admin_client.get(list_url).content.decode()
    assert '<span class="task-state task-state-completed">completed</span>' in body
    assert re.search(r'<time datetime="[^"]+" title="[^"]+">3\xa0hours ago</time>', body)
    assert ".task-state-failed" in body  # the badge colours are on the page


def test_updated_and_context_filters(admin_client, store, list_url):
    store.save(make_task(1, context="ctx-a"))  # 2025: long ago
    store.save(recent_task("recent-a", context="ctx-a"))
    store.save(recent_task("recent-b", context="ctx-b", ago=dt.timedelta(hours=2)))
    assert [i for i, _ in rows(admin_client.get(list_url, {"updated": "24h"}))] == ["recent-a", "recent-b"]
    assert [i for i, _ in rows(admin_client.get(list_url, {"updated": "1h"}))] == ["recent-a"]
    assert [i for i, _ in rows(admin_client.get(list_url, {"context": "ctx-a"}))] == ["recent-a", "task-001"]
    both = admin_client.get(list_url, {"context": "ctx-a", "updated": "24h", "state": "working"})
    assert [i for i, _ in rows(both)] == ["recent-a"]
    body = admin_client.get(list_url).content.decode()
    assert "By context" in body and "?context=ctx-b" in body.replace("&amp;", "&")
    assert "Past 7 days" in body


def test_detail_conversation_ends_with_the_agents_replies_and_names_the_agent(admin_client, store, kind):
    """The artifacts are the agent's replies, after the history; the status message follows
    when the history does not hold it (a failure), once when it does (a question)."""
    failed = recent_task("fails", state="failed")
    failed["_agent"] = "billing"
    failed["status"]["message"] = {"role": "agent", "messageId": "s1", "parts": [{"kind": "text", "text": "No quota"}]}
    store.save(failed)
    body = admin_client.get(detail_url(kind, "fails")).content.decode()
    conversation = body.split('class="form-row field-history task-conversation">')[1].split("</fieldset>")[0]
    roles = re.findall(r'<div class="task-role">([^<]*)</div>', conversation)
    assert roles == ["user", "billing · answer", "billing"]
    assert conversation.index("No quota") > conversation.index("artifact ")  # the artifact, then why it failed
    assert re.search(r"<label>Agent:</label><div class=\"readonly\"><a [^>]*>billing</a>", body)

    asking = recent_task("asks", state="input-required")
    question = {"role": "agent", "messageId": "q1", "parts": [{"kind": "text", "text": "Which city?"}]}
    asking["history"].append(question)
    asking["status"]["message"] = question
    store.save(asking)
    body = admin_client.get(detail_url(kind, "asks")).content.decode()
    conversation = body.split('class="form-row field-history task-conversation">')[1].split("</fieldset>")[0]
    assert conversation.count('<pre class="task-part-text">Which city?</pre>') == 1
    assert "default" in re.findall(r'<div class="task-role">([^<]*)</div>', conversation)


def test_detail_renders_the_conversation_and_artifacts_readably(admin_client, store, kind):
    task = recent_task("rich", state="completed")
    task["history"] = [
        {"kind": "message", "role": "user", "messageId": "u1", "parts": [{"kind": "text", "text": "Plot <this>"}]},
        {"kind": "message", "role": "agent", "messageId": "a1", "parts": [{"kind": "text", "text": "Which year?"}]},
    ]
    task["artifacts"] = [
        {"artifactId": "x1", "name": "table", "parts": [{"kind": "data", "data": {"rows": [1, 2]}}]},
        {
            "artifactId": "x2",
            "name": "files",
            "parts": [
                {"kind": "file", "file": {"uri": "https://files.example.com/plot.png", "mimeType": "image/png"}},
                {"kind": "file", "file": {"bytes": "aGVsbG8=", "name": "hello.txt", "mimeType": "text/plain"}},
                {"kind": "file", "file": {"uri": "javascript:alert(1)", "name": "evil"}},
            ],
        },
    ]
    store.save(task)
    body = admin_client.get(detail_url(kind, "rich")).content.decode()
    assert '<div class="task-entry task-message role-user">' in body
    assert '<div class="task-entry task-message role-agent">' in body
    assert '<pre class="task-part-text">Plot &lt;this&gt;</pre>' in body  # text as text, escaped
    assert '<pre class="task-part-data" title="data">{\n  &quot;rows&quot;: [\n    1,\n    2\n  ]\n}</pre>' in body
    assert 'href="https://files.example.com/plot.png"' in body
    assert 'href="javascript:' not in body
    model = "taskrecord"
    download = reverse(f"admin:stores_{model}_download", args=["rich", "artifacts", 1, 1])
    assert f'href="{download}"' in body
    response = admin_client.get(download)
    assert response.status_code == 200
    assert response.content == b"hello"
    assert response["Content-Disposition"] == 'attachment; filename="hello.txt"'
    for not_inline in (["rich", "artifacts", 1, 0], ["rich", "nowhere", 0, 0], ["gone", "artifacts", 1, 1]):
        assert admin_client.get(reverse(f"admin:stores_{model}_download", args=not_inline)).status_code == 404


def act(client, url: str, action: str, *ids: str, **extra):
    return client.post(url, {"action": action, "_selected_action": list(ids), "index": "0", **extra})


def test_cancel_action(admin_client, store, list_url, kind):
    from django.contrib.admin.models import CHANGE, LogEntry

    store.save(recent_task("running"))
    store.save(recent_task("done", state="completed"))
    response = act(admin_client, list_url, "cancel_tasks", "running", "done")
    assert response.status_code == 302
    assert store.get("running")["status"]["state"] == "canceled"
    assert store.get("running")["status"]["message"]["parts"][0]["text"] == "Canceled by admin in the admin."
    assert store.get("done")["status"]["state"] == "completed"  # a terminal state is final
    page = admin_client.get(response["Location"]).content.decode()
    assert "Canceled 1 task. Skipped: 1 already finished (left as they are)." in page
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.action_flag, entry.change_message) == ("running", CHANGE, "Canceled")


def test_fail_stale_action(admin_client, store, list_url, settings):
    settings.A2A_STALE_AFTER = 3600
    store.save(recent_task("stuck", ago=dt.timedelta(hours=2)))
    store.save(recent_task("busy", ago=dt.timedelta(minutes=1)))
    act(admin_client, list_url, "fail_stale_tasks", "stuck", "busy")
    assert store.get("stuck")["status"]["state"] == "failed"
    assert "marked failed as stale by admin in the admin" in store.get("stuck")["status"]["message"]["parts"][0]["text"]
    assert store.get("busy")["status"]["state"] == "working"


def test_delete_action_asks_first(admin_client, store, list_url):
    from django.contrib.admin.models import DELETION, LogEntry

    store.save(recent_task("doomed", state="completed"))
    confirm = admin_client.post(list_url, {"action": "delete_tasks", "_selected_action": ["doomed"], "index": "0"})
    assert confirm.status_code == 200
    assert "Are you sure?" in confirm.content.decode() and "doomed" in confirm.content.decode()
    assert store.get("doomed") is not None
    done = admin_client.post(list_url, {"action": "delete_tasks", "_selected_action": ["doomed"], "post": "yes"})
    assert done.status_code == 302
    assert store.get("doomed") is None
    assert LogEntry.objects.get().action_flag == DELETION


def test_delete_action_deletes_the_tasks_push_configs(admin_client, store, list_url):

    configs = store.push_configs
    for task_id in ("doomed", "kept"):
        store.save(recent_task(task_id, state="completed"))
        configs.save_push_config({"taskId": task_id, "id": "hook", "url": "https://hooks.example.com/a2a"})
    done = admin_client.post(list_url, {"action": "delete_tasks", "_selected_action": ["doomed"], "post": "yes"})
    assert done.status_code == 302
    assert store.get("doomed") is None and configs.list_push_configs("doomed") == []
    assert [c["id"] for c in configs.list_push_configs("kept")] == ["hook"]


def test_export_action(admin_client, store, list_url):
    import json

    store.save(recent_task("one"))
    store.save(recent_task("two"))
    store.save(recent_task("three"))
    response = act(admin_client, list_url, "export_tasks", "one", "three")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl"
    assert response["Content-Disposition"].startswith('attachment; filename="tasks-')
    exported = [json.loads(line) for line in response.content.splitlines()]
    assert sorted(t["id"] for t in exported) == ["one", "three"]
    assert exported[0] == store.get(exported[0]["id"])


def test_detail_page_actions_return_to_the_task(admin_client, store, kind, list_url):
    store.save(recent_task("live"))
    url = detail_url(kind, "live")
    body = admin_client.get(url).content.decode()
    assert 'value="cancel_tasks"' in body and "Fail as stale" in body and "Export JSON" in body
    response = act(admin_client, list_url, "cancel_tasks", "live", _next=url)
    assert response.status_code == 302 and response["Location"] == url
    body = admin_client.get(url).content.decode()
    assert "task-state-canceled" in body
    assert 'value="cancel_tasks"' not in body  # nothing left to cancel
    assert act(admin_client, list_url, "cancel_tasks", "live", _next="https://evil.example.com/")["Location"] != (
        "https://evil.example.com/"
    )


def test_actions_need_permissions(client, store, list_url, kind, django_user_model):
    model = "taskrecord" if kind == "orm" else "storedtask"
    user = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename=f"view_{model}", content_type__app_label="stores"))
    client.force_login(user)
    store.save(recent_task("guarded"))
    body = client.get(list_url).content.decode()
    assert "export_tasks" in body and "cancel_tasks" not in body and "delete_tasks" not in body
    act(client, list_url, "cancel_tasks", "guarded")
    assert store.get("guarded")["status"]["state"] == "working"
    user.user_permissions.add(Permission.objects.get(codename="change_taskrecord"))
    client.force_login(django_user_model.objects.get(pk=user.pk))
    act(client, list_url, "cancel_tasks", "guarded")
    assert store.get("guarded")["status"]["state"] == "canceled"


def test_no_selection_is_a_warning(admin_client, store, list_url):
    store.save(recent_task("x"))
    response = admin_client.post(list_url, {"action": "cancel_tasks", "index": "0"}, follow=True)
    assert "Items must be selected" in response.content.decode()
    assert store.get("x")["status"]["state"] == "working"
