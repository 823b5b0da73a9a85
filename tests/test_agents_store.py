"""An agent's own task store (``A2A_AGENTS[name]["TASK_STORE"]``): every operation on an
agent with its own store lands there (read back from the stores themselves), the queue's
job and the lease reaper find the task there, another agent never sees it, even by id,
and ``manage.py check`` names the agent whose store cannot be used."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import uuid

import pytest
from django.core.checks import Warning
from django.core.management import CommandError, call_command
from django.test import override_settings

from a2a import push
from a2a.agents import get_agent, store_of, task_stores_in_use
from a2a.core import leases, lifecycle
from a2a.core.events import bus
from a2a.ops.checks import agent_stores, check_agents
from a2a.protocol.model import GetParams, SendParams, new_task, set_status
from a2a.push import delivery
from a2a.runtime import reaper
from a2a.runtime.runner import get_runner
from a2a.service.context import CallContext
from a2a.service.operations import send_message, subscribe_to_task
from a2a.testing.client import message
from stores.backends import get_task_store
from stores.base import TaskQuery
from stores.memory import MemoryTaskStore
from stores.timestamps import format_timestamp
from tests.agents_support import BILLING, BINDINGS, HOOK, OPERATIONS, PREFIX, client, grpc_calls, is_not_found, probe
from tests.helpers import wait_for_state
from tests.test_executor import queue, run_jobs  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)

#: Two agents with stores of their own: billing's a directory, ledger's the ORM's.
OWN = ("billing", "ledger")


@pytest.fixture(autouse=True)
def _agents(settings, tmp_path, monkeypatch):
    monkeypatch.setitem(PREFIX, "ledger", "/agents/ledger")
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_AGENTS = {
        "billing": {**BILLING, "TASK_STORE": f"file:{tmp_path / 'billing'}"},
        "ledger": {"HANDLER": "tests.handlers.scripted", "TASK_STORE": {"BACKEND": "orm"}},
    }
    settings.A2A_PUSH_NOTIFICATIONS = True
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True


def stores() -> dict[str, object]:
    return {"default": get_task_store(), **{name: get_agent(name).store for name in OWN}}


def start(agent: str, text: str = "hi") -> dict:
    """A non-blocking v1.0 SendMessage to ``agent``: its task as submitted."""
    answer = client(agent).rpc("SendMessage", {"message": message(text), "configuration": {"returnImmediately": True}})
    return answer["result"]["task"]


def only_in(agent: str, task_id: str) -> dict:
    """The task as ``agent``'s store holds it, after checking no other store has it."""
    found = {name: store.get(task_id) for name, store in stores().items()}
    assert [name for name, task in found.items() if task is not None] == [agent], found
    return found[agent]


def test_each_agent_gets_its_own_store_built_once(settings, tmp_path):
    billing, ledger, project = get_agent("billing").store, get_agent("ledger").store, get_task_store()
    assert type(billing).__name__ == "FileTaskStore" and type(ledger).__name__ == "OrmTaskStore"
    assert billing is get_agent("billing").store and ledger is store_of("ledger")
    assert task_stores_in_use() == [project, billing, ledger]
    assert store_of("") is store_of("default") is store_of(None) is project
    # The same store named twice (in any form) is one store; the project's own spec is the project's.
    settings.TASK_STORE = "memory"
    settings.A2A_AGENTS = {
        "a": {"TASK_STORE": f"file:{tmp_path / 'shared'}"},
        "b": {"TASK_STORE": {"BACKEND": "stores.file.FileTaskStore", "OPTIONS": {"directory": tmp_path / "shared"}}},
        "c": {"TASK_STORE": "memory"},
        "d": {},
    }
    assert get_agent("a").store is get_agent("b").store is not billing
    assert get_agent("c").store is get_agent("d").store is get_task_store()
    assert len(task_stores_in_use()) == 2


def test_every_operation_on_each_agent_lands_in_its_own_store():
    for agent in OWN:
        done = client(agent).rpc("SendMessage", {"message": message("hi")})["result"]["task"]  # blocking
        assert only_in(agent, done["id"])["status"]["state"] == "completed"
        assert only_in(agent, start(agent)["id"])["_agent"] == agent
        asked = client(agent).send("ask:more?")["task"]  # input-required
        task_id = asked["id"]
        assert client(agent).rpc("GetTask", {"id": task_id})["result"]["id"] == task_id
        listed = {t["id"] for t in client(agent).rpc("ListTasks", {})["result"]["tasks"]}
        assert {done["id"], task_id} <= listed
        assert grpc_calls(agent, [("SubscribeToTask", task_id)]) == [("ok",)]
        created = client(agent).rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "id": "c1", "url": HOOK})
        assert created["result"]["id"] == "c1", created
        assert [c["id"] for c in stores()[agent].push_configs.list_push_configs(task_id)] == ["c1"]
        assert get_task_store().push_configs.list_push_configs(task_id) == []
        for operation in ("GetPushConfig", "ListPushConfigs"):
            assert probe(agent, "jsonrpc", "1.0", operation, task_id) == ("ok",), operation
        answered = client(agent).rpc("SendMessage", {"message": message("ok", taskId=task_id)})
        assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answered
        assert only_in(agent, task_id)["status"]["state"] == "completed"
        assert probe(agent, "rest", "1.0", "DeletePushConfig", task_id) == ("ok",)
        assert stores()[agent].push_configs.list_push_configs(task_id) == []
        running = start(agent, "sleep:5")
        canceled = client(agent).rpc("CancelTask", {"id": running["id"]})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED", canceled
        assert only_in(agent, running["id"])["status"]["state"] == "canceled"


def test_push_delivery_reads_the_configs_beside_the_task(monkeypatch):
    heard = []
    monkeypatch.setattr(delivery._delivery, "notify", lambda task, configs: heard.append((task["id"], configs)))
    task_id = client("billing").send("ask:more?")["task"]["id"]
    client("billing").rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "id": "c1", "url": HOOK})
    client("billing").rpc("SendMessage", {"message": message("ok", taskId=task_id)})
    assert heard and {configs for tid, configs in heard if tid == task_id} == {get_agent("billing").store.push_configs}


def test_the_queue_job_names_the_agent_and_the_worker_reads_its_store(queue):  # noqa: F811
    default_task = start("default")["id"]
    ids = {agent: start(agent)["id"] for agent in OWN}
    # The default agent's job keeps its one argument; another agent's names it.
    assert sorted(r.args for r in queue.results) == sorted([[default_task], *([ids[a], a] for a in OWN)])
    run_jobs(queue)
    for agent, task_id in ids.items():
        assert _settled(agent, task_id)["status"]["state"] == "completed"
    assert _settled("default", default_task)["status"]["state"] == "completed"


def _settled(agent: str, task_id: str) -> dict:
    """The task once settled in ``agent``'s store (and in no other)."""
    wait_for_state(stores()[agent], task_id, {"completed", "failed", "canceled"})
    return only_in(agent, task_id)


def _lost(store, agent: str, state: str) -> str:
    """A task of ``agent`` in ``store`` whose lease holder died (it expired a second ago)."""
    task = new_task(message("hi", "0.3"), context_id=str(uuid.uuid4()))
    task["_agent"] = agent
    lifecycle.create_sync(store, task)

    def died(t):
        t["_lease"] = {
            "owner": "gone:1:dead",
            "expires": format_timestamp(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)),
            "runs": 1,
        }
        return set_status(t, state) if state != "submitted" else t

    lifecycle.transition_sync(store, task["id"], died, publish=False)
    return task["id"]


class _Runner:
    """A runner that holds no task and records what it is handed."""

    def __init__(self) -> None:
        self.submitted: list[tuple[str, str]] = []

    def task_ids(self) -> set[str]:
        return set()

    def cancel(self, task_id: str) -> None:
        pass

    def agent_name(self, task_id: str) -> str:
        return ""

    def submit(self, task_id: str, agent: str = "") -> None:
        self.submitted.append((task_id, agent))


def test_the_reaper_scans_every_agents_store():
    working = {agent: _lost(get_agent(agent).store, agent, "working") for agent in OWN}
    waiting = {agent: _lost(get_agent(agent).store, agent, "submitted") for agent in OWN}
    runner = _Runner()

    async def one_check() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reaper.maintain(runner), 1.0)  # it reaps at once, then waits

    asyncio.run(one_check())
    for agent in OWN:
        failed = only_in(agent, working[agent])
        assert failed["status"]["state"] == "failed" and "_lease" not in failed
        assert only_in(agent, waiting[agent])["status"]["state"] == "submitted"
    assert sorted(runner.submitted) == sorted((waiting[agent], agent) for agent in OWN)  # re-run, naming the agent


def test_a_requeued_task_runs_from_its_agents_store(queue):  # noqa: F811
    task_id = _lost(get_agent("billing").store, "billing", "submitted")
    reaped = reaper.reap(get_agent("billing").store, runner=get_runner())
    assert [(r.task_id, r.outcome) for r in reaped] == [(task_id, "requeued")]
    assert [r.args for r in queue.results] == [[task_id, "billing"]]
    run_jobs(queue)
    done = _settled("billing", task_id)
    assert done["status"]["state"] == "completed" and done["artifacts"][0]["parts"][0]["text"] == "billing: DONE: HI"


def test_the_heartbeat_renews_a_lease_in_its_agents_store():
    store = get_agent("ledger").store
    task = new_task(message("hi", "0.3"), context_id=str(uuid.uuid4()))
    task["_agent"] = "ledger"
    store.save(task)
    soon = format_timestamp(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1))

    def ours(t):
        leases.start(t)
        t["_lease"]["expires"] = soon
        return set_status(t, "working")

    lifecycle.transition_sync(store, task["id"], ours, publish=False)
    runner = _Runner()
    runner.task_ids = lambda: {task["id"]}  # type: ignore[method-assign]
    runner.agent_name = lambda task_id: "ledger"  # type: ignore[method-assign]
    asyncio.run(reaper.heartbeat(runner, *reaper._by_store(runner)[0]))
    assert store.get(task["id"])["_lease"]["expires"] > soon
    runner.task_ids = lambda: set()  # type: ignore[method-assign]
    lifecycle.transition_sync(store, task["id"], lambda t: set_status(t, "failed", None), publish=False)


@pytest.mark.parametrize(("owner", "asker"), [("billing", "default"), ("billing", "ledger"), ("default", "billing")])
def test_a_task_in_another_store_answers_as_unknown(owner, asker):
    task_id = client(owner).send("ask:more?")["task"]["id"]
    for binding, version in BINDINGS:
        for operation in OPERATIONS:
            answer = probe(asker, binding, version, operation, task_id)
            unknown = probe(asker, binding, version, operation, str(uuid.uuid4()))
            assert is_not_found(answer) and answer == unknown, (binding, version, operation, answer, unknown)
    assert only_in(owner, task_id)["status"]["state"] == "input-required"  # untouched


class CheckedStore(MemoryTaskStore):
    """A store whose own check always has something to say."""

    def check(self, **kwargs):
        return [Warning(f"checked with {sorted(kwargs)}", id="tests.W001")]


def test_the_check_names_the_agent_whose_store_cannot_be_used():
    with override_settings(A2A_AGENTS={"billing": {"TASK_STORE": "tests.test_agents_store.CheckedStore"}}):
        assert [m.msg for m in check_agents() if m.id == "tests.W001"] == ["A2A_AGENTS['billing']: checked with []"]
        assert [m.msg for m in agent_stores(databases=["default"])] == [
            "A2A_AGENTS['billing']: checked with ['databases']"
        ]
    with override_settings(A2A_AGENTS={"billing": {"TASK_STORE": {"BACKEND": "stores.nowhere.Store"}}}):
        assert [m.msg.split(":")[0] for m in check_agents()] == ["A2A_AGENTS['billing']['TASK_STORE']"]


def test_an_unknown_agents_task_is_not_handed_on(caplog):
    """A saved task whose agent is no longer configured: push delivery logs and goes on."""
    push.on_task_saved({"id": "t", "_agent": "gone", "status": {"state": "working"}})
    assert "could not queue push notifications" in caplog.text


def test_a_stream_that_may_have_missed_events_reads_the_task_from_its_agents_store():
    """A resync (the event backend reconnected) makes the stream read its task again: from
    the agent's store, where it is, so the stream goes on to the end."""
    ctx = CallContext(agent_name="billing")
    task_id = client("billing").send("ask:more?")["task"]["id"]

    async def follow() -> list[str]:
        stream = subscribe_to_task(GetParams(id=task_id), ctx)
        seen = [(await anext(stream)).kind]
        bus.resync(task_id)
        await send_message(SendParams(message=message("ok", "0.3", taskId=task_id), blocking=False), ctx)
        seen += [item.kind async for item in stream if item.kind != "keepalive"]
        return seen

    kinds = asyncio.run(follow())
    assert kinds[0] == "task" and kinds[-1] == "status", kinds
    assert only_in("billing", task_id)["status"]["state"] == "completed"


def test_the_leases_command_settles_every_agents_store():
    lost = {agent: _lost(get_agent(agent).store, agent, "working") for agent in OWN}
    out, err = io.StringIO(), io.StringIO()
    call_command("a2a_leases", stdout=out, stderr=err)
    assert "Failed 2 tasks" in err.getvalue()
    for agent, task_id in lost.items():
        assert only_in(agent, task_id)["status"]["state"] == "failed"
    unusable = override_settings(A2A_AGENTS={"billing": {"TASK_STORE": "stores.nowhere.Store"}})
    with unusable, pytest.raises(CommandError, match=r"stores\.nowhere\.Store"):
        call_command("a2a_leases")


def test_a_direct_reply_handlers_task_is_created_in_its_agents_store(settings, tmp_path):
    pinger = {**BILLING, "HANDLER": "tests.test_handler_api.pinger", "TASK_STORE": f"file:{tmp_path / 'b'}"}
    settings.A2A_AGENTS = {**settings.A2A_AGENTS, "billing": pinger}
    pong = client("billing").rpc("SendMessage", {"message": message("ping")})["result"]
    assert pong["message"]["parts"][0]["text"] == "pong"  # no task
    assert get_agent("billing").store.list(TaskQuery(all_owners=True)).tasks == []
    worked = client("billing").send("work")["task"]
    assert only_in("billing", worked["id"])["_agent"] == "billing"


def test_an_agent_with_a_store_given_as_a_dict_stays_hashable():
    assert len({get_agent(name) for name in OWN}) == 2
