"""The task timeline (A2A 1.1 draft, spec 3.2.7 and 3.2.8) kept by every store: exact
under concurrent writers, across a restart, for a task an earlier release saved, through
export, import and ``a2a_tasks copy``; and a 1.0 client's answers are what they were."""

from __future__ import annotations

import asyncio
import uuid
from io import StringIO

import jsonschema
import orjson
import pytest
import referencing
from django.core.management import call_command
from google.protobuf import json_format

from a2a.grpc import a2a_pb2 as pb
from a2a.http import openapi
from a2a.ops import bulk
from a2a.testing.client import WireClient, rpc_body
from stores.backends import resolve_store
from stores.fields import ARTIFACT_GENERATIONS, TIMELINE
from tests.conftest import ALL_DATABASES, STORE_KINDS, make_store
from tests.test_timeline import EXPECTED, FIRST_TURN, SECOND_TURN, V11, _accounted, _steps, grpc_call, two_turns

pytestmark = ALL_DATABASES

V10 = WireClient(version="1.0")


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"


def _message(text: str, task_id: str) -> dict:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], "taskId": task_id}


def test_twenty_concurrent_follow_ups_and_cancels_leave_one_entry_per_generation(use_store):
    task_id = V11.send("ask:more?")["task"]["id"]

    async def race() -> list[dict]:
        follow_up = {"configuration": {"returnImmediately": True}}
        calls = [V11.arpc("SendMessage", {"message": _message("ask:again?", task_id), **follow_up}) for _ in range(14)]
        calls[3:3] = [V11.arpc("CancelTask", {"id": task_id}) for _ in range(3)]
        calls[10:10] = [V11.arpc("CancelTask", {"id": task_id}) for _ in range(3)]
        return list(await asyncio.gather(*calls))

    answers = asyncio.run(race())
    taken = [a for a in answers if "result" in a and "task" in a["result"]]
    canceled = [a for a in answers if "result" in a and "task" not in a["result"]]
    assert len(canceled) == 1  # the first cancel; the others find the task terminal
    task = V11.result("GetTask", {"id": task_id})
    assert task["status"]["state"] == "TASK_STATE_CANCELED"
    _accounted(task)  # no artifact here: the entries are 1, 2, ... the task's generation
    steps = _steps(task)
    messages = [g for g, kind, _ in steps if kind == "message"]
    # each follow-up taken: its message, then the task resubmitted (the answer's generation)
    assert messages[1:] == sorted(int(a["result"]["task"]["generation"]) - 1 for a in taken) and taken
    assert [k for _, k, _ in steps].count("TASK_STATE_CANCELED") == 1
    assert use_store.get(task_id)["_seq"] == int(task["generation"])  # one counter with the streams'


@pytest.mark.parametrize("store_kind", [k for k in STORE_KINDS if k != "memory"])
def test_a_restart_between_turns_keeps_the_timeline(store_kind, tmp_path, settings):
    settings.TASK_STORE = make_store(store_kind, tmp_path)
    first = V11.send(FIRST_TURN)["task"]
    settings.TASK_STORE = make_store(store_kind, tmp_path)  # another process, over the same data
    assert _steps(V11.result("GetTask", {"id": first["id"]})) == _steps(first)
    V11.send(SECOND_TURN, task_id=first["id"])
    assert _steps(V11.result("GetTask", {"id": first["id"]})) == EXPECTED


def _as_an_earlier_release_saved_it(store, task_id: str) -> dict:
    stored = store.get(task_id)
    for key in (TIMELINE, ARTIFACT_GENERATIONS):
        stored.pop(key, None)
    store.save(stored)
    return stored


def test_a_task_of_the_previous_release_reads_with_a_timeline_and_goes_on(use_store):
    task_id = V11.send("ask:more?")["task"]["id"]  # message 1, working 2, input-required 3
    _as_an_earlier_release_saved_it(use_store, task_id)
    task = V11.result("GetTask", {"id": task_id})
    assert _steps(task) == [(1, "message", "ask:more?"), (3, "TASK_STATE_INPUT_REQUIRED", "more?")]
    V11.send(SECOND_TURN, task_id=task_id)
    task = V11.result("GetTask", {"id": task_id})
    assert _steps(task) == [
        (1, "message", "ask:more?"),
        (3, "TASK_STATE_INPUT_REQUIRED", "more?"),
        (4, "message", SECOND_TURN),
        (5, "TASK_STATE_SUBMITTED", ""),
        (6, "TASK_STATE_WORKING", ""),
        (7, "TASK_STATE_WORKING", "two"),
        (9, "TASK_STATE_COMPLETED", ""),
    ]
    assert task["artifacts"][0]["startGeneration"] == "8"


def test_a_task_saved_before_generations_reads_its_latest_messages(use_store):
    task_id = V11.send("ask:more?")["task"]["id"]
    stored = _as_an_earlier_release_saved_it(use_store, task_id)
    del stored["_seq"]
    use_store.save(stored)
    task = V11.result("GetTask", {"id": task_id})
    assert task["generation"] == "1" and _steps(task) == [(1, "message", "ask:more?")]


def test_export_import_and_copy_carry_the_timeline(use_store, tmp_path):
    task_id = two_turns()
    before = V11.result("GetTask", {"id": task_id})
    [exported] = bulk.read_json_lines([bulk.to_json_line(use_store.get(task_id))])
    target = f"file:{tmp_path / 'copied'}"
    call_command("a2a_tasks", "copy", "--to", target, stdout=StringIO(), stderr=StringIO())
    copied = resolve_store(target).get(task_id)
    for kept in (exported, copied):
        assert TIMELINE in kept and ARTIFACT_GENERATIONS in kept
        use_store.save(kept)  # imported back: it reads the same (not rebuilt from its history)
        assert V11.result("GetTask", {"id": task_id}) == before


# --- what a 1.0 client sees ---------------------------------------------------------------


def test_a_v10_answer_is_what_it_was_before_the_timeline(use_store):
    task_id = two_turns()
    asked = {
        "get": lambda: V10.rpc_raw(_envelope("GetTask", {"id": task_id})).content,
        "list": lambda: V10.rpc_raw(_envelope("ListTasks", {})).content,
        "rest": lambda: V10.rest("GET", f"/tasks/{task_id}").content,
        "grpc": lambda: str(grpc_call("GetTask", pb.GetTaskRequest(id=task_id), version="1.0")).encode(),
    }
    now = {name: ask() for name, ask in asked.items()}
    _as_an_earlier_release_saved_it(use_store, task_id)  # the task as the release before kept it
    assert {name: ask() for name, ask in asked.items()} == now
    for name, body in now.items():
        assert b"timeline" not in body and b"Generation" not in body and b"generation" not in body, name
    task = V10.result("GetTask", {"id": task_id})
    assert "artifacts" in task and not list(_strict_v10("Task").iter_errors(task))
    assert json_format.ParseDict(task, pb.Task())  # and the proto reads it


def _envelope(method: str, params: dict) -> bytes:
    return orjson.dumps(rpc_body(method, params))


def _strict_v10(name: str) -> jsonschema.Draft202012Validator:
    """The v1.0 schema of ``name`` (a2a.schema.json: a Task forbids unknown properties)."""
    doc = {"components": {"schemas": openapi.spec_schemas()}}
    resource = referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012)
    registry = referencing.Registry().with_resource("urn:v10", resource)
    return jsonschema.Draft202012Validator({"$ref": f"urn:v10#/components/schemas/{name}"}, registry=registry)


def test_a_file_an_earlier_status_said_stays_referenced_while_the_timeline_shows_it(use_store):
    from a2a.core import files

    task_id = V11.send("ask:more?")["task"]["id"]
    stored = use_store.get(task_id)
    name = f"{files.prefix(task_id)}/{uuid.uuid4().hex}-chart.png"
    part = {"kind": "file", "file": {"uri": f"http://testserver/a2a/files/{task_id}/{name.rsplit('/', 1)[1]}"}}
    stored[TIMELINE][1]["status"]["message"] = {"role": "agent", "messageId": "p", "parts": [part]}
    assert name in files.referenced(stored)  # not in its history, nor its current status
