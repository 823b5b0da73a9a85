"""Deliveries to a real webhook receiver: every store and dialect, retries, the payload
(see test_config_methods.py)."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from a2a import push
from a2a.core import lifecycle
from a2a.push import delivery
from a2a.testing import WireClient
from a2a.testing.client import send_params
from stores.backends import get_task_store
from stores.fields import task_generation
from stores.memory import MemoryTaskStore
from tests.conftest import ALL_DATABASES, STORE_KINDS
from tests.ports import free_port
from tests.push.support import DIALECTS, PUSH_METHODS, V03, V10, V11, a_task, create, message, ok, task_with_push

# === delivery ==========================================================================================


@ALL_DATABASES  # the ORM stores, from the runner's threads too
@pytest.mark.parametrize("store_kind", STORE_KINDS)
@pytest.mark.parametrize("version", DIALECTS)
def test_send_with_an_inline_config_delivers_working_then_completed(use_store, receiver, version):
    if version == V10:
        config = {
            "url": receiver.url(),
            "token": "tok-1",
            "authentication": {"scheme": "Bearer", "credentials": "s3cret"},
        }
    else:
        config = {
            "url": receiver.url(),
            "token": "tok-1",
            "authentication": {"schemes": ["Bearer"], "credentials": "s3cret"},
        }
    task = task_with_push(version, config)
    hits = receiver.wait_for(2)
    assert push.wait_idle()
    hits = receiver.hits
    states = [h.state for h in hits]
    if version == V10:
        assert states[-2:] == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"], states
        assert set(states) <= {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"}
    else:
        assert states[-2:] == ["working", "completed"], states
        assert set(states) <= {"submitted", "working", "completed"}
    # (a durable store may also tell the webhook about "submitted": its configs are read
    # after the first save; the memory store looks them up at once)
    for hit in hits:
        assert hit.path == "/hook"
        assert hit.headers["x-a2a-notification-token"] == "tok-1"
        assert hit.headers["authorization"] == "Bearer s3cret"
    done = hits[-1]
    if version == V10:
        assert done.headers["content-type"] == "application/a2a+json"
        assert set(done.body) == {"task"}
        assert done.body["task"]["id"] == task["id"]
        assert done.body["task"]["artifacts"][0]["parts"] == [{"text": "echo: hello"}]
    else:
        assert done.headers["content-type"] == "application/json"
        assert done.body["kind"] == "task" and done.body["id"] == task["id"]
        assert done.body["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: hello"}]
    # The inline config is kept like any other.
    configs = get_task_store().push_configs.list_push_configs(task["id"])
    assert [c["url"] for c in configs] == [receiver.url()]
    assert receiver.max_in_flight == 1


def test_each_config_gets_its_dialects_payload(memory, receiver):
    task_id = a_task(memory)
    create(V10, task_id, receiver.url("/v10"), id="ten")
    create(V03, task_id, receiver.url("/v03"), id="three")
    ok(PUSH_METHODS[V10][0], {"taskId": task_id, "id": "eleven", "url": receiver.url("/v11")}, version=V11)
    ok("CancelTask", {"id": task_id}, version=V10)
    hits = {h.path: h for h in receiver.wait_for(3)}
    assert hits["/v10"].body["task"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert hits["/v10"].headers["content-type"] == "application/a2a+json"
    assert "generation" not in hits["/v10"].body["task"]  # the strict v1.0 Task has none
    # A 1.1 config's deliveries are 1.1 documents: the v1.0 Task with its generation and
    # timeline (the cancel its last entry).
    generation = task_generation(memory.get(task_id))
    v11_task = dict(hits["/v11"].body["task"])
    timeline = v11_task.pop("timeline")
    assert v11_task == {**hits["/v10"].body["task"], "generation": str(generation)}
    assert timeline[-1]["generation"] == str(generation) and timeline[-1]["status"]["state"] == "TASK_STATE_CANCELED"
    assert hits["/v11"].headers["content-type"] == "application/a2a+json"
    assert hits["/v03"].body["status"]["state"] == "canceled" and hits["/v03"].body["kind"] == "task"
    assert hits["/v03"].headers["content-type"] == "application/json"
    assert "authorization" not in hits["/v03"].headers and "x-a2a-notification-token" not in hits["/v03"].headers


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_a_1_1_inline_config_delivers_each_generation(use_store, receiver):
    """SendMessage under ``A2A-Version: 1.1`` with an inline config: every delivery
    carries the generation of the version it tells, in order, up to the task's last."""
    params = send_params(message(V10), V10, configuration={"taskPushNotificationConfig": {"url": receiver.url()}})
    task = ok("SendMessage", params, version=V11)["task"]
    receiver.wait_for(2)
    assert push.wait_idle()
    generations = [int(h.body["task"]["generation"]) for h in receiver.hits]
    assert generations == sorted(set(generations)), generations  # each version once, in order
    assert receiver.hits[-1].state == "TASK_STATE_COMPLETED"
    final = ok("GetTask", {"id": task["id"]}, version=V11)
    assert generations[-1] == int(final["generation"]) == task_generation(get_task_store().get(task["id"]))


def test_a_failing_webhook_gets_the_update_after_retries(memory, receiver):
    receiver.script = [500, 500]
    task_with_push(V03, {"url": receiver.url(), "token": "t"}, blocking=False)
    hits = receiver.wait_for(4)
    assert push.wait_idle()
    assert [h.state for h in receiver.hits] == ["working", "working", "working", "completed"]
    assert hits[0].body == hits[2].body  # the same version, again


@pytest.mark.parametrize("status", [503, 429])
def test_delivery_gives_up_after_the_configured_attempts(memory, receiver, settings, caplog, status):
    settings.A2A_PUSH_MAX_ATTEMPTS = 2
    receiver.script = [status] * 10
    task_with_push(V10, {"url": receiver.url()})
    receiver.wait_for(4)
    assert push.wait_idle()
    assert [h.state for h in receiver.hits] == ["TASK_STATE_WORKING"] * 2 + ["TASK_STATE_COMPLETED"] * 2
    assert "given up after 2 attempt(s)" in caplog.text


def test_retry_after_as_an_http_date_is_honoured(memory, receiver):
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # 1 to 2 s from now (whole seconds)
    receiver.script = [(503, {"Retry-After": when})]
    task_with_push(V10, {"url": receiver.url()})
    receiver.wait_for(1)
    refused = time.monotonic()
    receiver.wait_for(2)
    assert time.monotonic() - refused > 0.8  # not the 0.01 s backoff: the date was read
    assert push.wait_idle()
    assert [h.state for h in receiver.hits] == ["TASK_STATE_WORKING"] * 2 + ["TASK_STATE_COMPLETED"]


def test_a_client_error_is_not_retried(memory, receiver, caplog):
    receiver.script = [404]
    task_with_push(V03, {"url": receiver.url()})
    receiver.wait_for(2)
    assert push.wait_idle()
    assert [h.state for h in receiver.hits] == ["working", "completed"]
    assert "HTTP 404; not retrying" in caplog.text


@pytest.mark.parametrize("version", DIALECTS)
def test_a_slow_webhook_does_not_slow_send_message_and_gets_one_request_at_a_time(memory, receiver, version):
    receiver.release.clear()  # hold every request until the test lets go
    started = time.monotonic()
    task = task_with_push(version, {"url": receiver.url()})  # blocking: waits for the task, not for the webhook
    elapsed = time.monotonic() - started
    assert task["status"]["state"] in ("completed", "TASK_STATE_COMPLETED")
    assert elapsed < 5, elapsed  # the webhook holds its request for up to 30 s
    receiver.wait_for(1)
    assert len(receiver.hits) == 1 and receiver.in_flight == 1  # "completed" waits its turn
    receiver.release.set()
    hits = receiver.wait_for(2)
    assert push.wait_idle()
    assert [h.state for h in hits][-1] in ("completed", "TASK_STATE_COMPLETED")
    assert receiver.max_in_flight == 1


@pytest.mark.parametrize("blocking", [True, False])
def test_a_webhook_that_is_down_does_not_slow_send_message(memory, settings, push_log, blocking):
    settings.A2A_PUSH_RETRY_DELAY = 0.5  # retries 0.5 + 1 + 2 s apart: over 3 s per update
    settings.A2A_PUSH_MAX_ATTEMPTS = 4
    retrying = push_log("retrying in")
    started = time.monotonic()
    task = task_with_push(V03, {"url": f"http://127.0.0.1:{free_port()}/hook"}, blocking=blocking)
    elapsed = time.monotonic() - started
    assert elapsed < 2, elapsed
    assert task["status"]["state"] == ("completed" if blocking else "submitted")
    assert retrying.event.wait(10)
    assert not push.wait_idle(timeout=0.2)  # the deliveries are still being retried


def test_deleting_a_config_stops_its_deliveries(memory, receiver):
    receiver.release.clear()
    task = task_with_push(V10, {"url": receiver.url(), "id": "cfg"})
    receiver.wait_for(1)  # "working" is held at the webhook; "completed" is queued behind it
    ok(PUSH_METHODS[V10][3], {"taskId": task["id"], "id": "cfg"}, version=V10)
    assert push.wait_idle()
    receiver.release.set()
    assert [h.state for h in receiver.hits] == ["TASK_STATE_WORKING"]


def test_two_configs_on_one_task_both_get_every_update(memory, receiver):
    task_id = a_task(memory)
    create(V03, task_id, receiver.url("/one"))
    create(V03, task_id, receiver.url("/two"))
    ok("tasks/cancel", {"id": task_id})
    hits = receiver.wait_for(2)
    assert sorted(h.path for h in hits) == ["/one", "/two"]
    assert {h.state for h in hits} == {"canceled"}


def test_the_listener_never_raises_into_the_publisher(memory, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("a2a.push.delivery.store_of", broken)
    push.on_task_saved({"id": "t1", "status": {"state": "working"}})
    assert "could not queue push notifications" in caplog.text


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_no_worker_thread_for_tasks_without_configs(use_store):
    """Every store says "no configs" without a query (memory: a dict; file: a stat; ORM:
    the save's own statement), so a task nobody listens to is never handed to delivery."""
    push.shutdown(grace=0)
    assert ok("SendMessage", {"message": message(V03)})["status"]["state"] == "completed"
    assert not delivery._delivery.started  # the store said "no configs": nothing was handed off


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_a_config_made_after_an_unpublished_save_hears_the_next_version(use_store, receiver):
    """A lease renewal (saved, never published) found no configs; a config is then made
    (by another process, for all this one knows): the next transition is delivered."""
    task_id = a_task(use_store)
    renewed = lifecycle.transition_sync(use_store, task_id, lambda t: t, publish=False, durable=False)
    assert renewed is not None
    create(V03, task_id, receiver.url("/late"))
    ok("tasks/cancel", {"id": task_id})
    hits = receiver.wait_for(1)
    assert [(h.path, h.state) for h in hits] == [("/late", "canceled")]


@pytest.mark.django_db(transaction=True)
def test_another_callers_task_answers_like_an_unknown_one(settings, receiver):
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    settings.TASK_STORE = MemoryTaskStore()
    alice, bob = (Token.objects.create(user=User.objects.create_user(name)).key for name in ("alice", "bob"))

    async def call(token: str, method: str, params: dict) -> dict:
        return await WireClient().arpc(method, params, headers={"Authorization": f"Bearer {token}"})

    params = {
        "message": message(V10),
        "configuration": {"taskPushNotificationConfig": {"url": receiver.url(), "id": "c"}},
    }
    task = asyncio.run(call(alice, "SendMessage", params))["result"]["task"]
    create_, get, list_, delete = PUSH_METHODS[V10]
    assert asyncio.run(call(alice, get, {"taskId": task["id"], "id": "c"}))["result"]["url"] == receiver.url()
    for method, params in [
        (create_, {"taskId": task["id"], "url": receiver.url("/bob")}),
        (get, {"taskId": task["id"], "id": "c"}),
        (list_, {"taskId": task["id"]}),
        (delete, {"taskId": task["id"], "id": "c"}),
    ]:
        error = asyncio.run(call(bob, method, params))["error"]
        assert error["code"] == -32001 and task["id"] in error["message"], error
    assert [c["id"] for c in get_task_store().push_configs.list_push_configs(task["id"])] == ["c"]
