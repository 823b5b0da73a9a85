"""Finding tasks in the admin, in a real browser (the Chromium + Playwright set-up of
tests/test_admin_browser.py): a text search in the task list and the dashboard, on the
memory store's page and the ORM store's change list. Screenshots go to tests/artifacts/
(git-ignored), whose path the test prints:

- ``admin-task-search-<store>.png``: the task list after searching "weather": the
  matching tasks with their previews (first user message, last agent text, artifacts).
- ``admin-task-dashboard-<store>.png``: the dashboard: tasks per state, tasks created
  per day, p50/p95 time to a final state per day, and why tasks failed.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from stores.backends import resolve_store
from stores.timestamps import format_timestamp
from tests.test_admin_browser import ARTIFACTS, chromium, create_ops, submit_login

REASONS = ["Timeout talking to the weather API", "Out of quota", "The file was not a PDF"]
ASKS = [
    ("Fetch the weather in Paris for the weekend", "Sunny on Saturday, rain on Sunday.", "forecast.json"),
    ("Translate the quarterly report into French", "Voici le rapport traduit.", "rapport.md"),
    ("Book a table for two at eight", "Which restaurant would you like?", ""),
    ("What will the weather be like in Oslo tomorrow?", "Snow, -3°C.", ""),
    ("Summarize the meeting notes", "Three decisions were taken.", "summary.txt"),
]


def conversation(task_id: str, ask: str, answer: str, artifact: str, state: str, start, end, reason: str = "") -> list:
    """The task as first saved (submitted) and as last saved, ``end - start`` later."""
    first = {
        "kind": "task",
        "id": task_id,
        "contextId": f"ctx-{task_id[-1]}",
        "status": {"state": "submitted", "timestamp": format_timestamp(start)},
        "history": [
            {"kind": "message", "role": "user", "messageId": f"u-{task_id}", "parts": [{"kind": "text", "text": ask}]}
        ],
        "artifacts": [],
        "_created": format_timestamp(start),
        "_owner": random.choice(["alice", "bob"]),
    }
    last = {**first, "status": {"state": state, "timestamp": format_timestamp(end)}}
    if state != "failed":
        last["history"] = [
            *first["history"],
            {
                "kind": "message",
                "role": "agent",
                "messageId": f"a-{task_id}",
                "parts": [{"kind": "text", "text": answer}],
            },
        ]
    if artifact and state == "completed":
        last["artifacts"] = [{"artifactId": "r", "name": artifact, "parts": [{"kind": "text", "text": answer}]}]
    if reason:
        last["status"]["message"] = {
            "kind": "message",
            "role": "agent",
            "messageId": f"s-{task_id}",
            "parts": [{"kind": "text", "text": reason}],
        }
    return [first, last]


@pytest.fixture(params=["memory", "orm"])
def tasks(request, transactional_db, settings):
    store = resolve_store(request.param)
    settings.TASK_STORE = store
    rng = random.Random(17)
    random.seed(17)
    now = dt.datetime.now(dt.UTC)
    states = ["completed"] * 6 + ["failed"] * 2 + ["canceled", "input-required", "working"]
    for i in range(60):
        ask, answer, artifact = ASKS[i % len(ASKS)]
        end = now - dt.timedelta(days=rng.randint(0, 20), minutes=rng.randint(1, 600))
        start = end - dt.timedelta(seconds=rng.choice([2, 4, 8, 15, 40]) * rng.uniform(0.5, 3))
        state = rng.choice(states)
        reason = rng.choice(REASONS[: 1 + i % 3]) if state == "failed" else ""
        for version in conversation(f"task-{i:03d}", ask, answer, artifact, state, start, end, reason):
            store.save(version)
    return request.param


@pytest.fixture
def browser(tasks, django_user_model, live_server):
    create_ops(django_user_model)
    with chromium() as browser:
        yield browser


def test_search_and_dashboard_in_a_browser(browser, tasks, live_server, capsys):
    ARTIFACTS.mkdir(exist_ok=True)
    search_png = ARTIFACTS / f"admin-task-search-{tasks}.png"
    dashboard_png = ARTIFACTS / f"admin-task-dashboard-{tasks}.png"
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{live_server.url}/admin/login/?next=/admin/")
        submit_login(page)
        page.get_by_role("link", name="Tasks").click()
        page.wait_for_selector("#result_list")
        assert page.title().startswith("Tasks |")
        assert page.url == f"{live_server.url}/admin/stores/taskrecord/"

        page.fill("#searchbar", "weather")
        page.press("#searchbar", "Enter")
        page.wait_for_url("**q=weather*")
        previews = page.locator("#result_list td.field-preview").all_inner_texts()
        assert previews and all("weather" in text.lower() for text in previews), previews
        assert 0 < len(previews) < 50  # not every task: 60 in all, 50 a page
        assert "Sunny on Saturday" in page.locator("#result_list").inner_text()
        page.screenshot(path=search_png, full_page=True)

        page.get_by_role("link", name="Dashboard").click()
        page.wait_for_selector("svg.task-chart")
        assert page.locator("svg.task-chart").count() == 4
        assert page.locator("#chart-states svg rect").count() >= 4
        assert page.locator("#chart-per-day svg rect").count() == 30
        assert page.locator("#chart-durations svg polyline").count() >= 2
        assert "Timeout talking to the weather API" in page.locator("#chart-reasons").inner_text()
        page.screenshot(path=dashboard_png, full_page=True)
    finally:
        page.close()
    for png in (search_png, dashboard_png):
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
    with capsys.disabled():
        print(f"\nscreenshots: {search_png} {dashboard_png}")
