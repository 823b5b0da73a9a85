"""The webhook SSRF guard, attacked: IPv6 addresses that carry a private IPv4 address
(6to4, NAT64, Teredo, ISATAP, IPv4-mapped/-translated/-compatible), and DNS rebinding
between the check and the connection.

Nothing here reaches the network: the ``no_outside`` fixture makes every socket
``connect`` to a non-loopback address fail (and records it), and names resolve through a
patched resolver. Public addresses appear only in parsing checks or as the target of
such a blocked connect.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator

import pytest

from a2a import push
from a2a.push import guard
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.push.support import PUSH_METHODS, V03, V10, a_task, fails, message, ok

PUBLIC = "93.184.216.34"  # a public address (as in tests/push/); never connected to

# IPv6 forms of private IPv4 addresses (and the private IPv4 address each carries).
EMBEDDED_PRIVATE = [
    ("2002:a9fe:a9fe::", "6to4", "169.254.169.254"),
    ("2002:7f00:1::", "6to4", "127.0.0.1"),
    ("2002:a00:1:1::1", "6to4", "10.0.0.1"),
    ("64:ff9b::7f00:1", "NAT64", "127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "NAT64", "169.254.169.254"),
    ("64:ff9b::c0a8:101", "NAT64", "192.168.1.1"),
    ("64:ff9b:1::5db8:d822", "local-use NAT64", None),  # RFC 8215: a private translator, whatever it carries
    ("64:ff9b:1:7f:0:100::", "local-use NAT64", None),  # 127.0.0.1 at the /48 position of RFC 6052
    # Teredo: server 65.54.227.120 (public) and client 127.0.0.1 (last 32 bits XOR 0xffffffff)
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo client", "127.0.0.1"),
    # Teredo: server 10.0.0.1 (bits 32-63), client 8.8.8.8
    ("2001:0:a00:1:8000:63bf:f7f7:f7f7", "Teredo server", "10.0.0.1"),
    ("::ffff:127.0.0.1", "IPv4-mapped", "127.0.0.1"),
    ("::ffff:169.254.169.254", "IPv4-mapped", "169.254.169.254"),
    ("::ffff:0:7f00:1", "IPv4-translated", "127.0.0.1"),
    ("::7f00:1", "IPv4-compatible", "127.0.0.1"),
    ("::a9fe:a9fe", "IPv4-compatible", "169.254.169.254"),
    ("2606:4700::5efe:7f00:1", "ISATAP", "127.0.0.1"),
    ("2606:4700::200:5efe:a9fe:a9fe", "ISATAP", "169.254.169.254"),
]

# Public: the guard must let them through (parsing checks only; never connected to).
PUBLIC_ADDRESSES = [
    PUBLIC,
    "2606:4700:4700::1111",  # native IPv6
    "2002:5db8:d822::1",  # 6to4 of 93.184.216.34
    "64:ff9b::5db8:d822",  # NAT64 (well-known prefix) of 93.184.216.34
    "::ffff:93.184.216.34",  # IPv4-mapped
    "2606:4700::5efe:5db8:d822",  # ISATAP id carrying a public address
]


@pytest.fixture(autouse=True)
def no_outside(monkeypatch) -> list[object]:
    """Every socket connect to a non-loopback address fails at once (ECONNREFUSED) and
    is recorded: nothing these tests do can reach another host."""
    blocked: list[object] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def outside(address: object) -> bool:
        if not isinstance(address, tuple):
            return False  # a Unix socket
        try:
            return not ipaddress.ip_address(str(address[0]).split("%")[0]).is_loopback
        except ValueError:
            return True  # a name: the caller resolves it

    def connect(self, address):
        if outside(address):
            blocked.append(address)
            raise ConnectionRefusedError(111, "blocked by the test: not a loopback address")
        return real_connect(self, address)

    def connect_ex(self, address):
        if outside(address):
            blocked.append(address)
            return 111
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return blocked


@pytest.fixture(autouse=True)
def _guarded(settings) -> Iterator[None]:
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    settings.A2A_PUSH_RETRY_DELAY = 0.01
    settings.A2A_PUSH_MAX_ATTEMPTS = 3
    settings.A2A_PUSH_TIMEOUT = 5.0
    settings.TASK_STORE = MemoryTaskStore()
    yield
    push.shutdown(grace=0)


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.05)
        self.accepted: list[tuple[str, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(peer)
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.close()


@pytest.fixture
def rebinding(monkeypatch) -> list[str]:
    """``rebind.test`` resolves to a public address the first time, to 127.0.0.1 every
    time after; returns the answers given, in order."""
    given: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in ("rebind.test", b"rebind.test"):  # (anyio asks with bytes)
            return real(host, port, *args, **kwargs)
        address = PUBLIC if not given else "127.0.0.1"
        given.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return given


def create_v10(url: str) -> tuple[str, dict]:
    task_id = a_task(get_task_store())
    return task_id, {"taskId": task_id, "url": url}


# === embedded addresses ================================================================================


@pytest.mark.parametrize(("address", "form", "carried"), EMBEDDED_PRIVATE)
def test_an_embedded_private_address_is_not_public(address, form, carried):
    reason = guard._refusal(ipaddress.ip_address(address))
    assert reason is not None
    assert form in reason
    if carried:
        assert carried in reason


@pytest.mark.parametrize("version", [V10, V03])
@pytest.mark.parametrize(("address", "form", "carried"), EMBEDDED_PRIVATE)
def test_a_webhook_on_an_embedded_private_address_is_refused(address, form, carried, version, listener):
    url = f"http://[{address}]:{listener.port}/hook"
    task_id = a_task(get_task_store())
    if version == V10:
        error = fails(PUSH_METHODS[V10][0], {"taskId": task_id, "url": url}, -32602, version=V10)
    else:
        params = {"taskId": task_id, "pushNotificationConfig": {"url": url}}
        error = fails(PUSH_METHODS[V03][0], params, -32602)
    assert url in error["message"] and form in error["message"]
    assert get_task_store().push_configs.list_push_configs(task_id) == []


@pytest.mark.parametrize("address", ["2002:7f00:1::", "64:ff9b::a9fe:a9fe"])
def test_a_send_with_an_embedded_private_webhook_creates_nothing(address):
    params = {"message": message(V10), "configuration": {"taskPushNotificationConfig": {"url": f"http://[{address}]/"}}}
    fails("SendMessage", params, -32602, version=V10)
    assert len(get_task_store()) == 0


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_public_addresses_still_pass(address, no_outside):
    assert guard._refusal(ipaddress.ip_address(address)) is None
    host = f"[{address}]" if ":" in address else address
    task_id = a_task(get_task_store())
    made = ok(PUSH_METHODS[V10][0], {"taskId": task_id, "url": f"https://{host}/hook"}, version=V10)
    assert made["url"] == f"https://{host}/hook"
    assert no_outside == []  # checked, not called (nothing happened to the task)


# === DNS rebinding ======================================================================================


def test_rebinding_between_the_config_and_the_delivery_reaches_nothing(listener, rebinding, no_outside):
    """The name is not looked up when the config is made (no DNS needed then); public
    at the delivery's first lookup, 127.0.0.1 at its retry: loopback is never reached."""
    task_id = a_task(get_task_store())
    ok(PUSH_METHODS[V10][0], {"taskId": task_id, "url": f"http://rebind.test:{listener.port}/hook"}, version=V10)
    assert rebinding == []  # creating the config resolved nothing
    ok("CancelTask", {"id": task_id}, version=V10)
    assert push.wait_idle()
    assert rebinding[0] == PUBLIC and set(rebinding[1:]) == {"127.0.0.1"}  # each attempt looked the name up
    assert listener.accepted == []
    assert {a[0] for a in no_outside} <= {PUBLIC}  # the checked public address only (blocked here)


def test_rebinding_between_the_check_and_the_connection_reaches_nothing(listener, rebinding, no_outside):
    """The delivery's own lookup says public, a second lookup would say 127.0.0.1: the
    connection goes to the checked address (pinned), never to a fresh lookup's answer."""
    task_id = a_task(get_task_store())
    url = f"http://rebind.test:{listener.port}/hook"
    # Stored straight (no check at creation), so the delivery's lookup is the first one.
    get_task_store().push_configs.save_push_config({"taskId": task_id, "id": "c1", "url": url, "dialect": "1.0"})
    ok("CancelTask", {"id": task_id}, version=V10)
    assert push.wait_idle()
    assert rebinding[0] == PUBLIC and len(rebinding) >= 2  # checked public, then retried after the failed connect
    assert listener.accepted == [], "the delivery connected to what a second lookup answered"
    assert [a[0] for a in no_outside] == [PUBLIC]  # the one connect went to the checked address (blocked here)


def test_one_lookup_with_a_public_and_a_loopback_address_is_refused(listener, monkeypatch, no_outside):
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in ("both.test", b"both.test"):
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in (PUBLIC, "127.0.0.1")]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    task_id = a_task(get_task_store())
    # A name is only resolved when delivering: the config is made, the delivery refused.
    ok(PUSH_METHODS[V10][0], {"taskId": task_id, "url": f"http://both.test:{listener.port}/"}, version=V10)
    ok("CancelTask", {"id": task_id}, version=V10)
    assert push.wait_idle()
    assert listener.accepted == [] and no_outside == []
