"""The project's MIDDLEWARE on the A2A routes, on both of its paths: on the event loop
(a2a.http.loop_chain: every middleware known not to block) and in one thread hop
(a2a.http.chain: any other). Either way every hook and both request signals see every
A2A request, in Django's order, each path on its own thread; streams too; a middleware's
own answer wins; an async-only middleware keeps Django's async chain."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

import pytest
from django.core import signals
from django.http import HttpResponse
from django.utils.deprecation import MiddlewareMixin

from a2a.asgi import get_asgi_application
from a2a.testing import WireClient
from a2a.testing.client import rpc_body
from tests.middleware import PROJECT_MIDDLEWARE

SEND = rpc_body(
    "SendMessage", {"message": {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}
)
STREAM = {**SEND, "method": "SendStreamingMessage"}

#: (what, thread name) of every hook and signal, in order.
SEEN: list[tuple[str, str]] = []


def _saw(what: str) -> None:
    SEEN.append((what, threading.current_thread().name))


class RecordingMiddleware(MiddlewareMixin):
    """Records each hook's call (and its thread); tags the response."""

    def process_request(self, request):
        _saw("request")
        if request.headers.get("X-Refuse"):
            return HttpResponse("refused by the middleware", status=403)
        return None

    def process_view(self, request, view, args, kwargs):
        _saw("view")

    def process_response(self, request, response):
        _saw("streaming response" if response.streaming else "response")
        response["X-Recorded"] = "yes"
        return response


class LoopRecordingMiddleware(RecordingMiddleware):
    """The same, declared not to block: the chain runs on the event loop."""

    loop_safe = True


def _started(**kwargs):
    _saw("request_started")


def _finished(**kwargs):
    _saw("request_finished")


#: The thread the tests' event loops run on: one of its own (no database connection).
LOOP_THREAD = "test-loop"


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run`` on a thread of its own, as a server's loop runs: the test's own thread
    may hold a database connection, which keeps ``close_old_connections`` off the loop."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=LOOP_THREAD) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(params=["loop", "one hop"])
def path(request) -> str:
    """Which path the A2A routes' MIDDLEWARE takes: the recording middleware (and request
    signal receivers) declared not to block, or not."""
    return request.param


@pytest.fixture
def recorded(settings, path):
    middleware = "LoopRecordingMiddleware" if path == "loop" else "RecordingMiddleware"
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"tests.test_middleware_chain.{middleware}"]
    settings.A2A_DIRECT_ASGI = False
    SEEN.clear()
    for receiver in (_started, _finished):
        receiver.loop_safe = path == "loop"  # type: ignore[attr-defined]
    signals.request_started.connect(_started)
    signals.request_finished.connect(_finished)
    yield SEEN
    signals.request_started.disconnect(_started)
    signals.request_finished.disconnect(_finished)


def _client() -> WireClient:
    return WireClient(app=get_asgi_application(), version=None)  # built on the test's settings


def _thread_of(path: str) -> str:
    return LOOP_THREAD if path == "loop" else "a2a-middleware"


def test_every_hook_and_signal_sees_an_a2a_request_on_one_thread(recorded, path):
    response = run(_client().arequest("POST", "/a2a/", json=SEND))
    assert response.status_code == 200
    assert response.headers["X-Recorded"] == "yes"
    assert response.json()["result"]["artifacts"][0]["parts"][0]["text"] == "echo: hi"
    assert [what for what, _ in recorded] == ["request_started", "request", "view", "response", "request_finished"]
    threads = {thread for _, thread in recorded}
    assert len(threads) == 1 and threads.pop().startswith(_thread_of(path))


def test_the_rest_binding_and_the_card_go_through_it_too(recorded):
    client = _client()
    task = run(client.arequest("POST", "/a2a/", json=SEND)).json()["result"]
    recorded.clear()
    got = run(client.arequest("GET", f"/a2a/rest/tasks/{task['id']}", headers={"A2A-Version": "1.0"}))
    assert got.status_code == 200 and got.headers["X-Recorded"] == "yes"
    card = run(client.arequest("GET", "/.well-known/agent-card.json"))
    assert card.headers["X-Recorded"] == "yes"
    assert [what for what, _ in recorded].count("request_finished") == 2


def test_a_stream_is_seen_by_the_middleware_and_finished_after_its_last_event(recorded):
    async def stream_then_wait() -> list:
        events = await _client().astream("POST", "/a2a/", json=STREAM)
        for _ in range(200):  # the app closes the response once the client has the last event
            if recorded[-1][0] == "request_finished":
                break
            await asyncio.sleep(0.01)
        return events

    events = run(stream_then_wait())
    assert events and events[-1]["result"]["status"]["state"] in ("completed", "TASK_STATE_COMPLETED")
    order = [what for what, _ in recorded]
    assert order == ["request_started", "request", "view", "streaming response", "request_finished"]


def test_a_middlewares_own_answer_is_the_answer(recorded):
    response = run(_client().arequest("POST", "/a2a/", json=SEND, headers={"X-Refuse": "1"}))
    assert response.status_code == 403
    assert response.text == "refused by the middleware"
    assert [what for what, _ in recorded] == ["request_started", "request", "response", "request_finished"]


def test_an_async_only_middleware_keeps_djangos_async_chain(settings):
    from a2a.http.chain import all_sync_capable

    settings.MIDDLEWARE = [*settings.MIDDLEWARE, PROJECT_MIDDLEWARE]
    assert not all_sync_capable()
    response = asyncio.run(WireClient(app=get_asgi_application(), version=None).arequest("POST", "/a2a/", json=SEND))
    assert response.headers["X-Project-Middleware"] == "/a2a/"
