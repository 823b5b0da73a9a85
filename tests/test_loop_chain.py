"""Which middleware runs the A2A routes' chain on the event loop (a2a.http.loop_chain),
decided at start-up; the request signals there only with receivers known not to block;
Django's guard against database work on the loop never trips (the sessions' cases run on
a real server: tests/test_loop_chain_sessions.py)."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from asgiref.sync import markcoroutinefunction
from django.core import signals
from django.db import connection
from django.utils.deprecation import MiddlewareMixin

from a2a.asgi import get_asgi_application
from a2a.http.loop_chain import why_not_on_the_loop
from a2a.testing import WireClient
from tests.test_middleware_chain import LOOP_THREAD, SEEN, SEND, run

HERE = "tests.test_loop_chain"


class UnknownMiddleware(MiddlewareMixin):
    """A middleware that says nothing about blocking."""


def sync_only_middleware(get_response):
    """Declared loop-safe, but its sync ``__call__`` cannot wrap an async view on the loop."""
    return get_response


sync_only_middleware.loop_safe = True  # type: ignore[attr-defined]


class AsyncTagMiddleware:
    """A middleware of its own async mode, declared loop-safe: it runs on the loop too."""

    sync_capable = False
    async_capable = True
    loop_safe = True

    def __init__(self, get_response):
        self.get_response = get_response
        markcoroutinefunction(self)

    async def __call__(self, request):
        response = await self.get_response(request)
        response["X-Async-Thread"] = threading.current_thread().name
        return response


class BoomMiddleware(MiddlewareMixin):
    """Declared loop-safe; fails on ``X-Boom``."""

    loop_safe = True

    def process_request(self, request):
        if request.headers.get("X-Boom"):
            raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("change", "blocker"),
    [
        ({}, None),
        ({"CSRF_USE_SESSIONS": True}, "django.middleware.csrf.CsrfViewMiddleware with CSRF_USE_SESSIONS"),
        ({"SESSION_ENGINE": f"{HERE}"}, "django.contrib.sessions.middleware.SessionMiddleware with SESSION_ENGINE"),
        ({"MESSAGE_STORAGE": f"{HERE}.X"}, "django.contrib.messages.middleware.MessageMiddleware with MESSAGE_STORAGE"),
        ({"MESSAGE_STORAGE": "a2a.http.messages.LazyFallbackStorage"}, None),
        ({"extra": f"{HERE}.UnknownMiddleware"}, f"{HERE}.UnknownMiddleware"),
        ({"extra": f"{HERE}.sync_only_middleware"}, f"{HERE}.sync_only_middleware"),
        ({"extra": f"{HERE}.AsyncTagMiddleware"}, None),
        ({"extra": "tests.test_middleware_chain.LoopRecordingMiddleware"}, None),
    ],
)
def test_what_keeps_the_chain_off_the_loop(settings, change, blocker):
    """Django's own middleware of startproject runs there, unless a setting makes it block;
    another class only when it declares ``loop_safe`` and can be called there."""
    change = dict(change)
    if "extra" in change:
        settings.MIDDLEWARE = [*settings.MIDDLEWARE, change.pop("extra")]
    for name, value in change.items():
        setattr(settings, name, value)
    assert why_not_on_the_loop() == blocker


def test_the_start_up_log_says_which_path(settings, caplog):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{HERE}.UnknownMiddleware"]
    with caplog.at_level(logging.INFO, logger="a2a.asgi"):
        get_asgi_application()
        settings.MIDDLEWARE = settings.MIDDLEWARE[:-1]
        get_asgi_application()
    said = [r.getMessage() for r in caplog.records if r.name == "a2a.asgi"]
    assert said == [
        f"A2A routes: MIDDLEWARE in a thread hop ({HERE}.UnknownMiddleware may block: docs/deployment.md)",
        "A2A routes: MIDDLEWARE on the event loop",
    ]


def _recording(settings, *extra: str) -> WireClient:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_middleware_chain.LoopRecordingMiddleware", *extra]
    settings.A2A_DIRECT_ASGI = False
    SEEN.clear()
    return WireClient(app=get_asgi_application(), version=None)


def test_a_receiver_not_known_to_be_loop_safe_takes_the_signals_off_the_loop(settings):
    """The hooks stay on the loop; both signals go to the request's thread, the same one."""
    started, finished = [], []
    on_start = lambda **kwargs: started.append(threading.current_thread().name)  # noqa: E731
    on_finish = lambda **kwargs: finished.append(threading.current_thread().name)  # noqa: E731
    signals.request_started.connect(on_start)
    signals.request_finished.connect(on_finish)
    try:
        response = run(_recording(settings).arequest("POST", "/a2a/", json=SEND))
    finally:
        signals.request_started.disconnect(on_start)
        signals.request_finished.disconnect(on_finish)
    assert response.status_code == 200
    assert {thread for _, thread in SEEN} == {f"{LOOP_THREAD}_0"}
    assert len(started) == 1 and started == finished
    assert not started[0].startswith(LOOP_THREAD)


def test_a_receiver_on_the_loop_is_called_as_signal_send_calls_it(settings):
    """request_started's receivers on the loop get what ``Signal.send`` gives them, in its
    order, each once, on the loop."""
    calls = []

    def first(**kwargs):
        calls.append(("first", kwargs, threading.current_thread().name))

    def second(**kwargs):
        calls.append(("second", kwargs, threading.current_thread().name))

    for receiver in (first, second):
        receiver.loop_safe = True  # type: ignore[attr-defined]
        signals.request_started.connect(receiver)
    try:
        response = run(_recording(settings).arequest("POST", "/a2a/", json=SEND))
    finally:
        for receiver in (first, second):
            signals.request_started.disconnect(receiver)
    assert response.status_code == 200
    assert [name for name, _, _ in calls] == ["first", "second"]
    for _, kwargs, thread in calls:
        assert set(kwargs) == {"signal", "sender", "scope"}
        assert kwargs["signal"] is signals.request_started
        assert kwargs["sender"].__name__ == "A2AASGIHandler"
        assert kwargs["scope"]["path"] == "/a2a/"
        assert thread.startswith(LOOP_THREAD)


@pytest.mark.django_db
def test_a_database_connection_on_the_loops_thread_trips_nothing(settings):
    """The thread's connection (its sync code's) is not the loop's: ``close_old_connections``
    on the loop leaves it alone (checking it would be a query, refused there)."""
    connection.ensure_connection()  # this thread's, where asyncio.run runs the loop
    response = asyncio.run(_recording(settings).arequest("POST", "/a2a/", json=SEND))
    assert response.status_code == 200
    assert response.json()["result"]["artifacts"][0]["parts"][0]["text"] == "echo: hi"
    assert {thread for _, thread in SEEN} == {threading.current_thread().name}  # the hooks: on the loop


def test_a_middleware_of_its_own_async_mode_runs_on_the_loop_beside_the_hooks(settings):
    response = run(_recording(settings, f"{HERE}.AsyncTagMiddleware").arequest("POST", "/a2a/", json=SEND))
    assert response.status_code == 200
    assert response.headers["X-Async-Thread"] == f"{LOOP_THREAD}_0"
    assert response.headers["X-Recorded"] == "yes"


def test_a_hook_that_fails_on_the_loop_is_an_error_answer_the_outer_middleware_sees(settings):
    client = _recording(settings, f"{HERE}.BoomMiddleware")
    response = run(client.arequest("POST", "/a2a/", json=SEND, headers={"X-Boom": "1"}))
    assert response.status_code == 500
    assert response.headers["X-Recorded"] == "yes"
    assert [what for what, _ in SEEN] == ["request", "response"]


MATCHES: list = []


class MatchRecordingMiddleware(MiddlewareMixin):
    """Declared loop-safe; keeps each request's URL match, as its view middleware sees it."""

    loop_safe = True

    def process_view(self, request, view, args, kwargs):
        MATCHES.append((request.resolver_match, kwargs))


def test_each_request_has_a_url_match_of_its_own(settings):
    """Resolved once per path, but a match per request: what one request's middleware does
    to it (its view kwargs) is not the next one's."""
    MATCHES.clear()
    client = _recording(settings, f"{HERE}.MatchRecordingMiddleware")
    task = run(client.arequest("POST", "/a2a/", json=SEND)).json()["result"]
    for _ in range(2):
        got = run(client.arequest("GET", f"/a2a/rest/tasks/{task['id']}", headers={"A2A-Version": "1.0"}))
        assert got.status_code == 200
    (first, first_kwargs), (second, second_kwargs) = MATCHES[1:]
    assert first is not second and first_kwargs is not second_kwargs
    assert first.func is second.func and first.url_name == second.url_name and first_kwargs == second_kwargs
    assert first.kwargs is first_kwargs


@pytest.mark.parametrize(
    ("extra", "thread"), [((), "a2a-middleware"), ((f"{HERE}.AsyncTagMiddleware",), "ThreadPoolExecutor")]
)
def test_a_request_with_a_session_cookie_leaves_the_loop(settings, extra, thread):
    """Its session (and the user it names) may be read from the store: the one-hop chain
    takes it, or Django's own handler when a middleware can only run async."""
    client = _recording(settings, *extra)
    response = run(client.arequest("POST", "/a2a/", json=SEND, headers={"Cookie": "theme=dark; sessionid=abc"}))
    assert response.status_code == 200
    assert [what for what, _ in SEEN] == ["request", "view", "response"]
    assert all(name.startswith(thread) for _, name in SEEN), SEEN
