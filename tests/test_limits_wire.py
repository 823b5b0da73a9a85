"""A2A_MAX_BODY_BYTES on the wire: the real site under uvicorn, on the direct ASGI path
and through the middleware (on the event loop, and in one thread hop). A body over the
limit is refused with 413 in each binding's error shape, and the server stops taking it:
a declared Content-Length over the limit is refused before any of the body is read, a
chunked body as soon as the bytes received pass the limit, and the answer closes the
connection. Measured in bytes the client got to send before the answer came, never in
time."""

from __future__ import annotations

import json
import selectors
import socket
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from a2a.testing import WireClient
from a2a.testing.client import rpc_body
from tests.server import running_server, site_env

pytestmark = pytest.mark.slow

LIMIT = 1024 * 1024
#: A body far larger than anything the server should take in.
HUGE = 200 * 1024 * 1024
#: What the client may get into the socket before the answer arrives: the limit, the
#: kernel's socket buffers on both ends (up to about 10 MiB on loopback) and a chunk in flight.
#: Reading the whole 200 MB body (as Django's own handler does) is far beyond it.
ACCEPTED_AT_MOST = 16 * 1024 * 1024
CHUNK = 64 * 1024


@pytest.fixture(scope="module", params=["direct", "loop", "one hop"])
def site(request, tmp_path_factory) -> Iterator[str]:
    """The site on each path of the A2A routes: direct, MIDDLEWARE on the event loop, and
    on the one-hop chain (bench/hop_middleware.py: one undeclared middleware more)."""
    log = tmp_path_factory.mktemp("limits-wire") / "server.log"
    env = site_env(
        TASK_STORE="memory",
        A2A_HANDLER="a2a.handlers.echo",
        A2A_MAX_BODY_BYTES=str(LIMIT),
        A2A_DIRECT_ASGI="true" if request.param == "direct" else "false",
    )
    if request.param == "one hop":
        env["DJANGO_SETTINGS_MODULE"] = "bench.hop_middleware"
    with running_server(env, log=log) as base:
        yield base


def padded_body(rest: bool, size: int) -> bytes:
    """A valid SendMessage (v1.0) of exactly ``size`` bytes (trailing spaces are JSON)."""
    message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "hello"}]}
    params = {"message": message}
    body = json.dumps(params if rest else rpc_body("SendMessage", params))
    raw = body.encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


def path(rest: bool) -> str:
    return "/a2a/rest/message:send" if rest else "/a2a/"


def wire(base: str) -> WireClient:
    """The test kit's client for the site at ``base``, its requests' bodies JSON."""
    return WireClient(base_url=base, timeout=60, headers={"Content-Type": "application/json"})


def chunks(body: bytes) -> Iterator[bytes]:
    """The body as a generator: httpx sends it chunked, without a Content-Length."""
    for i in range(0, len(body), 1000):
        yield body[i : i + 1000]


def check_refused(response: httpx.Response, rest: bool) -> str:
    """The 413 each binding gives; returns the message."""
    assert response.status_code == 413, (response.status_code, response.text[:300])
    assert response.headers["connection"] == "close"
    body = response.json()
    if rest:
        error = body["error"]
        assert error["code"] == 413 and error["status"] == "INVALID_ARGUMENT", error
        assert error["details"][0]["reason"] == "INVALID_REQUEST", error
    else:
        assert body["id"] is None and body["jsonrpc"] == "2.0", body
        error = body["error"]
        assert error["code"] == -32600, error
    assert "A2A_MAX_BODY_BYTES" in error["message"], error
    return error["message"]


@pytest.mark.parametrize("rest", [False, True], ids=["jsonrpc", "rest"])
def test_at_the_limit_passes_one_byte_over_is_413_with_content_length(site, rest):
    answer = wire(site).request("POST", path(rest), content=padded_body(rest, LIMIT))
    assert answer.status_code == 200, answer.text[:300]
    message = check_refused(wire(site).request("POST", path(rest), content=padded_body(rest, LIMIT + 1)), rest)
    assert f"{LIMIT + 1} bytes" in message and f"at most {LIMIT}" in message


@pytest.mark.parametrize("rest", [False, True], ids=["jsonrpc", "rest"])
def test_at_the_limit_passes_one_byte_over_is_413_chunked(site, rest):
    answer = wire(site).request("POST", path(rest), content=chunks(padded_body(rest, LIMIT)))
    assert answer.status_code == 200, answer.text[:300]
    assert "content-length" not in answer.request.headers
    message = check_refused(wire(site).request("POST", path(rest), content=chunks(padded_body(rest, LIMIT + 1))), rest)
    assert f"more than {LIMIT} bytes" in message


def test_a_get_with_a_body_over_the_limit_is_413(site):
    response = httpx.request("GET", f"{site}/a2a/rest/tasks", content=b" " * (LIMIT + 1), timeout=60)
    check_refused(response, rest=True)


def stream_until_answered(base: str, head: bytes, frame: bool) -> tuple[int, bytes]:
    """Send ``head`` then up to :data:`HUGE` body bytes (as chunks when ``frame``),
    stopping when the server answers or closes; the body bytes sent, and the answer."""
    url = urlsplit(base)
    sent, answer = 0, b""
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock, selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_READ)  # epoll/poll: select() refuses descriptors over 1023
        sock.sendall(head)
        piece = b" " * CHUNK
        data = (b"%x\r\n" % CHUNK + piece + b"\r\n") if frame else piece
        try:
            while sent < HUGE:
                if sel.select(0):
                    break
                sock.sendall(data)
                sent += CHUNK
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection: the answer is in the socket
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass  # the server closed with our unread body in its buffer
    return sent, answer


def request_head(rest: bool, length: int | None) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST {path(rest)} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"A2A-Version: 1.0\r\n{framing}\r\n\r\n"
    ).encode()


@pytest.mark.parametrize("rest", [False, True], ids=["jsonrpc", "rest"])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_huge_body_is_answered_before_the_client_finished_sending_it(site, rest, declared):
    sent, answer = stream_until_answered(site, request_head(rest, HUGE if declared else None), frame=not declared)
    assert sent < ACCEPTED_AT_MOST, f"the client sent {sent} bytes before the server answered"
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
    assert b"\r\nconnection: close\r\n" in answer.lower()
    assert b"A2A_MAX_BODY_BYTES" in answer
    # The server is fine afterwards.
    assert wire(site).request("POST", path(rest), content=padded_body(rest, 1000)).status_code == 200


@pytest.mark.parametrize("rest", [False, True], ids=["jsonrpc", "rest"])
def test_a_client_that_expects_100_continue_is_refused_without_sending_the_body(site, rest):
    """``Expect: 100-continue`` with a Content-Length over the limit: the server answers
    413 straight away, never inviting the body (uvicorn sends 100 only when the app
    asks for the body)."""
    url = urlsplit(site)
    head = request_head(rest, HUGE).replace(b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n")
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock, selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_READ)  # epoll/poll: select() refuses descriptors over 1023
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
    assert b"100 Continue" not in answer
    assert b"A2A_MAX_BODY_BYTES" in answer
