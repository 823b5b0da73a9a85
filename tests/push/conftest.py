"""The push tests' fixtures: the receiver, the push settings and a resolver without the network
(autouse), the memory store, a watch on the push log."""

from __future__ import annotations

import logging
import socket

import pytest

from a2a import push
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.push.support import Receiver, Seen


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _push_settings(settings):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True  # the receiver is on loopback
    settings.A2A_PUSH_RETRY_DELAY = 0.01
    settings.A2A_PUSH_TIMEOUT = 5.0
    yield
    push.shutdown(grace=0)


@pytest.fixture(autouse=True)
def dns(monkeypatch) -> dict[str, list[str]]:
    """Names the webhook resolver answers without the network: every ``*.example.com``
    is a public address; tests add names (and change answers) in the returned dict."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        addresses = answers.get(host) or (["93.184.216.34"] if host.endswith(".example.com") else None)
        if addresses is None:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in addresses]

    monkeypatch.setattr("a2a.push.guard.socket.getaddrinfo", getaddrinfo)
    return answers


@pytest.fixture
def memory(settings):
    settings.TASK_STORE = MemoryTaskStore()
    return get_task_store()


@pytest.fixture
def push_log():
    handlers: list[Seen] = []

    def watch(text: str) -> Seen:
        handler = Seen(text)
        logging.getLogger("a2a.push").addHandler(handler)
        handlers.append(handler)
        return handler

    yield watch
    for handler in handlers:
        logging.getLogger("a2a.push").removeHandler(handler)
