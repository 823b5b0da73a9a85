"""The JSON-RPC tests' fixtures: every dialect, a fresh memory store with the echo handler for
every test, the slow handler."""

from __future__ import annotations

import pytest

from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import wait_until
from tests.jsonrpc.support import (
    DIALECTS,
    Dialect,
    handler_cancelled,
    handler_finished,
    handler_path,
    handler_release,
    handler_started,
    runner_idle,
    slow_handler,
)


@pytest.fixture(params=DIALECTS)
def dialect(request) -> Dialect:
    return request.param


@pytest.fixture(autouse=True)
def store(settings) -> MemoryTaskStore:
    """A fresh memory store and the echo handler for every test."""
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "a2a.handlers.echo"
    store = get_task_store()
    assert isinstance(store, MemoryTaskStore)
    return store


@pytest.fixture
def slow(settings):
    """Use the slow sync handler; release whatever is still running at the end."""
    wait_until(runner_idle, timeout=10, what="the runner to be idle")
    for s in (handler_started, handler_finished, handler_cancelled):
        s.clear()
    handler_release.clear()
    settings.A2A_HANDLER = handler_path(slow_handler)
    yield
    handler_release.set()
    wait_until(runner_idle, timeout=10, what="the runner to be idle")
