"""Slow clients (issue 14, item 4): the site served as ``make run`` serves it (uvicorn
with ``a2a.http.protocol``), at an open-file limit of 256, against loopback sockets
that each send half a request and then nothing.

- 2,000 half-sent requests neither block a new request (it is answered within a few
  seconds) nor stay open: each is closed within ``A2A_HEADER_TIMEOUT`` (plus slack);
- a body that stops, and half a second request on a kept-alive connection, are closed
  within their timeouts too;
- a stream is not cut by them: once its request is read, it lasts as long as it streams;
- the soft open-file limit is raised to the hard one at start-up.
"""

from __future__ import annotations

import contextlib
import resource
import select
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from a2a.testing.client import WireClient, rpc_body, v10_message
from tests.server import running_server, site_env

pytestmark = pytest.mark.slow

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
#: Scheduling slack on a shared two-core machine, on top of a timeout.
SLACK = 3.0
FILE_LIMIT = 256
HALF_REQUEST = b"POST /a2a/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appli"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("slowloris") / "server.log"
    env = site_env(
        TASK_STORE="memory",
        A2A_HANDLER="tests.handlers.scripted",
        A2A_HEADER_TIMEOUT=str(HEADER_TIMEOUT),
        A2A_BODY_TIMEOUT=str(BODY_TIMEOUT),
        A2A_STREAM_KEEPALIVE="0.5",
    )
    with running_server(env, log=log, nofile=(FILE_LIMIT, FILE_LIMIT)) as base:
        yield base


@pytest.fixture(autouse=True)
def _client_sockets():
    """This process opens thousands of sockets: its soft file limit up to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def address(base: str) -> tuple[str, int]:
    parts = urlsplit(base)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


def open_half_requests(base: str, count: int, data: bytes = HALF_REQUEST) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        s = socket.create_connection(address(base), timeout=5)
        s.sendall(data)
        s.setblocking(False)
        sockets.append(s)
    return sockets


def wait_closed(sockets: list[socket.socket], deadline: float) -> list[socket.socket]:
    """Read each socket until the server closes it or ``deadline``; the ones still open."""
    open_ = {s.fileno(): s for s in sockets}
    poller = select.poll()
    for fd in open_:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while open_ and time.monotonic() < deadline:
        for fd, _ in poller.poll(100):
            try:
                data = open_[fd].recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                poller.unregister(fd)
                del open_[fd]
    return list(open_.values())


def close_all(sockets: list[socket.socket]) -> None:
    for s in sockets:
        with contextlib.suppress(OSError):
            s.close()


def test_half_sent_requests_neither_block_new_ones_nor_stay_open(site):
    sockets = open_half_requests(site, 2000)
    try:
        sent = started = time.monotonic()
        card = httpx.get(f"{site}/.well-known/agent-card.json", timeout=5)
        answer = WireClient(base_url=site, timeout=5).rpc_response("SendMessage", {"message": v10_message("hello")})
        took = time.monotonic() - started
        assert card.status_code == 200
        assert answer.status_code == 200 and answer.json()["result"]["task"]["status"]["state"], answer.text
        assert took < 5, f"a new request took {took:.1f}s behind 2,000 half-sent ones"
        still_open = wait_closed(sockets, sent + HEADER_TIMEOUT + SLACK)
        assert still_open == [], f"{len(still_open)} of 2,000 half-sent requests open after {HEADER_TIMEOUT + SLACK}s"
    finally:
        close_all(sockets)
    assert httpx.get(f"{site}/.well-known/agent-card.json", timeout=5).status_code == 200


def test_a_half_sent_request_is_answered_408_and_closed(site):
    [s] = open_half_requests(site, 1)
    try:
        started = time.monotonic()
        s.setblocking(True)
        s.settimeout(HEADER_TIMEOUT + SLACK)
        answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert s.recv(65536) == b""  # then closed
        assert HEADER_TIMEOUT - 0.5 <= time.monotonic() - started <= HEADER_TIMEOUT + SLACK
    finally:
        s.close()


def test_a_stalled_body_is_closed(site):
    headers = b"POST /a2a/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    sockets = open_half_requests(site, 5, headers + b'{"jsonrpc":')
    try:
        assert wait_closed(sockets, time.monotonic() + BODY_TIMEOUT + SLACK) == []
    finally:
        close_all(sockets)


def response_complete(data: bytes) -> bool:
    """Whether ``data`` holds one whole HTTP/1.1 response (Content-Length or chunked)."""
    head, found, body = data.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.lower().split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return body.endswith(b"0\r\n\r\n")  # chunked


def test_half_a_second_request_on_a_kept_alive_connection_is_closed(site):
    s = socket.create_connection(address(site), timeout=5)
    try:
        s.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = b""
        while not response_complete(first):
            chunk = s.recv(65536)
            assert chunk, first
            first += chunk
        assert first.startswith(b"HTTP/1.1 200 ")
        s.sendall(HALF_REQUEST)  # before the keep-alive timeout; then nothing more
        s.setblocking(False)
        assert wait_closed([s], time.monotonic() + HEADER_TIMEOUT + SLACK) == []
    finally:
        s.close()


def test_a_stream_outlives_the_read_timeouts(site):
    """A stream whose request was read is never cut by the read timeouts."""
    message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "sleep:6"}]}
    body = rpc_body("SendStreamingMessage", {"message": message})
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    started = time.monotonic()
    events = []
    with httpx.stream("POST", f"{site}/a2a/", content=orjson.dumps(body), headers=headers, timeout=20) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(orjson.loads(line[5:]))
    took = time.monotonic() - started
    assert took >= 6 > HEADER_TIMEOUT + BODY_TIMEOUT
    last = events[-1]["result"]
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events[-1]


def test_the_soft_file_limit_is_raised_to_the_hard_one(tmp_path):
    env = site_env(TASK_STORE="memory")
    with running_server(env, log=tmp_path / "server.log", nofile=(FILE_LIMIT, 4096)) as base:
        limits = Path(f"/proc/{base.pid}/limits").read_text()
    line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    assert line.split()[3:5] == ["4096", "4096"], line
