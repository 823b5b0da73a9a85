"""The project's client and the task timeline (A2A 1.1 draft, spec 3.2.8): it keeps a 1.1
agent's timeline in generation order, skips an entry kind it does not know, and
:func:`a2a.client.interaction` reads a task's interaction in the order it happened."""

from __future__ import annotations

import pytest

from a2a.client import Client, interaction
from a2a.client.inprocess import ASGIAppTransport
from a2a.client.wire import parse_task
from a2a.protocol import V11
from stores.fields import TIMELINE
from tests.helpers import asgi_app
from tests.test_timeline import FIRST_TURN, SECOND_TURN

BASE = "http://testserver"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"


@pytest.fixture
def in_process():
    transport = ASGIAppTransport(asgi_app())
    yield transport
    transport.close()


def _read(task: dict) -> list[tuple[str, str]]:
    read = []
    for kind, value in interaction(task):
        message = value if kind == "message" else value.get("message") if kind == "status" else value
        text = "".join(p.get("text", "") for p in (message or {}).get("parts") or ())
        read.append((value["state"] if kind == "status" else kind, text))
    return read


def test_a_1_1_agent_s_task_reads_in_the_order_it_happened(in_process):
    with Client(BASE, transport=in_process) as c:
        first = c.send(FIRST_TURN)
        c.send(SECOND_TURN, task_id=first["id"])
        task = c.get_task(first["id"])
    assert c.interface.version == "1.1"
    assert [e["g"] for e in task[TIMELINE]] == [1, 2, 3, 6, 7, 8, 9, 10, 12]
    assert _read(task) == [
        ("message", FIRST_TURN),
        ("working", ""),
        ("working", "one"),
        ("artifact", "aabb"),  # the streamed artifact, where it began
        ("input-required", "more?"),
        ("message", SECOND_TURN),
        ("submitted", ""),
        ("working", ""),
        ("working", "two"),
        ("artifact", "done: progress:two"),
        ("completed", ""),
    ]


def test_a_1_0_agent_s_task_reads_as_history_status_and_artifacts(in_process):
    with Client(BASE, transport=in_process, version="1.0") as c:
        first = c.send(FIRST_TURN)
        c.send(SECOND_TURN, task_id=first["id"])
        task = c.get_task(first["id"])
    assert TIMELINE not in task
    read = _read(task)
    assert read[0] == ("message", FIRST_TURN) and read[-3:] == [
        ("completed", ""),
        ("artifact", "aabb"),
        ("artifact", "done: progress:two"),
    ]


def test_an_unknown_entry_kind_is_skipped_and_entries_are_ordered():
    raw = {
        "id": "t",
        "status": {"state": "TASK_STATE_WORKING"},
        "generation": "5",
        "timeline": [
            {"status": {"state": "TASK_STATE_WORKING"}, "generation": "5"},
            {"elicitation": {"question": "?"}, "generation": "3"},  # a later minor version's kind
            {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}, "generation": "1"},
        ],
    }
    task = parse_task(V11, raw)
    assert [(e["g"], "message" in e) for e in task[TIMELINE]] == [(1, True), (5, False)]
