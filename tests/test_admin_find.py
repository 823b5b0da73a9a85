"""An admin you find things in (issue 17), on every store: text search over the tasks'
messages and artifacts, the preview column, the owner and "today" filters, the one
URL, and the dashboard; PostgreSQL's full-text index shown used by ``EXPLAIN``."""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import re

import pytest
from django.conf import settings as django_settings
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.db import connections
from django.test import RequestFactory

from a2a.core import lifecycle
from stores.admin import dashboard, filters, search
from stores.backends import resolve_store
from stores.base import TaskStore
from stores.models import TaskRecord
from stores.timestamps import format_timestamp

TASK_LIST = "/admin/stores/taskrecord/"
DASHBOARD = "/admin/stores/taskrecord/dashboard/"
POSTGRES = "postgres" in django_settings.DATABASES
KINDS = ["memory", "file", "orm-sqlite"] + (["orm-postgres"] if POSTGRES else [])
_MARKS = {
    "orm-sqlite": pytest.mark.django_db,
    # the admin's user and log live in "default", the tasks in "postgres"
    "orm-postgres": pytest.mark.django_db(databases=["default", "postgres"]),
}


@pytest.fixture(params=[pytest.param(k, marks=_MARKS.get(k, pytest.mark.django_db)) for k in KINDS])
def store(request, tmp_path, settings) -> TaskStore:
    spec = {
        "memory": "memory",
        "file": f"file:{tmp_path / 'tasks'}",
        "orm-sqlite": "orm",
        "orm-postgres": "orm:postgres",
    }
    settings.TASK_STORE = resolve_store(spec[request.param])
    return settings.TASK_STORE


def ago(**delta: float) -> str:
    return format_timestamp(dt.datetime.now(dt.UTC) - dt.timedelta(**delta))


def message(role: str, text: str, mid: str) -> dict:
    return {"kind": "message", "role": role, "messageId": mid, "parts": [{"kind": "text", "text": text}]}


def make(task_id: str, ask: str, *, answer: str = "", artifact: str = "", state: str = "completed", **extra) -> dict:
    task = {
        "kind": "task",
        "id": task_id,
        "contextId": extra.pop("context", f"ctx-{task_id}"),
        "status": {"state": state, "timestamp": extra.pop("when", ago(minutes=5))},
        "history": [message("user", ask, f"u-{task_id}")]
        + ([message("agent", answer, f"a-{task_id}")] if answer else []),
        "artifacts": [{"artifactId": "r", "name": "result", "parts": [{"kind": "text", "text": artifact}]}]
        if artifact
        else [],
        **extra,
    }
    return task


def ids(response) -> list[str]:
    body = response.content.decode()
    return [
        html.unescape(i)
        for i in re.findall(r'<th class="field-task_id"><a href="[^"]*"><span class="task-id" title="([^"]*)">', body)
    ]


@pytest.fixture
def conversations(store):
    store.save(make("t-weather", "Fetch the Weather in Paris", answer="It is sunny, 21°C.", artifact="Forecast: rain"))
    store.save(make("t-book", "Book a table for two", answer="Which restaurant?", state="input-required"))
    store.save(make("t-plot", "Plot the quarterly numbers", artifact="chart of revenue", state="failed"))
    return store


# --- Text search ----------------------------------------------------------------------------


def test_search_finds_a_task_by_a_word_of_its_conversation(admin_client, conversations):
    for term in ("weather", "WEATHER", "Paris weather", "sunny", "forecast", "rain"):
        assert ids(admin_client.get(TASK_LIST, {"q": term})) == ["t-weather"], term
    assert ids(admin_client.get(TASK_LIST, {"q": "revenue"})) == ["t-plot"]
    assert ids(admin_client.get(TASK_LIST, {"q": "weather london"})) == []  # every word must be there
    # Only text is searched: not the keys, roles or kinds of the JSON.
    for not_text in ("agent", "kind", "artifactId", "message"):
        assert ids(admin_client.get(TASK_LIST, {"q": not_text})) == [], not_text
    # An exact id or context id still finds its tasks.
    assert ids(admin_client.get(TASK_LIST, {"q": "t-book"})) == ["t-book"]
    assert ids(admin_client.get(TASK_LIST, {"q": "ctx-t-plot"})) == ["t-plot"]


def test_search_keeps_the_filters(admin_client, conversations):
    conversations.save(make("t-weather-2", "Weather in Rome?", state="failed", when=ago(days=3)))
    assert ids(admin_client.get(TASK_LIST, {"q": "weather"})) == ["t-weather", "t-weather-2"]
    assert ids(admin_client.get(TASK_LIST, {"q": "weather", "state": "failed"})) == ["t-weather-2"]
    assert ids(admin_client.get(TASK_LIST, {"q": "weather", "updated": "today"})) == ["t-weather"]
    assert ids(admin_client.get(TASK_LIST, {"q": "weather", "context": "ctx-t-weather-2"})) == ["t-weather-2"]


def test_bulk_actions_on_search_results_keep_their_audit_log(admin_client, conversations):
    url = TASK_LIST + "?q=table"
    assert ids(admin_client.get(url)) == ["t-book"]
    response = admin_client.post(url, {"action": "cancel_tasks", "_selected_action": ["t-book"], "index": "0"})
    assert response.status_code == 302
    assert conversations.get("t-book")["status"]["state"] == "canceled"
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.action_flag, entry.change_message) == ("t-book", CHANGE, "Canceled")


def test_scan_search_is_bounded_and_goes_on_on_the_next_page(admin_client, settings, monkeypatch):
    """Memory and file stores: a page reads at most SEARCH_SCAN_LIMIT tasks; its next-page
    link goes on with older ones, so no match is lost."""
    settings.TASK_STORE = store = resolve_store("memory")
    for i in range(10):
        store.save(make(f"t{i}", "needle" if i in (1, 8) else "hay", when=ago(minutes=10 - i)))
    monkeypatch.setattr(search, "SEARCH_SCAN_LIMIT", 4)
    first = admin_client.get(TASK_LIST, {"q": "needle"})
    assert ids(first) == ["t8"]
    body = first.content.decode()
    assert "Read 4 tasks for this page, the most a page reads (4)" in body
    found, pages = ids(first), 1
    while link := re.search(r'<a href="([^"]*)" class="next-page">', body):
        response = admin_client.get(TASK_LIST + html.unescape(link.group(1)))
        body, pages = response.content.decode(), pages + 1
        found += ids(response)
    assert found == ["t8", "t1"] and pages == 3  # 10 tasks, 4 a page


# --- Preview, filters, one URL ----------------------------------------------------------------------


def test_preview_shows_first_ask_last_answer_and_artifact_count(admin_client, store):
    task = make("t-long", "Summarize " + "the long report " * 20, answer="First answer.", artifact="summary")
    task["history"] += [message("user", "Shorter please.", "u2"), message("agent", "Here is the short one.", "a2")]
    task["artifacts"].append({"artifactId": "r2", "name": "more", "parts": [{"kind": "text", "text": "x"}]})
    store.save(task)
    body = admin_client.get(TASK_LIST).content.decode()
    preview = re.search(r'<td class="field-preview">(.*?)</td>', body, re.S).group(1)
    ask = re.search(r'<div class="task-ask" title="([^"]*)">([^<]*)</div>', preview)
    assert ask.group(2).startswith("Summarize the long report") and ask.group(2).endswith("…")
    assert len(ask.group(2)) == 80 and ask.group(1).startswith("Summarize the long report the long report")
    assert '<div class="task-answer" title="Here is the short one.">Here is the short one.</div>' in preview
    assert '<span class="task-artifact-count">2 artifacts</span>' in preview


def test_owner_and_today_filters(admin_client, store):
    store.save(make("alice-1", "one", _owner="alice", when=ago(minutes=1)))
    store.save(make("bob-1", "two", _owner="bob", when=ago(days=2)))
    store.save(make("alice-2", "three", _owner="alice", when=ago(days=10)))
    assert ids(admin_client.get(TASK_LIST, {"owner": "alice"})) == ["alice-1", "alice-2"]
    assert ids(admin_client.get(TASK_LIST, {"owner": "bob"})) == ["bob-1"]
    assert ids(admin_client.get(TASK_LIST, {"updated": "today"})) == ["alice-1"]
    assert ids(admin_client.get(TASK_LIST, {"updated": "7d"})) == ["alice-1", "bob-1"]
    assert ids(admin_client.get(TASK_LIST, {"updated": "30d", "owner": "alice"})) == ["alice-1", "alice-2"]
    body = html.unescape(admin_client.get(TASK_LIST).content.decode())
    assert "By owner" in body and "?owner=alice" in body and "?owner=bob" in body
    assert "Today" in body and "Past 7 days" in body and "Past 30 days" in body


def test_today_starts_at_local_midnight(settings):
    settings.TIME_ZONE = "Pacific/Auckland"
    since = filters.updated_since("today")
    local = since.astimezone(dt.timezone(since.utcoffset()))
    assert since.tzinfo is not None and (local.hour, local.minute) == (0, 0)
    assert filters.updated_since("nonsense") is None


def test_one_url_one_title_and_a_dashboard_link(admin_client, store):
    body = admin_client.get(TASK_LIST).content.decode()
    assert "<h1>Tasks</h1>" in body and "Select task to view" not in body
    assert f'href="{DASHBOARD}"' in body
    assert admin_client.get("/admin/stores/storedtask/dashboard/")["Location"] == DASHBOARD


def test_the_task_view_permission_opens_the_list_on_every_store(client, store, django_user_model):
    user = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    client.force_login(user)
    assert client.get(TASK_LIST).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_taskrecord"))
    client.force_login(django_user_model.objects.get(pk=user.pk))
    assert client.get(TASK_LIST).status_code == 200
    assert client.get(DASHBOARD).status_code == 200
    assert f'href="{TASK_LIST}"' in client.get("/admin/").content.decode()


# --- The dashboard ------------------------------------------------------------------------------


def finish(store: TaskStore, task_id: str, state: str, seconds: float, reason: str = "") -> None:
    """A task created ``seconds`` before it reached ``state`` (a minute ago): saved first
    as submitted (the ORM store's ``created_at``; ``_created`` for the others), then final."""
    end = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    start = format_timestamp(end - dt.timedelta(seconds=seconds))
    task = make(task_id, f"Job {task_id}", state="submitted", when=start, _created=start)
    store.save(task)
    task["status"] = {"state": state, "timestamp": format_timestamp(end)}
    if reason:
        task["status"]["message"] = message("agent", reason, f"s-{task_id}")
    store.save(task)


def test_dashboard_draws_states_days_durations_and_failure_reasons(admin_client, store):
    finish(store, "done-1", "completed", 10)
    finish(store, "done-2", "completed", 30)
    finish(store, "fail-1", "failed", 2, reason="Timeout talking to the <weather> API")
    finish(store, "fail-2", "failed", 4, reason="Timeout talking to the <weather> API")
    finish(store, "fail-3", "failed", 6, reason="Out of quota")
    store.save(make("busy", "still going", state="working"))
    response = admin_client.get(DASHBOARD)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count('<svg xmlns="http://www.w3.org/2000/svg" class="task-chart"') == 4
    assert "<script" not in body.split('id="content-main"')[1]
    states = re.search(r'id="chart-states">(.*?)</section>', body, re.S).group(1)
    assert re.findall(r">([a-z-]+)</text>", states) == ["working", "completed", "failed"]
    assert re.findall(r'fill="currentColor">(\d+)</text>', states) == ["1", "2", "3"]
    per_day = re.search(r'id="chart-per-day">(.*?)</section>', body, re.S).group(1)
    assert sum(map(int, re.findall(r"<title>\d{4}-\d\d-\d\d: (\d+) tasks?</title>", per_day))) == 6
    today = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).date()  # TIME_ZONE is UTC: the day they ended
    durations = re.search(r'id="chart-durations">(.*?)</section>', body, re.S).group(1)
    # completed 10 s and 30 s, failed 2, 4, 6 s: p50 of (2, 4, 6, 10, 30) is 6 s; p95 is 26.0 s
    assert f"{today:%Y-%m-%d} p50: 6.0 s" in durations and f"{today:%Y-%m-%d} p95: 26.0 s" in durations
    reasons = re.search(r'id="chart-reasons">(.*?)</section>', body, re.S).group(1)
    assert "Timeout talking to the &lt;weather&gt; API" in reasons and "<weather>" not in reasons
    assert re.findall(r'fill="currentColor">(\d+)</text>', reasons) == ["2", "1"]
    assert "Out of quota" in reasons


def test_a_failure_reason_in_parts_reads_as_one(admin_client, store):
    """A reason said in several text parts is the text they make, counted with the same
    reason said in one part, on every store (the ORM store groups in the database)."""
    finish(store, "one-part", "failed", 2, reason="The weather service is down")
    finish(store, "two-parts", "failed", 2, reason="The weather service is down")
    task = store.get("two-parts")
    task["status"]["message"]["parts"] = [{"kind": "text", "text": "The weather "}, {"text": "service is down"}]
    store.save(task)
    assert dashboard.collect(store).reasons == [("The weather service is down", 2)]
    reasons = re.search(r'id="chart-reasons">(.*?)</section>', admin_client.get(DASHBOARD).content.decode(), re.S)
    assert re.findall(r"</title>([^<]*)</text>", reasons.group(1)) == ["The weather service is down"]


def test_a_long_label_keeps_its_first_letters():
    """A bar's label starts at the chart's left edge and is clipped at the bars, so a
    label wider than its column loses its end (the whole is its tooltip), never its
    start: right-aligned at the column's edge, a 36-character reason began off the chart."""
    reason = "The weather service is down: HTTP 503 from api.weather.example"
    svg = dashboard.hbar_chart("Why tasks failed", [(reason, 3, "#c53030"), ("Out of quota", 1, "#c53030")])
    labels = re.findall(r'<text x="([^"]*)" y="[^"]*" clip-path="url\(#([^)]*)\)"[^>]*><title>([^<]*)</title>', svg)
    assert [(x, title) for x, _, title in labels] == [("0", reason), ("0", "Out of quota")]
    clip = labels[0][1]
    assert re.search(rf'<clipPath id="{clip}"><rect x="0" y="0" width="230" ', svg)


def test_dashboard_of_a_scanned_store_says_what_it_read(admin_client, settings, monkeypatch):
    settings.TASK_STORE = store = resolve_store("memory")
    for i in range(5):
        store.save(make(f"t{i}", "x", when=ago(minutes=i)))
    monkeypatch.setattr(dashboard, "SCAN_LIMIT", 3)
    body = admin_client.get(DASHBOARD).content.decode()
    assert "The 3 most recently updated tasks in this process&#x27;s memory" in body and "reads at most 3" in body
    assert "MemoryTaskStore" not in body  # the store in words, not its Python repr
    assert re.findall(
        r'fill="currentColor">(\d+)</text>', body.split('id="chart-states"')[1].split("</section>")[0]
    ) == ["3"]


def test_empty_dashboard(admin_client, store):
    body = admin_client.get(DASHBOARD).content.decode()
    assert "No tasks." in body and "No finished tasks in these days." in body and "No failed tasks" in body


def test_percentile_matches_postgresql_percentile_cont():
    assert dashboard.percentile([], 0.5) is None
    assert dashboard.percentile([4.0], 0.95) == 4.0
    assert dashboard.percentile([1, 2, 3, 4], 0.5) == 2.5
    assert dashboard.percentile([2, 4, 6, 10, 30], 0.95) == pytest.approx(26.0)
    assert [dashboard.human_seconds(s) for s in (0.25, 4.2, 210, 7560)] == ["250 ms", "4.2 s", "3.5 min", "2.1 h"]


def test_the_server_stamps_when_a_task_was_created(settings):
    store = resolve_store("memory")
    task = asyncio.run(lifecycle.create(store, make("new", "hello", state="submitted", when=ago(seconds=0))))
    assert task["_created"] == task["status"]["timestamp"] == store.get("new")["_created"]


# --- PostgreSQL: the full-text index --------------------------------------------------------------


@pytest.mark.skipif(not POSTGRES, reason="A2A_TEST_POSTGRES_URL is not set")
@pytest.mark.django_db(databases=["default", "postgres"])
def test_postgres_text_search_uses_the_full_text_index(settings, admin_user):
    """The admin's search on PostgreSQL is answered from the GIN index of migration 0004
    (seen in ``EXPLAIN`` with sequential scans priced out, inside the test's transaction)."""
    settings.TASK_STORE = store = resolve_store("orm:postgres")
    store.save(make("t-weather", "Fetch the weather in Paris"))
    for i in range(20):
        store.save(make(f"t-{i}", f"Something else {i}"))
    connection = connections["postgres"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [search.FTS_INDEX])
        (definition,) = cursor.fetchone()
        assert "USING gin" in definition and "jsonb_path_query_array" in definition
        cursor.execute("SET LOCAL enable_seqscan = off")
    model_admin = admin.site._registry[TaskRecord]
    request = RequestFactory().get(TASK_LIST, {"q": "weather"})
    request.user = admin_user
    queryset, _ = model_admin.get_search_results(request, model_admin.get_queryset(request), "weather")
    assert list(queryset.values_list("id", flat=True)) == ["t-weather"]
    plan = queryset.explain()
    assert search.FTS_INDEX in plan, plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.django_db
def test_no_full_text_index_on_sqlite():
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name = %s", [search.FTS_INDEX])
        assert cursor.fetchall() == []


def test_odd_searches_never_fail(admin_client, conversations):
    deep: dict = {"kind": "text", "text": "bottom"}
    for _ in range(120):  # as deep as the stores take (orjson: 255 levels)
        deep = {"kind": "data", "data": [deep]}
    conversations.save(make("t-deep", "deep one", artifact="x", metadata={"nested": deep}))
    for term in ("foo_bar", "a:* | !b", "'", "%", "\\", "()", "weather & paris", "t-weather:*"):
        response = admin_client.get(TASK_LIST, {"q": term})
        assert response.status_code == 200, term
    assert ids(admin_client.get(TASK_LIST, {"q": "Weather, Paris!"})) == ["t-weather"]
    assert "t-deep" in ids(admin_client.get(TASK_LIST, {"q": "deep"}))
