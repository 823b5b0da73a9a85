"""The task admin in a real browser: Debian's headless Chromium, driven by Playwright,
logs in, opens the task list, filters it, opens a task and keeps screenshots in
tests/artifacts/ (git-ignored; CI may upload them).

Needs the ``chromium`` Debian package and the ``playwright`` pip package (never
``playwright install``: the browser is Debian's). Without Chromium the test is
skipped with the reason, except under CI (``CI`` set), where it fails loudly.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stores.backends import resolve_store
from stores.timestamps import format_timestamp

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = os.environ.get("A2A_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def _require(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must have it: see docs/testing.md, The browser test)", pytrace=False)
    pytest.skip(reason)


#: The password of ``ops``, the staff user the browser tests log in as.
PASSWORD = "correct horse battery"


def create_ops(django_user_model: Any) -> Any:
    """The superuser ``ops``."""
    return django_user_model.objects.create_superuser("ops", "ops@example.com", PASSWORD)


def submit_login(page: Any) -> None:
    """Fill in and submit the admin's login form on ``page`` as ``ops``."""
    page.fill("#id_username", "ops")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")


@pytest.fixture
def ops_user(transactional_db, django_user_model):
    return create_ops(django_user_model)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, headless (the browser tests' one way to start it)."""
    _require(
        Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK),
        f"no Chromium at {CHROMIUM}: apt-get install chromium",
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require(False, "the playwright package is not installed: pip install -r requirements-dev.txt")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser(ops_user, tasks, live_server):
    """Started after the database work (Playwright's sync API runs an event loop in this
    thread, where Django refuses database calls) and stopped before the flush."""
    with chromium() as browser:
        yield browser


def task(task_id: str, state: str, minutes: int, context: str, text: str) -> dict:
    when = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes)
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context,
        "status": {"state": state, "timestamp": format_timestamp(when)},
        "history": [
            {"kind": "message", "role": "user", "messageId": f"u-{task_id}", "parts": [{"kind": "text", "text": text}]}
        ],
        "artifacts": [],
    }


@pytest.fixture
def tasks(settings):
    store = resolve_store("memory")
    settings.TASK_STORE = store
    store.save(task("t-working", "working", 2, "ctx-demo", "Translate the report"))
    store.save(task("t-failed", "failed", 90, "ctx-other", "Fetch the weather"))
    store.save(task("t-waiting", "input-required", 30, "ctx-demo", "Book a table"))
    rich = task("t-answered", "completed", 5, "ctx-demo", "Summarize the quarterly numbers, please.")
    rich["history"].append(
        {
            "kind": "message",
            "role": "agent",
            "messageId": "a1",
            "parts": [{"kind": "text", "text": "For which quarter?"}],
        }
    )
    rich["history"].append(
        {"kind": "message", "role": "user", "messageId": "u2", "parts": [{"kind": "text", "text": "Q3."}]}
    )
    rich["artifacts"] = [
        {"artifactId": "s", "name": "summary", "parts": [{"kind": "text", "text": "Revenue grew 12% in Q3."}]},
        {"artifactId": "d", "name": "figures", "parts": [{"kind": "data", "data": {"revenue": 1.12, "quarter": "Q3"}}]},
        {
            "artifactId": "f",
            "name": "chart",
            "parts": [{"kind": "file", "file": {"bytes": "aGVsbG8=", "name": "chart.csv", "mimeType": "text/csv"}}],
        },
    ]
    rich["metadata"] = {"llm": {"model": "mock", "usage": {"inputTokens": 40, "outputTokens": 9, "totalTokens": 49}}}
    store.save(rich)
    return store


def test_admin_in_a_browser(browser, live_server):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"{live_server.url}/admin/login/?next=/admin/")
        submit_login(page)
        page.get_by_role("link", name="Tasks").click()
        page.wait_for_selector("#result_list")
        ids = page.locator("#result_list th.field-task_id a").all_inner_texts()
        assert ids == ["t-working", "t-answered", "t-waiting", "t-failed"]
        badge = page.locator("#result_list .task-state-completed").first
        assert badge.inner_text() == "completed"
        assert badge.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(47, 133, 90)"  # green
        assert "minutes ago" in page.locator("#result_list td.field-updated").first.inner_text()
        page.screenshot(path=ARTIFACTS / "admin-task-list.png", full_page=True)

        # Filter: the "ctx-demo" context, then the past hour.
        page.locator("#changelist-filter details[data-filter-title=context] a", has_text="ctx-demo").click()
        page.locator("#changelist-filter details[data-filter-title=updated] a", has_text="Past hour").click()
        shown = page.locator("#result_list th.field-task_id a").all_inner_texts()
        assert shown == ["t-working", "t-answered", "t-waiting"]
        page.locator("#changelist-filter details[data-filter-title=state] a", has_text="completed").click()
        assert page.locator("#result_list th.field-task_id a").all_inner_texts() == ["t-answered"]

        # The task, as a person reads it.
        page.get_by_role("link", name="t-answered").click()
        page.wait_for_selector(".task-conversation")
        bubbles = page.locator(".task-conversation .task-message")
        assert bubbles.count() == 3 + 3  # the history, then the agent's three artifacts
        assert "For which quarter?" in page.locator(".task-message.role-agent").first.inner_text()
        assert "Revenue grew 12% in Q3." in bubbles.nth(3).inner_text()
        assert "Revenue grew 12% in Q3." in page.locator(".task-reply-artifact").first.inner_text()
        assert '"quarter": "Q3"' in page.locator(".task-reply-artifact .task-part-data").inner_text()
        link = page.get_by_role("link", name="chart.csv")
        assert "/download/artifacts/2/0/" in link.get_attribute("href")
        page.screenshot(path=ARTIFACTS / "admin-task-detail.png", full_page=True)
    finally:
        page.close()
    for name in ("admin-task-list.png", "admin-task-detail.png"):
        data = (ARTIFACTS / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
