"""Retention by policy (``A2A_RETENTION``): what expires, whole contexts, kept tasks,
batches, what goes with a task, on every store; the sweep in a server process, the
``a2a_tasks prune`` command, the Tasks job, the admin's column and actions, the check."""

from __future__ import annotations

import asyncio
import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from prometheus_client import REGISTRY

from a2a.ops.checks import check_retention
from a2a.runtime import retention
from stores.fields import task_version
from stores.retention import KEEP, Policy, delete_tasks, parse_age, set_kept, sweep, tasks_deleted
from stores.timestamps import format_timestamp

pytestmark = pytest.mark.django_db(databases="__all__")

NOW = dt.datetime.now(dt.UTC)
DAY = dt.timedelta(days=1)
POLICY = Policy.from_setting({"completed": "30d", "failed": "7d", "input-required": "90d"})


def make_task(task_id: str, state: str = "completed", *, age: dt.timedelta = dt.timedelta(0), context: str = ""):
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context or f"ctx-{task_id}",
        "status": {"state": state, "timestamp": format_timestamp(NOW - age)},
        "_version": 3,
    }


def ids(store) -> set[str]:
    return {t["id"] for t in store.scan()}


def swept(store, policy: Policy = POLICY, **options) -> list[str]:
    return [t["id"] for batch in sweep(store, policy, now=NOW, **options) for t in batch]


# --- The policy ---------------------------------------------------------------------------


def test_policy_from_setting():
    policy = Policy.from_setting({"completed": "30d", "failed": 3600, "canceled": None, "auth-required": "1h30m"})
    assert policy.ages == {"completed": 30 * DAY, "failed": dt.timedelta(hours=1), "auth-required": parse_age("90m")}
    assert not Policy.from_setting({}) and not Policy.from_setting({"completed": None})
    for bad, message in (
        ({"working": "1d"}, "cannot name 'working'"),
        ({"completed": "soon"}, "not an age"),
        ({"completed": 0}, "more than 0"),
        ({"completed": True}, "must be a string"),
        (["completed"], "must be a dict"),
    ):
        with pytest.raises(ValueError, match=message):
            Policy.from_setting(bad)


def test_expires_by_state_age_and_keep():
    done = make_task("a", age=10 * DAY)
    assert POLICY.expires(done) == dt.datetime.fromisoformat(done["status"]["timestamp"]) + 30 * DAY
    assert not POLICY.expired(done, NOW) and POLICY.expired(done, NOW + 21 * DAY)
    assert POLICY.expires(make_task("b", "canceled", age=400 * DAY)) is None  # not named: forever
    assert POLICY.expires(make_task("c", "working", age=400 * DAY)) is None
    assert POLICY.expires({**make_task("d", age=400 * DAY), KEEP: True}) is None
    assert POLICY.expires({"id": "e", "status": {"state": "completed"}}) is None  # no timestamp: kept


def test_the_check_refuses_a_policy_that_is_not_one(settings):
    settings.A2A_RETENTION = {"completed": "30d"}
    assert check_retention() == []
    settings.A2A_RETENTION = {"working": "1d"}
    [error] = check_retention()
    assert error.id == "a2a.E130" and "'working'" in error.msg
    settings.A2A_RETENTION = "30d"
    assert [e.id for e in check_retention()] == ["a2a.E130"]  # not a dict: its declaration says so


# --- Sweeps, on every store ----------------------------------------------------------------------


def test_sweep_deletes_what_expired_with_its_push_configs(store):
    for task in (
        make_task("old-done", age=31 * DAY),
        make_task("new-done", age=29 * DAY),
        make_task("old-failed", "failed", age=8 * DAY),
        make_task("old-canceled", "canceled", age=800 * DAY),  # not named: forever
        make_task("stuck", "working", age=800 * DAY),  # the reaper's, never retention's
        make_task("waiting", "input-required", age=91 * DAY),
    ):
        store.save(task)
    store.push_configs.save_push_config({"taskId": "old-done", "id": "hook", "url": "https://hooks.example.com/a"})
    heard: list[list[str]] = []

    def receiver(sender, store, tasks, **kwargs):
        heard.append([t["id"] for t in tasks])

    tasks_deleted.connect(receiver)
    try:
        assert sorted(swept(store)) == ["old-done", "old-failed", "waiting"]
    finally:
        tasks_deleted.disconnect(receiver)
    assert ids(store) == {"new-done", "old-canceled", "stuck"}
    assert store.push_configs.list_push_configs("old-done") == []
    assert sorted(i for batch in heard for i in batch) == ["old-done", "old-failed", "waiting"]
    assert swept(store) == []  # nothing left to do


def test_a_context_goes_whole_or_not_at_all(store):
    store.save(make_task("a1", age=40 * DAY, context="talk-a"))
    store.save(make_task("a2", "failed", age=20 * DAY, context="talk-a"))  # failed: 7d, expired too
    store.save(make_task("b1", age=40 * DAY, context="talk-b"))
    store.save(make_task("b2", "input-required", age=2 * DAY, context="talk-b"))  # the conversation goes on
    store.save(make_task("c1", age=40 * DAY, context="talk-c"))
    store.save(make_task("c2", "working", age=40 * DAY, context="talk-c"))  # in flight
    assert sorted(swept(store)) == ["a1", "a2"]
    assert ids(store) == {"b1", "b2", "c1", "c2"}
    # task by task (explicit prune): the context does not hold it back
    assert sorted(swept(store, whole_contexts=False)) == ["b1", "c1"]


def test_a_context_is_per_owner(store):
    mine = {**make_task("mine", age=40 * DAY, context="shared"), "_owner": "alice"}
    theirs = {**make_task("theirs", "input-required", age=1 * DAY, context="shared"), "_owner": "bob"}
    store.save(mine)
    store.save(theirs)
    assert swept(store) == ["mine"]  # bob's conversation in the same contextId is his own


def test_a_kept_task_never_expires_nor_does_its_context(store):
    store.save(make_task("keep-me", age=400 * DAY, context="talk"))
    store.save(make_task("sibling", age=400 * DAY, context="talk"))
    store.save(make_task("other", age=400 * DAY))
    kept = set_kept(store, "keep-me")
    assert kept is not None and kept[KEEP] is True and task_version(kept) == 4
    assert swept(store) == ["other"]
    assert ids(store) == {"keep-me", "sibling"}
    set_kept(store, "keep-me", False)
    assert KEEP not in store.get("keep-me")
    assert sorted(swept(store)) == ["keep-me", "sibling"]
    assert set_kept(store, "gone") is None


def test_a_task_that_changed_since_it_was_read_stays(store):
    store.save(make_task("resumed", "input-required", age=100 * DAY))
    read = store.get("resumed")
    store.save({**make_task("resumed", "working"), "_version": 4})  # the client answered meanwhile
    assert delete_tasks(store, [read]) == []
    assert store.get("resumed")["status"]["state"] == "working"
    assert [t["id"] for t in delete_tasks(store, [store.get("resumed")])] == ["resumed"]


def test_the_default_delete_many_compares_versions():
    from stores.base import TaskStore
    from stores.memory import MemoryTaskStore

    store = MemoryTaskStore()
    store.save(make_task("a"))
    store.save(make_task("b"))
    moved_on = {**make_task("b"), "_version": 2}  # read before the version the store holds
    assert TaskStore.delete_many(store, [make_task("a"), moved_on, make_task("missing")]) == ["a"]
    assert ids(store) == {"b"}


def test_the_orm_store_without_returning(monkeypatch):
    from stores.orm import OrmTaskStore

    monkeypatch.setattr("stores.orm._returns_rows", lambda connection: False)  # SQLite before 3.35
    store = OrmTaskStore()
    store.save(make_task("old", age=40 * DAY))
    store.save(make_task("moved", age=40 * DAY))
    store.push_configs.save_push_config({"taskId": "old", "id": "hook", "url": "https://hooks.example.com/a"})
    moved_on = {**make_task("moved"), "_version": 2}
    assert [t["id"] for t in delete_tasks(store, [make_task("old"), moved_on])] == ["old"]
    assert ids(store) == {"moved"} and store.push_configs.list_push_configs("old") == []


def test_batches_are_bounded_and_a_dry_run_deletes_nothing(store, monkeypatch):
    monkeypatch.setattr("stores.orm._DELETE_CHUNK", 3)  # several DELETE statements in one batch
    for i in range(23):
        store.save(make_task(f"t{i:02d}", age=(31 + i) * DAY))
    store.save(make_task("recent", age=DAY))
    assert [len(b) for b in sweep(store, POLICY, now=NOW, batch_size=10, dry_run=True)] == [10, 10, 3]
    assert len(ids(store)) == 24
    sizes = []
    for batch in sweep(store, POLICY, now=NOW, batch_size=10):
        sizes.append(len(batch))
        store.save(make_task(f"new-{len(sizes)}"))  # the store is used between batches
    assert sizes == [10, 10, 3]
    assert ids(store) == {"recent", "new-1", "new-2", "new-3"}


def test_scan_older_sees_only_the_older_tasks_of_the_state(store):
    for i in range(130):  # more than a page
        store.save(make_task(f"o{i:03d}", age=(10 + i) * DAY))
    store.save(make_task("young", age=DAY))
    store.save(make_task("failed", "failed", age=100 * DAY))
    found = [t["id"] for t in store.scan_older("completed", NOW - 5 * DAY)]
    assert sorted(found) == [f"o{i:03d}" for i in range(130)]


# --- Where it runs ----------------------------------------------------------------------------


def _deleted_metric(state: str) -> float:
    return REGISTRY.get_sample_value("a2a_retention_deleted_tasks_total", {"state": state, "agent": "default"}) or 0.0


@pytest.mark.django_db(transaction=True, databases="__all__")  # the sweep's threads see the rows
def test_the_sweep_of_a_server_process_covers_every_store_and_counts(use_store, settings, tmp_path):
    settings.A2A_AGENTS = {"billing": {"AGENT_NAME": "Billing", "TASK_STORE": f"file:{tmp_path / 'billing'}"}}
    settings.A2A_RETENTION = {"completed": "30d"}
    settings.A2A_RETENTION_INTERVAL = 0.05
    from a2a.agents import get_agent

    billing = get_agent("billing").store
    use_store.save(make_task("ours", age=40 * DAY))
    billing.save({**make_task("theirs", age=40 * DAY), "_agent": "billing"})
    before = _deleted_metric("completed")

    def gone() -> bool:
        return use_store.get("ours") is None and billing.get("theirs") is None

    async def run() -> None:
        sweeping = asyncio.ensure_future(retention.keep_sweeping())
        for _ in range(200):
            await asyncio.sleep(0.02)
            if await asyncio.to_thread(gone):
                break
        sweeping.cancel()

    asyncio.run(run())
    assert use_store.get("ours") is None and billing.get("theirs") is None
    assert _deleted_metric("completed") == before + 1  # billing's is counted under its own agent


def test_the_lease_reapers_loop_runs_the_sweeps_beside_it(monkeypatch, settings):
    from a2a.runtime import reaper

    settings.A2A_LEASE_CHECK_INTERVAL = 0
    started, ended = asyncio.Event(), []

    async def fake_sweeping() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            ended.append(True)

    monkeypatch.setattr(retention, "keep_sweeping", fake_sweeping)

    class Runner:
        def task_ids(self) -> set[str]:
            return set()

    async def run() -> None:
        loop = asyncio.ensure_future(reaper.maintain(Runner()))  # type: ignore[arg-type]
        await asyncio.wait_for(started.wait(), 5)
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop

    asyncio.run(run())
    assert ended == [True]  # stopped with the loop


def test_a_policy_that_is_not_one_deletes_nothing_and_the_loop_lives_on(use_store, settings, caplog):
    settings.A2A_RETENTION = {"working": "1d"}
    settings.A2A_RETENTION_INTERVAL = 0.01
    use_store.save(make_task("old", age=4000 * DAY))

    async def run() -> bool:
        sweeping = asyncio.ensure_future(retention.keep_sweeping())
        await asyncio.sleep(0.1)
        alive = not sweeping.done()
        sweeping.cancel()
        return alive

    assert asyncio.run(run())
    assert use_store.get("old") is not None
    assert "the retention settings cannot be used" in caplog.text


def test_no_policy_no_sweep(use_store, settings):
    settings.A2A_RETENTION = {}
    use_store.save(make_task("old", age=4000 * DAY))
    assert asyncio.run(retention.sweep_all()) == 0
    assert retention.sweep_once() == 0
    assert use_store.get("old") is not None


def test_the_tasks_job_sweeps(use_store, settings):
    pytest.importorskip("django_tasks")
    settings.A2A_RETENTION = {"completed": "30d"}
    use_store.save(make_task("old", age=40 * DAY))
    from a2a.runtime.worker import sweep_job

    assert sweep_job.module_path == "a2a.runtime.worker.sweep_job"
    assert sweep_job.call() == 1
    assert use_store.get("old") is None


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("a2a_tasks", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_prune_applies_the_policy(use_store, settings):
    settings.A2A_RETENTION = {}
    with pytest.raises(CommandError, match="--older-than"):
        run("prune")
    settings.A2A_RETENTION = {"completed": "30d", "failed": "7d"}
    use_store.save(make_task("old-done", age=40 * DAY))
    use_store.save(make_task("old-failed", "failed", age=8 * DAY))
    use_store.save(make_task("held", age=40 * DAY, context="talk"))
    use_store.save(make_task("live", "working", context="talk"))
    _, err = run("prune", "--dry-run")
    assert "Would delete 2 tasks, 1 skipped" in err and len(ids(use_store)) == 4
    _, err = run("prune", "--state", "failed")
    assert "Deleted 1 task" in err and use_store.get("old-failed") is None
    with pytest.raises(CommandError, match="A2A_RETENTION"):
        run("prune", "--state", "canceled")  # the policy keeps those forever
    run("prune")
    assert ids(use_store) == {"held", "live"}


def test_prune_with_an_age_skips_kept_tasks(use_store):
    use_store.save(make_task("old", age=40 * DAY))
    use_store.save({**make_task("precious", age=40 * DAY), KEEP: True})
    _, err = run("prune", "--older-than", "30d")
    assert "Deleted 1 task" in err and ids(use_store) == {"precious"}


# --- The admin ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "orm"])
def test_the_admin_shows_when_a_task_expires_and_keeps_one(admin_client, settings, kind):
    from stores.backends import resolve_store

    settings.TASK_STORE = store = resolve_store(kind)
    settings.A2A_RETENTION = {"completed": "30d"}
    store.save(make_task("soon", age=20 * DAY))
    store.save(make_task("never", "working"))
    page = admin_client.get("/admin/stores/taskrecord/").content.decode()
    assert 'class="field-expires"' in page and ">in 1\xa0week<" in page and ">never<" in page
    response = admin_client.post(
        "/admin/stores/taskrecord/", {"action": "keep_tasks", "_selected_action": ["soon"], "index": "0"}
    )
    assert response.status_code == 302 and store.get("soon")[KEEP] is True
    assert ">kept<" in admin_client.get("/admin/stores/taskrecord/").content.decode()
    admin_client.post("/admin/stores/taskrecord/", {"action": "release_tasks", "_selected_action": ["soon"]})
    assert KEEP not in store.get("soon")
