"""A first message that names no ``contextId`` gets a context the server makes for it, in
which nothing came before it: its handler's ``context_tasks()`` reads nothing from the
store (no list per task for a conversation that cannot exist). A message that names a
context, a new one of the client's making too, and every later turn of a task, read it."""

from __future__ import annotations

from typing import Any

import pytest

from a2a.handlers import HandlerRequest, InputRequired
from stores.memory import MemoryTaskStore
from tests.helpers import send_wire

SEEN: list[dict[str, Any]] = []


async def remembering(request: HandlerRequest) -> str:
    """Keeps what it was told of the context; ``ask`` waits for input."""
    earlier = await request.acontext_tasks()
    SEEN.append({"new_context": request.new_context, "earlier": len(earlier), "turn": request.turn})
    if request.text == "ask":
        raise InputRequired("more?")
    return "ok"


@pytest.fixture
def lists(settings, monkeypatch) -> list[Any]:
    """The store's list calls, on the agent served with :func:`remembering`."""
    store = MemoryTaskStore()
    settings.TASK_STORE = store
    settings.A2A_HANDLER = f"{__name__}.remembering"
    SEEN.clear()
    calls: list[Any] = []
    listing = store.alist

    async def counted(query: Any = None) -> Any:
        calls.append(query)
        return await listing(query)

    monkeypatch.setattr(store, "alist", counted)
    return calls


def test_a_task_in_a_context_the_server_made_reads_no_earlier_tasks(lists):
    send_wire("hello")
    assert SEEN == [{"new_context": True, "earlier": 0, "turn": 1}]
    assert lists == []


def test_a_context_the_client_names_is_read_new_or_not(lists):
    first = send_wire("hello", context_id="a-context-of-the-client-s-own")
    send_wire("again", context_id=first["contextId"])
    assert [(s["new_context"], s["earlier"]) for s in SEEN] == [(False, 0), (False, 1)]
    assert len(lists) == 2


def test_the_next_turn_of_a_task_in_a_new_context_reads_it(lists):
    asked = send_wire("ask")
    send_wire("go on", task_id=asked["id"], context_id=asked["contextId"])
    assert [(s["turn"], s["new_context"]) for s in SEEN] == [(1, True), (2, False)]
    assert len(lists) == 1
