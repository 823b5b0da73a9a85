"""The ASGI application: the direct path for the A2A endpoints, the full Django stack
for everything else, and lifespan shutdown draining the runner."""

from __future__ import annotations

import asyncio
import io
import tempfile

import pytest
from django.core.exceptions import RequestAborted

from a2a.asgi import get_asgi_application
from a2a.testing import WireClient
from a2a.testing.client import rpc_body
from tests.helpers import asgi_scope
from tests.middleware import PROJECT_MIDDLEWARE

SEND = rpc_body(
    "SendMessage", {"message": {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}
)


@pytest.mark.parametrize("path", ["direct", "loop", "one hop"])
def test_every_path_answers_the_same(settings, path):
    settings.A2A_DIRECT_ASGI = path == "direct"
    if path == "one hop":  # a middleware that does not declare it does not block
        settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_loop_chain.UnknownMiddleware"]
    response = asyncio.run(WireClient(version=None).arequest("POST", "/a2a/", json=SEND))
    assert response.status_code == 200
    assert response.json()["result"]["artifacts"][0]["parts"][0]["text"] == "echo: hi"
    card = asyncio.run(WireClient(version=None).arequest("GET", "/.well-known/agent-card.json"))
    assert card.json()["url"] == "http://testserver/a2a/"


def test_the_direct_path_skips_middleware_and_the_full_stack_does_not(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, PROJECT_MIDDLEWARE]
    settings.A2A_DIRECT_ASGI = True
    direct = asyncio.run(WireClient(version=None).arequest("POST", "/a2a/", json=SEND))
    assert "X-Project-Middleware" not in direct.headers
    settings.A2A_DIRECT_ASGI = False
    full = asyncio.run(WireClient(version=None).arequest("POST", "/a2a/", json=SEND))
    assert full.headers["X-Project-Middleware"] == "/a2a/"


def test_the_direct_path_still_enforces_allowed_hosts(settings):
    settings.A2A_DIRECT_ASGI = True
    settings.ALLOWED_HOSTS = ["agent.example.com"]
    response = asyncio.run(WireClient(version=None).arequest("GET", "/.well-known/agent-card.json"))
    assert response.status_code == 400
    assert "testserver" in response.text


def test_other_paths_go_through_django():
    response = asyncio.run(WireClient(version=None).arequest("GET", "/admin/"))
    assert response.status_code == 302  # the admin's login redirect, from the full stack
    assert "/admin/login/" in response.headers["location"]


def test_lifespan_shutdown_drains_the_runner(settings):
    from a2a.runtime.runner import get_runner

    app = get_asgi_application()
    runner = get_runner()

    async def lifespan() -> list[dict]:
        incoming = asyncio.Queue()
        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        await incoming.put({"type": "lifespan.startup"})
        await incoming.put({"type": "lifespan.shutdown"})
        await app({"type": "lifespan"}, incoming.get, send)
        return sent

    runner.submit("no-such-task").result(5)  # starts the runner's loop
    assert runner.started
    assert asyncio.run(lifespan()) == [
        {"type": "lifespan.startup.complete"},
        {"type": "lifespan.shutdown.complete"},
    ]
    assert not runner.started  # shut down


async def _raw_call(
    app, body: bytes, *, disconnect_after: float | None = None, method: str = "POST", path: str = "/a2a/"
) -> list[dict]:
    """Call the ASGI app with an in-memory client that may go away after a while."""
    sent: list[dict] = []
    delivered = False

    async def receive() -> dict:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        if disconnect_after is None:
            await asyncio.Event().wait()
        await asyncio.sleep(disconnect_after)
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(asgi_scope(path, method=method), receive, send)
    return sent


def _slow_send(settings, monkeypatch, tmp_path) -> bytes:
    import json

    settings.A2A_HANDLER = "tests.handlers.recording"
    monkeypatch.setenv("A2A_TEST_RUNS_FILE", str(tmp_path / "runs"))
    message = {**SEND["params"]["message"], "parts": [{"kind": "text", "text": "sleep:1.5"}]}
    return json.dumps({**SEND, "params": {"message": message, "configuration": {"blocking": True}}}).encode()


def test_a_client_that_goes_away_ends_a_blocking_send_at_once(settings, monkeypatch, tmp_path):
    import time

    body = _slow_send(settings, monkeypatch, tmp_path)
    app = get_asgi_application()
    started = time.monotonic()
    sent = asyncio.run(_raw_call(app, body, disconnect_after=0.1))
    assert time.monotonic() - started < 1.0  # not the handler's 1.5 s
    assert sent == []  # nothing is written to a client that is gone


def test_a_request_cancelled_from_outside_is_cancelled(settings, monkeypatch, tmp_path):
    body = _slow_send(settings, monkeypatch, tmp_path)
    app = get_asgi_application()

    async def go() -> None:
        task = asyncio.ensure_future(_raw_call(app, body))
        await asyncio.sleep(0.05)
        task.cancel()  # the server shutting down, say
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())


@pytest.mark.parametrize("direct", [True, False])
def test_a_disconnect_listener_is_made_only_for_an_answer_that_waits(settings, monkeypatch, tmp_path, direct):
    """An answer made without waiting gives the loop no chance to see the client leave: no
    listener task for it; one that waits (a blocking send) is watched, and ended by a leave."""
    from a2a.asgi import A2AASGIHandler

    settings.A2A_DIRECT_ASGI = direct
    listened = []
    listen = A2AASGIHandler.listen_for_disconnect

    async def listen_for_disconnect(self, receive):
        listened.append(True)
        return await listen(self, receive)

    monkeypatch.setattr(A2AASGIHandler, "listen_for_disconnect", listen_for_disconnect)
    app = get_asgi_application()
    card = asyncio.run(_raw_call(app, b"", method="GET", path="/.well-known/agent-card.json"))
    assert card[0]["status"] == 200 and listened == []
    sent = asyncio.run(_raw_call(app, _slow_send(settings, monkeypatch, tmp_path), disconnect_after=0.1))
    assert sent == [] and listened == [True]


def _receiving(*messages: dict):
    pending = list(messages)

    async def receive() -> dict:
        return pending.pop(0)

    return receive


def _read(receive) -> object:
    from a2a.asgi import A2AASGIHandler

    return asyncio.run(A2AASGIHandler().read_body(receive))


def test_a_small_body_is_read_into_memory_in_one_piece(settings):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 10
    body = _read(
        _receiving(
            {"type": "http.request", "body": b"abc", "more_body": True},
            {"type": "http.request", "more_body": True},
            {"type": "http.request", "body": b"defghij", "more_body": False},
        )
    )
    assert isinstance(body, io.BytesIO)  # Django's handler makes a SpooledTemporaryFile
    assert body.read() == b"abcdefghij"


@pytest.mark.parametrize("chunks", [[b"abcdefghijk"], [b"abcdef", b"ghijk"], [b"abcdefghijk", b"lm"]])
def test_a_body_over_the_memory_size_is_spooled_to_disk_as_django_does(settings, chunks):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 10
    messages = [{"type": "http.request", "body": chunk, "more_body": True} for chunk in chunks]
    messages[-1]["more_body"] = False
    body = _read(_receiving(*messages))
    assert isinstance(body, tempfile.SpooledTemporaryFile)
    assert body._rolled  # on disk, as in Django's handler
    assert body.read() == b"".join(chunks)


@pytest.mark.parametrize("read", [b"ab", b"abcdefghijk"])
def test_a_client_that_goes_away_while_sending_its_body_aborts_the_request(settings, read):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 10
    receive = _receiving({"type": "http.request", "body": read, "more_body": True}, {"type": "http.disconnect"})
    with pytest.raises(RequestAborted):
        _read(receive)
