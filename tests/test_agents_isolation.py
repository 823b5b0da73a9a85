"""Tasks kept apart (a2a.agents): a task belongs to the agent that created it, on every
store; every operation another agent's routes (or gRPC's ``a2a-agent``) make on it answers
exactly as for an unknown task, on every binding and version. The matrix is written to
/tmp/a2a-agents-isolation.txt for the closing note."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from a2a.testing.client import message
from stores.base import TaskQuery
from stores.scope import AGENT_SEPARATOR, scope_key, task_scope
from tests.agents_support import AGENTS, BINDINGS, OPERATIONS, client, grpc_calls, is_not_found, probe
from tests.conftest import ALL_DATABASES, STORE_KINDS

MATRIX = Path("/tmp/a2a-agents-isolation.txt")
_rows: list[str] = []


@pytest.fixture(autouse=True)
def _agents(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_AGENTS = AGENTS
    settings.A2A_PUSH_NOTIFICATIONS = True
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True  # configs on a loopback URL (never delivered to)


def _answers(asker: str, binding: str, version: str, task_id: str) -> list[tuple[object, object]]:
    """(the answer about ``task_id``, the answer about a random id) for every operation."""
    unknown = str(uuid.uuid4())
    if binding == "grpc":  # one server for the whole row
        calls = [(op, tid) for op in OPERATIONS for tid in (task_id, unknown)]
        flat = grpc_calls(asker, calls)
        return list(zip(flat[0::2], flat[1::2], strict=True))
    return [
        (probe(asker, binding, version, op, task_id), probe(asker, binding, version, op, unknown)) for op in OPERATIONS
    ]


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
@pytest.mark.parametrize(("owner", "asker"), [("default", "billing"), ("billing", "default")])
def test_another_agents_task_answers_as_unknown(use_store, store_kind, owner, asker):
    task = client(owner).send("ask:more?")["task"]
    task_id = task["id"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
    stored = use_store.get(task_id)
    assert stored.get("_agent") == (None if owner == "default" else owner)
    for binding, version in BINDINGS:
        for operation, (answer, unknown) in zip(OPERATIONS, _answers(asker, binding, version, task_id), strict=True):
            assert is_not_found(answer), (binding, version, operation, answer)
            assert answer == unknown, (binding, version, operation, answer, unknown)
            shown = "not listed" if answer[0] == "listed" else " ".join(str(part) for part in answer[1:])
            _rows.append(
                f"| {store_kind:<12} | {owner:<7} | {asker:<7} | {binding:<7} | {version} | {operation:<26} "
                f"| {shown[:58]:<58} | {'yes' if answer == unknown else 'NO'} |"
            )
    # Nothing the other agent asked changed the task; its own agent sees it and can go on.
    assert use_store.get(task_id)["status"]["state"] == "input-required"
    assert client(owner).rpc("GetTask", {"id": task_id})["result"]["id"] == task_id
    listed = client(owner).rpc("ListTasks", {})["result"]["tasks"]
    assert [t["id"] for t in listed] == [task_id]
    answered = client(owner).rpc("SendMessage", {"message": message("ok", taskId=task_id)})
    assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answered
    _write_matrix()


def _write_matrix() -> None:
    header = (
        "| store        | created | asked   | binding | ver | operation                  "
        "| answer (as for a random id)                                | same |"
    )
    rule = "|" + "|".join("-" * (len(cell)) for cell in header.split("|")[1:-1]) + "|"
    MATRIX.write_text("\n".join([header, rule, *_rows]) + "\n")


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_the_same_context_on_two_agents_is_two_conversations(use_store):
    context = str(uuid.uuid4())
    ids = {agent: client(agent).send("hi", context_id=context)["task"]["id"] for agent in ("default", "billing")}
    for agent, task_id in ids.items():
        listed = client(agent).rpc("ListTasks", {"contextId": context})["result"]["tasks"]
        assert [t["id"] for t in listed] == [task_id], agent
    page = use_store.list(TaskQuery(context_id=context, owner=scope_key("", "", "billing")))
    assert [t["id"] for t in page.tasks] == [ids["billing"]]
    assert len(use_store.list(TaskQuery(context_id=context, all_owners=True)).tasks) == 2


def test_the_default_agents_scope_key_is_unchanged():
    """Tasks stored before agents existed keep their key: the default agent adds nothing."""
    assert scope_key("acme", "alice", "") == scope_key("acme", "alice") == "acme\x1falice"
    assert task_scope({"id": "t", "_owner": "alice"}) == "alice"
    assert task_scope({"id": "t", "_owner": "alice", "_agent": "billing"}) == f"billing{AGENT_SEPARATOR}alice"
    assert scope_key("acme", "alice", "billing") == f"billing{AGENT_SEPARATOR}acme\x1falice"
