"""The browsable agent in a real browser (the Chromium + Playwright set-up of
tests/test_admin_browser.py), against the example site under uvicorn (the test
server's WSGI live server would buffer the stream). Screenshots go to tests/artifacts/
(git-ignored), whose paths the test prints:

- ``agent-browse-streaming.png``: the agent page mid-stream: the card (skills,
  interfaces, capabilities, security) and the task "working", with the progress update
  and an artifact that arrived while the handler still runs.
- ``agent-browse-input-required.png``: the agent asked a question: the task is
  ``input-required``, the question shown, the form's button now "Answer".
- ``agent-browse-completed.png``: after the answer: the task completed, with its
  artifact, and the link to the task in the admin.
- ``agent-browse-chunks-growing.png``, ``agent-browse-chunks.png``: a reply streamed in
  three chunks, after two (the reply still growing) and when done: one message, grown in
  place (1280 px wide, as every shot here).
- ``agent-browse-second-agent.png``: the second agent's page (/agents/shout/a2a/browse/):
  its longer interface URLs inside the card.
"""

from __future__ import annotations

import json

import pytest

from tests.server import manage, running_server, site_env
from tests.test_admin_browser import ARTIFACTS, PASSWORD, chromium, submit_login

SKILLS = [
    {
        "id": "forecast",
        "name": "Weather forecast",
        "description": "Forecasts for a city and a day; asks which day when you do not say.",
        "tags": ["weather", "demo"],
        "examples": ["Will it rain in Paris this weekend?"],
    }
]


@pytest.fixture
def site(tmp_path):
    env = site_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        TASK_STORE="memory",
        A2A_HANDLER="tests.handlers.scripted",
        A2A_AGENT_NAME="Weather desk",
        A2A_AGENT_DESCRIPTION="Forecasts, one question at a time.",
        A2A_SKILLS=json.dumps(SKILLS),
        DEBUG="true",  # uvicorn serves the static files (a2a/agent.js) as runserver does
    )
    manage("migrate", "--noinput", env=env)
    manage(
        "createsuperuser",
        "--noinput",
        "--username",
        "ops",
        "--email",
        "ops@example.com",
        env={**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
    )
    with running_server(env, log=tmp_path / "server.log") as base:
        yield base


@pytest.fixture
def browser(site):
    with chromium() as browser:
        yield browser


def log_in(page, site):
    """The agent page sends staff to the admin's login first, then back."""
    page.goto(f"{site}/a2a/browse/")
    assert "/admin/login/" in page.url  # staff only: the admin's login first
    submit_login(page)
    page.wait_for_url("**/a2a/browse/")
    assert page.title() == "Weather desk · A2A agent"
    assert "Will it rain in Paris this weekend?" in page.locator("#skills").inner_text()
    assert "HTTP+JSON" in page.locator("#interfaces").inner_text()


def stream_ask_and_answer(page, gate, screenshots):
    """Mid-stream progress and an artifact, a question, the answer, completed: the task's id."""
    streaming_png, question_png, completed_png = screenshots
    # Mid-stream: the handler reports progress and an artifact, then waits for the gate.
    page.fill(
        "#id_text",
        f"progress:Reading the forecast for Paris;artifact:Paris: 18°C and sunny;wait:{gate};ask:Which day?",
    )
    page.click("#send-button")
    page.wait_for_selector("#events li.artifact")
    assert page.locator("#task-state").inner_text() == "working"
    assert "Reading the forecast for Paris" in page.locator("#events").inner_text()
    assert page.locator("#cancel-button").is_enabled()
    page.screenshot(path=streaming_png, full_page=True)

    gate.touch()  # the handler goes on, and asks
    page.wait_for_selector("#task-state.state-input-required")
    assert "Which day?" in page.locator("#events li.question").inner_text()
    assert page.locator("#send-button").inner_text() == "Answer"
    task_id = page.locator("#task-id").inner_text()
    assert page.locator("input[name=taskId]").first.input_value() == task_id
    page.fill("#id_text", "artifact:Saturday: sunny, 21°C")
    page.screenshot(path=question_png, full_page=True)

    page.click("#send-button")
    page.wait_for_selector("#task-state.state-completed")
    assert page.locator("#task-id").inner_text() == task_id  # the same task, answered
    assert "Saturday: sunny, 21°C" in page.locator("#events").inner_text()
    assert page.locator("#cancel-button").is_disabled()
    assert page.locator("#send-button").inner_text() == "Send"
    page.screenshot(path=completed_png, full_page=True)
    return task_id


def test_talk_to_the_agent_in_a_browser(site, browser, tmp_path, capsys):
    ARTIFACTS.mkdir(exist_ok=True)
    screenshots = (
        ARTIFACTS / "agent-browse-streaming.png",
        ARTIFACTS / "agent-browse-input-required.png",
        ARTIFACTS / "agent-browse-completed.png",
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        log_in(page, site)
        task_id = stream_ask_and_answer(page, tmp_path / "gate", screenshots)

        page.click("#admin-link")
        page.wait_for_url(f"**/admin/stores/taskrecord/{task_id}/change/")
        assert "completed" in page.locator("body").inner_text()

        # Cancel: a task that waits is canceled from the page.
        page.goto(f"{site}/a2a/browse/")
        page.fill("#id_text", f"progress:Waiting;wait:{tmp_path / 'never'}")
        page.click("#send-button")
        page.wait_for_selector("#task-state.state-working")
        page.click("#cancel-button")
        page.wait_for_selector("#task-state.state-canceled")
    finally:
        page.close()
    with capsys.disabled():
        for path in screenshots:
            print(f"\nscreenshot: {path}")


#: The text of each reply the page shows for the artifact "r" (one element, or none).
REPLY = "document.querySelectorAll('#events li.message.agent[data-reply$=\"/r\"]')"


def reply_texts(page) -> list[str]:
    return page.evaluate(f"[...{REPLY}].map(e => e.querySelector('.body').textContent)")


def test_a_streamed_reply_grows_in_place(site, browser, tmp_path, capsys):
    """Three chunks of one artifact (append, then lastChunk) are one message whose text
    grows; status lines only where a status says something; the cards' URLs inside them."""
    gates = [tmp_path / "one", tmp_path / "two"]
    growing_png = ARTIFACTS / "agent-browse-chunks-growing.png"
    chunks_png = ARTIFACTS / "agent-browse-chunks.png"
    second_png = ARTIFACTS / "agent-browse-second-agent.png"
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        log_in(page, site)
        page.fill("#id_text", f"chunk:r:Hello;wait:{gates[0]};chunk:r:, wide;wait:{gates[1]};last:r: world")
        page.click("#send-button")
        page.wait_for_function(f"{REPLY}.length === 1")
        reply = page.locator("#events li[data-reply$='/r']").element_handle()
        assert reply_texts(page) == ["Hello"]
        assert "streaming" in reply.get_attribute("class")
        gates[0].touch()
        page.wait_for_function(f"{REPLY}[0].textContent.includes('Hello, wide')")
        assert reply_texts(page) == ["Hello, wide"] and "streaming" in reply.get_attribute("class")
        page.screenshot(path=growing_png, full_page=True)
        gates[1].touch()
        page.wait_for_selector("#task-state.state-completed")
        assert reply_texts(page) == ["Hello, wide world"]  # one message, grown
        assert reply.evaluate("e => e.isConnected") and "streaming" not in reply.get_attribute("class")
        assert page.locator("#events li.message.user").count() == 1
        assert page.locator("#events li.status").count() == 0  # no "submitted: task ..." lines
        page.screenshot(path=chunks_png, full_page=True)
        assert_inside(page, "#interfaces")

        page.goto(f"{site}/agents/shout/a2a/browse/")
        assert "/agents/shout/a2a/rest" in page.locator("#interfaces").inner_text()
        assert_inside(page, "#interfaces")
        page.screenshot(path=second_png, full_page=True)
    finally:
        page.close()
    with capsys.disabled():
        print(f"\nscreenshots: {growing_png} {chunks_png} {second_png}")


def assert_inside(page, card: str) -> None:
    """Every URL of the card within the card's box (none overflows it)."""
    box = page.locator(card).bounding_box()
    urls = page.locator(f"{card} code")
    assert urls.count() >= 4
    for i in range(urls.count()):
        url = urls.nth(i).bounding_box()
        assert box["x"] <= url["x"] and url["x"] + url["width"] <= box["x"] + box["width"], (i, url, box)
    assert page.locator(card).evaluate("e => e.scrollWidth <= e.clientWidth")


def test_a_refused_file_type_is_said_in_words_and_the_text_kept(site, browser, capsys):
    """A CSV file to an agent taking text and JSON (the default A2A_INPUT_MODES): the
    page says so in words, keeps what was typed and the file, shows no (empty) task."""
    refused_png = ARTIFACTS / "agent-browse-refused-file.png"
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        log_in(page, site)
        page.fill("#id_text", "Sum the second column, please")
        page.set_input_files("#id_file", files=[{"name": "sales.csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n"}])
        page.click("#send-button")
        page.wait_for_selector("#error")
        assert page.locator("#error").inner_text() == (
            "This agent does not accept CSV files (text/csv). "
            "It accepts: text (text/plain), JSON data (application/json)."
        )
        assert page.locator("#id_text").input_value() == "Sum the second column, please"
        assert page.locator("#id_file").evaluate("e => e.files.length && e.files[0].name") == "sales.csv"
        assert page.locator("#task").is_hidden()
        assert page.locator("#events li").count() == 0
        assert page.locator("#send-button").is_enabled()
        page.screenshot(path=refused_png, full_page=True)
    finally:
        page.close()
    with capsys.disabled():
        print(f"\nscreenshot: {refused_png}")
