"""A context is per owner (issue 14, item 3): with authentication on, caller B who sends
caller A's ``contextId`` gets a new, empty conversation of its own in it. B's handler
never sees A's earlier tasks (nor does the model, with the LLM handler), B's
ListTasks(contextId) never lists them, and A's view of the context is unchanged: A
never sees B's tasks either. Refusing B would tell B that the contextId exists, which
is what "another caller's task answers like an unknown one" avoids for tasks.

On every store (memory, file, ORM on SQLite, ORM on PostgreSQL when configured), on
both bindings (JSON-RPC, HTTP+JSON) in both versions (v1.0, v0.3)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from a2a.handlers import HandlerRequest, InputRequired
from a2a.ops.bulk import Selection
from a2a.protocol.model import message_text
from a2a.testing import Binding
from a2a.testing.fake_model import fake_model as stub_model
from a2a.testing.fake_model import openai_reply
from stores.base import TaskQuery
from tests.conftest import STORE_KINDS, make_store
from tests.helpers import ASGI

CLASSES = ["a2a.auth.BearerTokenAuthentication", "a2a.auth.APIKeyAuthentication"]


def _store_params() -> list:
    """Each store kind, with real transactions (the token lookup runs in a worker thread)
    on the default database (the tokens) and on the one the store uses."""
    return [
        pytest.param(
            kind,
            marks=pytest.mark.django_db(
                transaction=True, databases=["default", "postgres"] if kind == "orm-postgres" else ["default"]
            ),
        )
        for kind in STORE_KINDS
    ]


@pytest.fixture(params=_store_params())
def agent(request, settings, tmp_path) -> dict[str, dict[str, str]]:
    """An agent with authentication on the store kind; two callers' credentials."""
    settings.A2A_AUTHENTICATION_CLASSES = CLASSES
    settings.TASK_STORE = make_store(request.param, tmp_path)
    settings.A2A_HANDLER = "tests.test_hostile_context.remembering"
    alice = Token.objects.create(user=User.objects.create_user("alice")).key
    bob = Token.objects.create(user=User.objects.create_user("bob")).key
    return {"alice": {"Authorization": f"Bearer {alice}"}, "bob": {"X-API-Key": bob}}


def remembering(request: HandlerRequest) -> str:
    """Answers ``seen: <the first message of each earlier task of the context, oldest
    first, joined by |>``: what the handler API gave it as the conversation so far.
    ``ask:...`` waits for input (a task to continue)."""
    if request.text.startswith("ask:"):
        raise InputRequired("more?")
    return "seen: " + "|".join(message_text(t["history"][0]) for t in request.context_tasks())


WIRES = [
    pytest.param(Binding(binding, version, ASGI), id=f"{binding}-{version}")
    for binding in ("jsonrpc", "rest")
    for version in ("1.0", "0.3")
]


def answer(task: dict[str, Any]) -> str:
    """The text of the task's artifact, in any dialect."""
    parts = task["artifacts"][0].get("parts") or task["artifacts"][0].get("content")
    return "".join(p["text"] for p in parts)


def ids(page: dict[str, Any]) -> list[str]:
    return [t["id"] for t in page["tasks"]]


# --- The tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_another_callers_context_is_a_new_empty_one(agent, wire):
    alice, bob = agent["alice"], agent["bob"]
    first = wire.result(wire.send("alice-1", headers=alice))
    context = first["contextId"]
    second = wire.result(wire.send("alice-2", headers=alice, context_id=context))
    assert answer(second) == "seen: alice-1"
    before = wire.result(wire.list(contextId=context, headers=alice))
    assert ids(before) == [second["id"], first["id"]]
    before_tasks = [wire.result(wire.get(i, headers=alice)) for i in ids(before)]

    # Bob sends Alice's contextId: accepted, as a conversation of his own.
    bob_1 = wire.result(wire.send("bob-1", headers=bob, context_id=context))
    assert bob_1["contextId"] == context
    assert answer(bob_1) == "seen: "  # none of Alice's messages
    bob_2 = wire.result(wire.send("bob-2", headers=bob, context_id=context))
    assert answer(bob_2) == "seen: bob-1"
    bobs = wire.result(wire.list(contextId=context, headers=bob))
    assert ids(bobs) == [bob_2["id"], bob_1["id"]]
    assert bobs["totalSize"] == 2

    # Alice's view is unchanged, and her conversation goes on without Bob's messages.
    after = wire.result(wire.list(contextId=context, headers=alice))
    assert ids(after) == ids(before) and after["totalSize"] == 2
    assert [wire.result(wire.get(i, headers=alice)) for i in ids(after)] == before_tasks
    third = wire.result(wire.send("alice-3", headers=alice, context_id=context))
    assert answer(third) == "seen: alice-1|alice-2"


@pytest.mark.parametrize("wire", WIRES)
def test_continuing_a_task_with_another_callers_context(agent, wire):
    alice, bob = agent["alice"], agent["bob"]
    alices = wire.result(wire.send("ask:alice", headers=alice))
    bobs = wire.result(wire.send("ask:bob", headers=bob))
    alice_task = wire.result(wire.get(alices["id"], headers=alice))

    # Bob's own task with Alice's contextId: the same answer as with a contextId nobody
    # ever used (it does not match his task's), so it tells nothing about Alice's.
    with_alices = wire.error(wire.send("x", headers=bob, task_id=bobs["id"], context_id=alices["contextId"]))
    with_unknown = wire.error(wire.send("x", headers=bob, task_id=bobs["id"], context_id=str(uuid.uuid4())))
    assert with_alices == with_unknown
    assert "does not match the task's contextId" in json.dumps(with_alices.body)

    # Alice's task, with or without her contextId: exactly like an unknown task.
    unknown = str(uuid.uuid4())
    not_found = wire.error(wire.send("x", headers=bob, task_id=unknown))
    for extra in ({"context_id": alices["contextId"]}, {"context_id": bobs["contextId"]}, {}):
        error = wire.error(wire.send("x", headers=bob, task_id=alices["id"], **extra))
        assert error.status == not_found.status
        assert json.dumps(error.body).replace(alices["id"], unknown) == json.dumps(not_found.body)
    assert wire.result(wire.get(alices["id"], headers=alice)) == alice_task  # untouched

    # Each continues their own task; neither sees the other's.
    done = wire.result(wire.send("bob-answer", headers=bob, task_id=bobs["id"]))
    assert answer(done) == "seen: "
    assert ids(wire.result(wire.list(contextId=alices["contextId"], headers=bob))) == []


@pytest.mark.parametrize("kind", _store_params())
def test_the_llm_handler_never_sends_another_callers_context_to_the_model(kind, settings, tmp_path):
    settings.A2A_AUTHENTICATION_CLASSES = CLASSES
    settings.TASK_STORE = make_store(kind, tmp_path)
    alice = {"Authorization": "Bearer " + Token.objects.create(user=User.objects.create_user("alice")).key}
    bob = {"X-API-Key": Token.objects.create(user=User.objects.create_user("bob")).key}
    wire = Binding("jsonrpc", "1.0", ASGI)
    with stub_model() as model:
        settings.A2A_HANDLER = "a2a.handlers.llm.handle"
        settings.A2A_LLM_BASE_URL = model.url
        settings.A2A_LLM_MODEL = "mock-model"
        model.queue(openai_reply("Hello Ada."), openai_reply("I do not know your name."), openai_reply("You are Ada."))
        first = wire.result(wire.send("My name is Ada, my PIN is 4321.", headers=alice))
        context = first["contextId"]
        bob_task = wire.result(wire.send("What is my name and PIN?", headers=bob, context_id=context))
        assert model.requests[1].body["messages"][1:] == [{"role": "user", "content": "What is my name and PIN?"}]
        assert answer(bob_task) == "I do not know your name."
        wire.result(wire.send("What is my name?", headers=alice, context_id=context))
        assert model.requests[2].body["messages"][1:] == [
            {"role": "user", "content": "My name is Ada, my PIN is 4321."},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": "What is my name?"},
        ]


@pytest.mark.parametrize("kind", _store_params())
def test_a_context_query_names_its_owner_and_staff_see_all(kind, tmp_path):
    store = make_store(kind, tmp_path)
    for task_id, owner in (("a1", "alice"), ("b1", "bob"), ("n1", "")):
        store.save({"id": task_id, "contextId": "shared", "status": {"state": "completed"}, "_owner": owner})
    store.save({"id": "a2", "contextId": "other", "status": {"state": "completed"}, "_owner": "alice"})
    with pytest.raises(ValueError, match="needs the owner"):
        TaskQuery(context_id="shared")  # an owner forgotten: refused, never "everyone's"
    with pytest.raises(ValueError, match="not both"):
        TaskQuery(context_id="shared", owner="bob", all_owners=True)
    for owner, expected in (("alice", ["a1"]), ("bob", ["b1"]), ("", ["n1"]), ("carol", [])):
        page = store.list(TaskQuery(context_id="shared", owner=owner))
        assert [t["id"] for t in page.tasks] == expected and page.total_size == len(expected), owner
    everyone = store.list(TaskQuery(context_id="shared", all_owners=True))
    assert sorted(t["id"] for t in everyone.tasks) == ["a1", "b1", "n1"]
    # The staff tools (manage.py a2a_tasks, the admin's maintenance) see every owner's.
    assert sorted(t["id"] for t in Selection(context_id="shared").select(store)) == ["a1", "b1", "n1"]
    assert Selection(context_id="shared").estimate(store) == 3
