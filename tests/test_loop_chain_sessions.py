"""The A2A routes' MIDDLEWARE on the event loop never does database work there: the real
site under uvicorn with the ORM session backend (SQLite, and PostgreSQL when
A2A_TEST_POSTGRES_URL is set), DRF's ``SessionAuthentication``, ``SESSION_SAVE_EVERY_REQUEST``
or ``CSRF_USE_SESSIONS``, and a middleware that reads and writes the session
(tests/session_site.py). A request with a session cookie takes the one-hop chain; one
without takes the loop, where a session to save is saved off it; Django's guard
(``SynchronousOnlyOperation``) never trips. Which path a request took: the thread the
middleware ran on (the loop's is the server's MainThread)."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from a2a.testing.client import rpc_body
from tests.server import ServerURL, manage, postgres_database, running_server, site_env

pytestmark = pytest.mark.slow

LOOP = "MainThread"
PASSWORD = "a-long-password-1"
SEND = rpc_body(
    "SendMessage", {"message": {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}
)


def _databases() -> list[str]:
    return ["sqlite", "postgres"] if "postgres" in settings.DATABASES else ["sqlite"]


@pytest.fixture(scope="module", params=_databases())
def database_url(request, tmp_path_factory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('sessions') / 'db.sqlite3'}"
        return
    with postgres_database(settings.POSTGRES_URL, "a2a_sessions") as url:
        yield url


def _site(database_url: str, log: Path, **extra: str) -> Iterator[ServerURL]:
    env = site_env(
        DATABASE_URL=database_url,
        TASK_STORE="memory",
        A2A_HANDLER="a2a.handlers.echo",
        A2A_AUTHENTICATION_CLASSES='["rest_framework.authentication.SessionAuthentication"]',
        LOOP_SAFE="true",
        **extra,
    )
    env["DJANGO_SETTINGS_MODULE"] = "tests.session_site"
    manage("migrate", "--noinput", env=env)
    name = f"u{uuid.uuid4().hex[:8]}"
    manage("createsuperuser", "--noinput", "--username", name, "--email", "a@example.com",
           env={**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD})  # fmt: skip
    with running_server(env, log=log) as base:
        base.user = name  # type: ignore[attr-defined]
        yield base
    assert "SynchronousOnlyOperation" not in log.read_text()


@pytest.fixture(scope="module")
def site(database_url, tmp_path_factory) -> Iterator[ServerURL]:
    """The site with the session-reading middleware declared loop-safe and the session
    saved on every request."""
    yield from _site(database_url, tmp_path_factory.mktemp("site") / "server.log", SESSION_SAVE_EVERY_REQUEST="true")


def _token(page: httpx.Response) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found, page.text[:500]
    return found.group(1)


@contextlib.contextmanager
def logged_in(base: ServerURL) -> Iterator[httpx.Client]:
    """A client logged in through the admin's login form: a session cookie, and the CSRF
    token DRF's ``SessionAuthentication`` asks for on a POST."""
    with httpx.Client(base_url=base, timeout=10) as client:
        yield _log_in(client, base)


def _log_in(client: httpx.Client, base: ServerURL) -> httpx.Client:
    token = _token(client.get("/admin/login/"))
    form = {"username": base.user, "password": PASSWORD, "csrfmiddlewaretoken": token}  # type: ignore[attr-defined]
    assert client.post("/admin/login/?next=/admin/", data=form).status_code == 302
    assert "sessionid" in client.cookies
    client.headers["X-CSRFToken"] = _token(client.get("/admin/"))
    return client


def test_a_logged_in_session_takes_the_one_hop_chain_and_is_the_caller(site):
    with logged_in(site) as client:
        sent = client.post("/a2a/", json=SEND)
        assert sent.status_code == 200, sent.text
        assert sent.headers["X-User"] == site.user
        assert sent.headers["X-Middleware-Thread"].startswith("a2a-middleware")
        assert "sessionid" in sent.headers.get("set-cookie", "")  # SESSION_SAVE_EVERY_REQUEST
        task = sent.json()["result"]
        got = client.post("/a2a/", json=rpc_body("GetTask", {"id": task["id"]}))
        assert got.json()["result"]["id"] == task["id"]  # the session's user owns it
        visited = client.get("/.well-known/agent-card.json", headers={"X-Visit": "1"})
        assert visited.status_code == 200 and visited.headers["X-Visits"] == "0"
        again = client.get("/.well-known/agent-card.json")
        assert again.headers["X-Visits"] == "1"  # saved


def test_without_a_session_cookie_the_chain_runs_on_the_loop(site):
    card = httpx.get(f"{site}/.well-known/agent-card.json", timeout=10)
    assert card.status_code == 200
    assert card.headers["X-Middleware-Thread"] == LOOP
    refused = httpx.post(f"{site}/a2a/", json=SEND, timeout=10)  # no session: not authenticated
    assert refused.status_code == 401
    assert refused.headers["X-Middleware-Thread"] == LOOP


def test_a_session_written_on_the_loop_is_saved_off_it(site):
    with httpx.Client(base_url=site, timeout=10) as client:
        first = client.get("/.well-known/agent-card.json", headers={"X-Visit": "1"})
        assert first.status_code == 200 and first.headers["X-Middleware-Thread"] == LOOP
        assert "sessionid" in client.cookies  # a new session, saved to the database
        assert client.get("/.well-known/agent-card.json").headers["X-Visits"] == "1"


def test_messages_stored_in_the_session_on_the_loop_are_saved_off_it(site):
    with httpx.Client(base_url=site, timeout=10) as client:
        first = client.get("/.well-known/agent-card.json", headers={"X-Message": "1"})
        assert first.status_code == 200 and first.headers["X-Middleware-Thread"] == LOOP
        assert "sessionid" in client.cookies


@pytest.fixture(scope="module")
def lazy_messages(database_url, tmp_path_factory) -> Iterator[ServerURL]:
    """The site with ``a2a.http.messages.LazyFallbackStorage`` (the example site's)."""
    log = tmp_path_factory.mktemp("lazy-messages") / "server.log"
    yield from _site(database_url, log, MESSAGE_STORAGE="a2a.http.messages.LazyFallbackStorage")


def test_lazy_messages_stay_on_the_loop_and_store_off_it(lazy_messages):
    """A message that fits goes in a cookie; one that does not, in the session, saved off
    the loop (the site's log is checked for SynchronousOnlyOperation at its end)."""
    with httpx.Client(base_url=lazy_messages, timeout=10) as client:
        plain = client.get("/.well-known/agent-card.json")
        assert plain.headers["X-Middleware-Thread"] == LOOP and not plain.cookies
        small = client.get("/.well-known/agent-card.json", headers={"X-Message": "1"})
        assert small.headers["X-Middleware-Thread"] == LOOP
        assert "messages" in small.cookies and "sessionid" not in client.cookies
    with httpx.Client(base_url=lazy_messages, timeout=10) as client:
        big = client.get("/.well-known/agent-card.json", headers={"X-Message": "big"})
        assert big.status_code == 200 and big.headers["X-Middleware-Thread"] == LOOP
        assert "sessionid" in client.cookies  # the session, saved to the database


@pytest.fixture(scope="module")
def csrf_in_sessions(tmp_path_factory) -> Iterator[ServerURL]:
    url = f"sqlite:///{tmp_path_factory.mktemp('csrf') / 'db.sqlite3'}"
    yield from _site(url, tmp_path_factory.mktemp("csrf-site") / "server.log", CSRF_USE_SESSIONS="true")


def test_csrf_in_the_session_keeps_every_request_on_the_one_hop_chain(csrf_in_sessions):
    card = httpx.get(f"{csrf_in_sessions}/.well-known/agent-card.json", timeout=10)
    assert card.headers["X-Middleware-Thread"].startswith("a2a-middleware")
    with logged_in(csrf_in_sessions) as client:
        sent = client.post("/a2a/", json=SEND)
        assert sent.status_code == 200, sent.text
        assert sent.headers["X-User"] == csrf_in_sessions.user
