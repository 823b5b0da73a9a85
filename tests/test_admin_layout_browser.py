"""The task admin on a laptop (1280 px wide), in a real browser (the Chromium + Playwright
set-up of tests/test_admin_browser.py), on the memory store's list and the ORM store's
change list, with the ids a real project has (UUIDs) and two agents; on whichever Django
runs the suite (5.2 in .venv; nox's ``layout`` session runs this module on Django 6.1).
On the list, the dashboard and a task's page: no horizontal scroll, the breadcrumbs
styled (each Django version styles its own markup: the pages build on Django's), and on
the list the filter beside the table. Screenshots go to tests/artifacts/ (git-ignored),
whose paths the test prints, each named after the Django version (``-django5.2``):

- ``admin-laptop-list-<store>``: the list: short ids on one line, the preview at
  least 40 characters a line, the agent column, the five recent contexts in the filter.
- ``admin-laptop-screen-<store>``: the list's first screen, as the laptop shows it.
- ``admin-laptop-task-<store>``: a task's page: the conversation with the agent's
  reply, the agent named.
- ``admin-laptop-dashboard-<store>``: the dashboard, its failure reasons readable.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid

import django
import pytest

from stores.backends import resolve_store
from stores.timestamps import format_timestamp
from tests.test_admin_browser import ARTIFACTS, chromium, create_ops, submit_login

ASKS = [
    "Summarize the quarterly report for the board and list the three largest risks, please",
    "Refund the second invoice of March, it was charged twice to the same credit card",
    "What will the weather be like in Oslo tomorrow morning, and should I take the train?",
]
#: The number of lines of each element the locator finds (one client rect per line box).
LINES = "els => els.map(e => new Set([...e.getClientRects()].map(r => Math.round(r.top))).size)"
#: [characters, lines] of each element's text.
TEXT_LINES = """els => els.map(e => {
  const range = document.createRange(); range.selectNodeContents(e);
  return [e.textContent.length, new Set([...range.getClientRects()].map(r => Math.round(r.top))).size];
})"""
#: The failed tasks' reason: longer than the dashboard's label column.
REASON = "The weather service is down: HTTP 503 from api.weather.example"
DJANGO = "django{}.{}".format(*django.VERSION[:2])


def laptop_task(i: int, contexts: list[str], now: dt.datetime) -> dict:
    ask = ASKS[i % len(ASKS)]
    task_id = str(uuid.UUID(int=random.Random(i).getrandbits(128), version=4))
    task = {
        "kind": "task",
        "id": task_id,
        "contextId": contexts[i % len(contexts)],
        "status": {
            "state": ["completed", "working", "failed"][i % 3],
            "timestamp": format_timestamp(now - dt.timedelta(minutes=i)),
        },
        "history": [
            {"kind": "message", "role": "user", "messageId": f"u{i}", "parts": [{"kind": "text", "text": ask}]}
        ],
        "artifacts": [
            {"artifactId": f"r{i}", "name": "answer", "parts": [{"kind": "text", "text": f"Done: {ask[:30]}"}]}
        ],
        "_owner": "alice",
    }
    if i % 2:
        task["_agent"] = "billing"
    if task["status"]["state"] == "failed":
        task["status"]["message"] = {"role": "agent", "messageId": f"s{i}", "parts": [{"kind": "text", "text": REASON}]}
    return task


@pytest.fixture(params=["memory", "orm"])
def tasks(request, transactional_db, settings):
    settings.TASK_STORE = store = resolve_store(request.param)
    contexts = [str(uuid.UUID(int=random.Random(1000 + c).getrandbits(128), version=4)) for c in range(1, 10)]
    now = dt.datetime.now(dt.UTC)
    saved = [laptop_task(i, contexts, now) for i in range(26)]
    for task in saved:
        store.save(task)
    return request.param, saved


@pytest.fixture
def browser(tasks, django_user_model, live_server):
    create_ops(django_user_model)
    with chromium() as browser:
        yield browser


def check_list(page, saved) -> None:
    """The list at 1280 px: short ids on one line, the preview readable, the table inside the page."""
    ids = page.locator("#result_list .field-task_id .task-id")
    assert ids.all_inner_texts() == [t["id"][:8] + "…" for t in saved[:26]]
    assert [ids.nth(i).get_attribute("title") for i in range(3)] == [t["id"] for t in saved[:3]]  # the whole id
    contexts = page.locator("#result_list .field-context_link .task-id")
    assert max(ids.evaluate_all(LINES) + contexts.evaluate_all(LINES)) == 1  # no id wraps
    for characters, lines in page.locator("#result_list .task-ask").evaluate_all(TEXT_LINES):
        assert characters / lines >= 40, (characters, lines)
    results = page.locator("#changelist .results")
    assert results.evaluate("e => e.scrollWidth <= e.clientWidth")  # no column pushed out of sight
    table, side = page.locator("#result_list").bounding_box(), page.locator("#changelist-filter").bounding_box()
    assert side["x"] >= table["x"] + table["width"] - 1, (side, table)  # the filter beside the list...
    assert side["y"] < table["y"] + table["height"] and side["width"] < 400, (side, table)  # ...not under it
    paginator = page.locator("#changelist .paginator").bounding_box()
    assert paginator["x"] + paginator["width"] <= 1280 and paginator["height"] < 60, paginator  # the count whole
    assert page.locator("#result_list .field-agent").all_inner_texts()[:2] == ["default", "billing"]
    assert "TaskStore" not in page.locator("#content").inner_text()  # the store in words, no repr
    choices = page.locator("#changelist-filter details[data-filter-title=context] li a")
    assert choices.count() == 1 + 5  # "All" and the five recent contexts, not the nine
    assert choices.nth(1).inner_text() == saved[0]["contextId"][:8] + "…"
    assert choices.nth(1).get_attribute("title") == saved[0]["contextId"]


def check_page(page) -> None:
    """Any page of the task admin at 1280 px: nothing wider than the window, the
    breadcrumbs styled as this Django version styles them (a bar, one line)."""
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    crumbs = page.locator(".breadcrumbs")
    assert crumbs.evaluate("e => getComputedStyle(e).backgroundColor") not in ("rgba(0, 0, 0, 0)", "transparent")
    assert crumbs.bounding_box()["height"] < 60  # one line
    assert crumbs.locator("a").first.inner_text() == "Home"


def check_dashboard(page) -> None:
    """The dashboard: the failure reasons' labels inside their chart (the first letter kept)."""
    page.wait_for_selector("#chart-reasons svg")
    labels = page.locator("#chart-reasons svg text[clip-path]")
    assert labels.count() == 1
    assert labels.evaluate_all("els => els.map(e => e.getStartPositionOfChar(0).x)") == [0]
    assert labels.first.evaluate("e => e.lastChild.textContent").startswith("The weather service")


def test_the_admin_on_a_laptop(browser, tasks, live_server, capsys):
    kind, saved = tasks
    ARTIFACTS.mkdir(exist_ok=True)
    list_png, task_png, screen_png, dashboard_png = (
        ARTIFACTS / f"admin-laptop-{what}-{kind}-{DJANGO}.png" for what in ("list", "task", "screen", "dashboard")
    )
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(f"{live_server.url}/admin/login/?next=/admin/stores/taskrecord/")
        submit_login(page)
        page.wait_for_selector("#result_list")
        check_list(page, saved)
        check_page(page)
        height = page.evaluate("document.documentElement.scrollHeight")
        page.screenshot(path=list_png, full_page=True)
        page.screenshot(path=screen_png)  # what the laptop shows without scrolling

        page.locator(".task-dashboard-link").click()
        check_dashboard(page)
        check_page(page)
        page.screenshot(path=dashboard_png, full_page=True)
        page.go_back()
        page.wait_for_selector("#result_list")

        billing = saved[1]
        page.locator(f"#result_list .field-task_id .task-id[title='{billing['id']}']").click()
        page.wait_for_selector(".task-conversation")
        assert page.locator(".field-agent .readonly").inner_text() == "billing"
        bubbles = page.locator(".task-conversation .task-message")
        assert bubbles.count() == 2  # the user's message, the agent's reply
        assert ASKS[1] in bubbles.nth(0).inner_text()
        reply = bubbles.nth(1)
        assert "role-agent" in reply.get_attribute("class")
        assert reply.locator(".task-role").inner_text().lower() == "billing · answer"
        assert f"Done: {ASKS[1][:30]}" in reply.inner_text()
        check_page(page)
        page.screenshot(path=task_png, full_page=True)
    finally:
        page.close()
    assert height < 2800, height  # 26 tasks, ~95 px a row (failed ones with their reason; ids over 4 lines: 3,265 px)
    with capsys.disabled():
        print(f"\nscreenshots: {list_png} {screen_png} {task_png} {dashboard_png} (list {height} px high)")
