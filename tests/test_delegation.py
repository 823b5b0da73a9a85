"""Delegation from a handler (``request.delegate``) to the test kit's scripted fake remote
agent: the remote task mirrored onto the local one, and each fault with a clear local
outcome that loses nothing (remote down, slow past the timeout, 5xx then success,
input-required answered, canceled either side, auth-required, an unsigned card, a
stream broken mid-artifact)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from a2a.handlers import DelegationFailed, HandlerRequest
from a2a.handlers.delegation import METADATA_KEY, local_artifact_id
from a2a.protocol.model import CancelParams, SendParams, set_status
from a2a.service import operations
from a2a.testing.fake_agent import (
    artifact,
    auth_required,
    canceled,
    completed,
    disconnect,
    failed,
    input_required,
    pause,
    working,
)
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.conftest import ALL_DATABASES
from tests.helpers import send_direct, wait_for_state, wait_until
from tests.ports import free_port
from tests.push.support import a_task

HERE = __name__


def delegator(request: HandlerRequest) -> Any:
    """Delegates the message to "remote" with the options in the task's metadata."""
    return request.delegate("remote", request.text, **request.metadata.get("options", {}))


async def async_delegator(request: HandlerRequest) -> Any:
    remote = await request.adelegate("remote", request.text, **request.metadata.get("options", {}))
    return f"remote said: {remote['artifacts'][0]['parts'][0]['text']}"


def catching(request: HandlerRequest) -> str:
    """Handles the failure itself (as a tool loop would)."""
    try:
        request.delegate("remote", request.text, timeout=5)
    except DelegationFailed as exc:
        return f"no luck: {exc.remote_state or 'unknown'}: {exc}"
    return "ok"


@pytest.fixture(autouse=True)
def local(settings, fake_agent) -> MemoryTaskStore:
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_HANDLER = f"{HERE}.delegator"
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": fake_agent.url, "TIMEOUT": 5}}
    return get_task_store()


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "message", "messageId": f"m-{time.monotonic_ns()}", "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}  # fmt: skip


SETTLED = {"completed", "failed", "canceled", "rejected", "input-required", "auth-required"}


def run(text: str = "go", **options: Any) -> dict[str, Any]:
    """Send ``text`` (blocking) for :func:`delegator` to delegate with ``options``; the
    local task once it settles."""
    task = send_direct(message(text), metadata={"options": options} if options else None)
    return wait_for_state(get_task_store(), task["id"], SETTLED, timeout=20)


def status_text(task: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in (task["status"].get("message") or {}).get("parts", ()))


def sent_methods(agent: Any) -> list[str]:
    return [r.body.get("method") for r in agent.requests if isinstance(r.body, dict)]


CHUNKED = [working("looking it up"), artifact("a", last_chunk=False), artifact("b", append=True), completed("done")]


def test_a_remote_task_is_brought_into_the_local_one(fake_agent):
    fake_agent.script(CHUNKED)
    events: list[Any] = []

    async def stream() -> None:
        async for item in operations.stream_message(SendParams(message=message("go"))):
            events.append(item)

    asyncio.run(stream())
    task = wait_for_state(get_task_store(), events[0].task["id"], {"completed"})
    record = task["metadata"][METADATA_KEY]
    assert [(r["agent"], r["state"], r["url"]) for r in record] == [("remote", "completed", fake_agent.card_url)]
    remote_id = record[0]["taskId"]
    assert record[0]["contextId"] == fake_agent.tasks[remote_id]["contextId"]
    [mirrored] = task["artifacts"]
    assert mirrored["artifactId"] == local_artifact_id(remote_id, "result")
    assert [p["text"] for p in mirrored["parts"]] == ["a", "b"]  # the chunks, in order, one artifact
    progress = [e.task["status"]["message"] for e in events if e.kind == "status" and e.task["status"].get("message")]
    assert progress[0]["parts"][0]["text"] == "looking it up"
    assert progress[0]["referenceTaskIds"] == [remote_id]
    chunks = [(e.artifact["parts"][0]["text"], e.append) for e in events if e.kind == "artifact"]
    assert chunks == [("a", False), ("b", True)]
    assert "SendStreamingMessage" in sent_methods(fake_agent)


def test_without_streaming_the_remote_task_is_polled(fake_agent):
    fake_agent.script([working("one"), artifact("x"), completed()])
    task = run(stream=False, poll_interval=0.05)
    assert task["status"]["state"] == "completed"
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["x"]
    assert "SendMessage" in sent_methods(fake_agent) and "GetTask" in sent_methods(fake_agent)


def test_an_async_handler_delegates_too(settings, fake_agent):
    settings.A2A_HANDLER = f"{HERE}.async_delegator"
    fake_agent.script([artifact("42"), completed()])
    task = run()
    assert task["status"]["state"] == "completed"
    assert [a["parts"][0]["text"] for a in task["artifacts"]] == ["42", "remote said: 42"]


def test_remote_agent_down(settings):
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": f"http://127.0.0.1:{free_port()}", "RETRIES": 1}}
    task = run()
    assert task["status"]["state"] == "failed"
    assert status_text(task).startswith("The remote agent 'remote' cannot be reached: Cannot reach")


def test_an_unknown_remote_agent(settings):
    settings.A2A_REMOTE_AGENTS = {}
    task = run()
    assert task["status"]["state"] == "failed"
    assert "No remote agent 'remote' in A2A_REMOTE_AGENTS" in status_text(task)


def test_slow_past_the_timeout_cancels_the_remote_task(fake_agent):
    fake_agent.script([working("started"), pause(3), completed()])
    began = time.monotonic()
    task = run(timeout=0.5)
    assert time.monotonic() - began < 2.5  # the local task did not wait for the remote one
    assert task["status"]["state"] == "failed"
    assert "did not finish within 0.5s" in status_text(task) and "was canceled" in status_text(task)
    remote_id = task["metadata"][METADATA_KEY][0]["taskId"]
    assert fake_agent.tasks[remote_id]["status"]["state"] == "TASK_STATE_CANCELED"


def test_5xx_then_success(fake_agent):
    fake_agent.script([artifact("fine"), completed()])
    fake_agent.fail_next(503, times=2)
    task = run()
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == "fine"
    assert sent_methods(fake_agent).count("SendStreamingMessage") == 3  # sent again after each 503
    assert len(fake_agent.tasks) == 1  # which said the message was not taken: one remote task


def test_a_5xx_that_outlasts_the_retries(fake_agent):
    fake_agent.fail_next(503, times=5)
    task = run()
    assert task["status"]["state"] == "failed"
    assert status_text(task) == (
        "The remote agent 'remote' answered with an error: SendStreamingMessage: "
        "the agent answered error -32603: fake failure"
    )
    assert sent_methods(fake_agent).count("SendStreamingMessage") == 3  # RETRIES (default 3), then given up


def test_the_remote_agent_refuses_the_credentials(fake_agent):
    fake_agent.fail_next(401, body={"error": "who are you?"})
    task = run()
    assert task["status"]["state"] == "failed"
    assert status_text(task).startswith("The remote agent 'remote' refused the credentials: remote: POST")
    assert "HTTP 401" in status_text(task)


@pytest.mark.parametrize(
    ("options", "error"),
    [({"timeout": 0}, "ValueError"), ({"poll_interval": -1}, "ValueError"), ({"retries": 2}, "TypeError")],
)
def test_bad_options_are_the_handlers_error(options, error):
    task = run(**options)
    assert task["status"]["state"] == "failed" and status_text(task) == f"The agent failed: {error}"


def test_remote_input_required_answered(fake_agent):
    fake_agent.script([input_required("Which account?")], [artifact("paid"), completed()])
    task = run("pay my bill")
    assert task["status"]["state"] == "input-required"
    assert status_text(task) == "Which account?"
    [record] = task["metadata"][METADATA_KEY]
    assert record["state"] == "input-required"
    assert task["status"]["message"]["referenceTaskIds"] == [record["taskId"]]

    answer = message("the blue one", taskId=task["id"], contextId=task["contextId"])
    send_direct(answer)
    done = wait_for_state(get_task_store(), task["id"], {"completed", "failed"})
    assert done["status"]["state"] == "completed"
    assert [r["state"] for r in done["metadata"][METADATA_KEY]] == ["completed"]  # one remote task, resumed
    sent = [r.body["params"]["message"] for r in fake_agent.requests if "Message" in str((r.body or {}).get("method"))]
    assert sent[-1]["taskId"] == record["taskId"] and sent[-1]["parts"][0]["text"] == "the blue one"
    assert done["artifacts"][0]["parts"][0]["text"] == "paid"


def test_a_resumed_remote_task_goes_on_with_the_same_local_artifact(fake_agent):
    fake_agent.script(
        [artifact("part 1", last_chunk=False), input_required("More?")],
        [artifact("part 2", append=True), completed()],
    )
    task = run()
    assert task["status"]["state"] == "input-required"
    send_direct(message("yes", taskId=task["id"], contextId=task["contextId"]))
    done = wait_for_state(get_task_store(), task["id"], {"completed", "failed"})
    assert [[p["text"] for p in a["parts"]] for a in done["artifacts"]] == [["part 1", "part 2"]]


def test_a_remote_agent_that_never_answers(fake_agent):
    fake_agent.script([pause(3)])
    fake_agent.fail_next(503, times=50)  # the send is never taken
    task = run(timeout=0.5)
    assert task["status"]["state"] == "failed"
    assert status_text(task).startswith("The remote agent 'remote' did not start the task within 0.5s")


def test_surface_false_returns_the_waiting_remote_task(fake_agent):
    fake_agent.script([input_required("Which account?")])
    task = run(surface=False)  # the handler returns it: the local task completes, the question its message
    assert task["status"]["state"] == "completed" and status_text(task) == "Which account?"
    assert task["metadata"][METADATA_KEY][0]["state"] == "input-required"


def test_remote_auth_required(fake_agent):
    fake_agent.script([auth_required("Sign in at https://billing.example.com/login")])
    task = run()
    assert task["status"]["state"] == "auth-required"
    assert status_text(task) == "Sign in at https://billing.example.com/login"
    assert task["metadata"][METADATA_KEY][0]["state"] == "auth-required"


def test_remote_canceled_cancels_the_local_task(fake_agent):
    fake_agent.script([working("on it"), canceled()])
    task = run()
    assert task["status"]["state"] == "canceled"
    assert "The remote agent 'remote' canceled its task" in status_text(task)


def test_remote_failed_and_rejected(fake_agent, settings):
    fake_agent.script([failed("no such account")])
    task = run()
    assert task["status"]["state"] == "failed"
    remote_id = task["metadata"][METADATA_KEY][0]["taskId"]
    assert status_text(task) == f"The remote agent 'remote' failed the task {remote_id}: no such account"

    settings.A2A_HANDLER = f"{HERE}.catching"
    fake_agent.script([failed("still no")])
    caught = run()
    assert caught["status"]["state"] == "completed"
    assert caught["artifacts"][-1]["parts"][0]["text"].startswith("no luck: failed: The remote agent")


@pytest.mark.parametrize("handler", ["delegator", "async_delegator"])
def test_canceling_the_local_task_cancels_the_remote_one(settings, fake_agent, handler):
    settings.A2A_HANDLER = f"{HERE}.{handler}"
    fake_agent.script([working("started"), pause(5), completed()])
    task = send_direct(message("go"), blocking=False)
    store = get_task_store()
    wait_until(lambda: (store.get(task["id"]) or {}).get("metadata", {}).get(METADATA_KEY), what="the remote task")
    remote_id = store.get(task["id"])["metadata"][METADATA_KEY][0]["taskId"]
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    wait_until(lambda: fake_agent.tasks[remote_id]["status"]["state"] == "TASK_STATE_CANCELED", what="remote cancel")
    assert store.get(task["id"])["status"]["state"] == "canceled"
    # the record follows the remote task to its end (it stayed "submitted": a terminal task took no save)
    records = lambda: store.get(task["id"])["metadata"][METADATA_KEY]  # noqa: E731
    wait_until(lambda: [r["state"] for r in records()] == ["canceled"], what="the record of the remote cancel")


BAD_SIGNATURE = {"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2lnbmVkIGJ5IG5vYm9keQ"}


@pytest.mark.parametrize(("signatures", "reason"), [(None, "is not signed"), ([BAD_SIGNATURE], "verif")])
def test_an_unsigned_or_badly_signed_card_when_signatures_are_required(settings, fake_agent, signatures, reason):
    public = ec.generate_private_key(ec.SECP256R1()).public_key()
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": fake_agent.url, "VERIFY_SIGNATURE": True, "SIGNATURE_KEYS": pem}}
    if signatures:
        card = fake_agent.card
        fake_agent.card = lambda: {**card(), "signatures": signatures}
    task = run()
    assert task["status"]["state"] == "failed"
    assert status_text(task).startswith("The remote agent 'remote' has no card this server accepts: ")
    assert reason in status_text(task)
    assert "SendStreamingMessage" not in sent_methods(fake_agent)  # nothing was sent to it


def test_a_chunked_artifact_interrupted_mid_stream_arrives_whole(fake_agent):
    fake_agent.script([artifact("a", last_chunk=False), disconnect()])
    task = send_direct(message("go"), blocking=False, metadata={"options": {"poll_interval": 0.05}})
    store = get_task_store()
    wait_until(lambda: (store.get(task["id"]) or {}).get("artifacts"), what="the first chunk")
    remote = next(iter(fake_agent.tasks.values()))
    with fake_agent._lock:  # the remote agent goes on behind the broken stream
        remote["artifacts"][0]["parts"].append({"text": "b"})
        remote["status"] = {"state": "TASK_STATE_COMPLETED"}
    done = wait_for_state(store, task["id"], {"completed", "failed"})
    assert done["status"]["state"] == "completed"
    assert [p["text"] for p in done["artifacts"][0]["parts"]] == ["a", "b"]
    assert "GetTask" in sent_methods(fake_agent)


# --- the caller's credentials ------------------------------------------------------------------


@pytest.mark.parametrize("forward", [True, False])
def test_the_callers_credentials_go_only_where_the_agent_opts_in(settings, fake_agent, a2a_client, forward):
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": fake_agent.url, "FORWARD_CALLER_CREDENTIALS": forward}}
    fake_agent.script([artifact("hi"), completed()])
    caller = a2a_client.with_(headers={"Authorization": "Bearer caller-token", "X-API-Key": "caller-key"})
    answer = caller.send("go")
    task = wait_for_state(get_task_store(), answer["task"]["id"], {"completed", "failed"})
    assert task["status"]["state"] == "completed"
    [sent] = [r for r in fake_agent.requests if (r.body or {}).get("method") == "SendStreamingMessage"]
    if forward:
        assert sent.headers["authorization"] == "Bearer caller-token" and sent.headers["x-api-key"] == "caller-key"
    else:
        assert "authorization" not in sent.headers and "x-api-key" not in sent.headers
    assert "caller-token" not in repr(task)  # never saved with the task


def test_credentials_are_kept_only_for_an_opted_in_agent(settings, fake_agent):
    from a2a.handlers.credentials import credential_headers, hold_credentials, take_credentials

    headers = {"Authorization": "Bearer t", "X-API-Key": "k"}.get
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": fake_agent.url}}
    assert credential_headers(headers) == {}
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": fake_agent.url, "FORWARD_CALLER_CREDENTIALS": True}}
    assert credential_headers(headers) == {"Authorization": "Bearer t", "X-API-Key": "k"}
    hold_credentials("t1", {"Authorization": "Bearer t"})
    assert take_credentials("t1") == {"Authorization": "Bearer t"}
    assert take_credentials("t1") == {}  # one run's


def test_credentials_no_handler_takes_are_dropped(monkeypatch):
    from a2a.handlers import credentials

    monkeypatch.setattr(credentials, "_HOLD_SECONDS", -1.0)  # every held one is stale at the next hold
    credentials.hold_credentials("never-run", {"Authorization": "Bearer t"})
    credentials.hold_credentials("next", {"Authorization": "Bearer u"})
    assert credentials.take_credentials("never-run") == {}
    assert credentials.take_credentials("next") == {"Authorization": "Bearer u"}


def test_the_trace_goes_along(settings, fake_agent, a2a_client):
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    if not isinstance(trace.get_tracer_provider(), TracerProvider):  # the first (and only) one of this process
        trace.set_tracer_provider(TracerProvider())
    settings.A2A_TRACING = True
    fake_agent.script([artifact("hi"), completed()])
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    answer = a2a_client.with_(headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}).send("go")
    wait_for_state(get_task_store(), answer["task"]["id"], {"completed"})
    sent = [r for r in fake_agent.requests if (r.body or {}).get("method") == "SendStreamingMessage"]
    assert sent[0].headers["traceparent"].split("-")[1] == trace_id  # the remote agent joins the caller's trace


def test_the_grpc_binding_reads_them_from_its_metadata(settings, fake_agent):
    pytest.importorskip("grpc")
    from a2a.grpc.service import call_context

    class Context:
        def invocation_metadata(self):
            return [("authorization", "Bearer g"), ("x-other", "no")]

    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": fake_agent.url, "FORWARD_CALLER_CREDENTIALS": True}}
    assert dict(asyncio.run(call_context(Context())).credentials) == {"Authorization": "Bearer g"}
    settings.A2A_REMOTE_AGENTS = {"remote": {"URL": fake_agent.url}}
    assert asyncio.run(call_context(Context())).credentials == ()


# --- the status stream, the record after a cancel, the async path ------------------------


def working_statuses(events: list[Any]) -> list[tuple[str, str]]:
    """The ``working`` statuses a stream told, as (state, status message text)."""
    return [
        ("working", status_text(e.task))
        for e in events
        if e.kind == "status" and e.task["status"]["state"] == "working"
    ]


@pytest.mark.parametrize("handler", ["delegator", "async_delegator"])
def test_a_delegating_tasks_stream_repeats_no_working_status(settings, fake_agent, handler):
    settings.A2A_HANDLER = f"{HERE}.{handler}"
    fake_agent.script([working("looking it up"), artifact("a"), working("still looking"), completed("done")])
    events: list[Any] = []

    async def stream() -> None:
        async for item in operations.stream_message(SendParams(message=message("go"))):
            events.append(item)

    asyncio.run(stream())
    told = working_statuses(events)
    # the handler starting (unless the first snapshot is working already), then each remote status message once
    assert [text for _, text in told if text] == ["looking it up", "still looking"], told
    assert len(told) <= 3 and len(set(told)) == len(told), told
    assert events[-1].task["status"]["state"] == "completed"


def test_a_cancelled_adelegate_is_a_cancelled_coroutine_and_cancels_the_remote_task(fake_agent, local):
    fake_agent.script([working("started"), pause(5), completed()])
    task_id = a_task(local)
    request = HandlerRequest.for_task(local.get(task_id), store=local)
    threads = {t.name for t in threading.enumerate()}

    async def go() -> None:
        job = asyncio.ensure_future(request.adelegate("remote", "go"))
        while not request.metadata.get(METADATA_KEY):
            await asyncio.sleep(0.01)
        new = {t.name for t in threading.enumerate()} - threads
        # no thread follows the remote task: only the saves' (asyncio_N) and the fake agent's own
        assert {n for n in new if not n.startswith("asyncio_") and "process_request" not in n} == set(), new
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(go())
    [record] = local.get(task_id)["metadata"][METADATA_KEY]
    assert record["state"] == "canceled"
    assert fake_agent.tasks[record["taskId"]]["status"]["state"] == "TASK_STATE_CANCELED"


@ALL_DATABASES
def test_the_record_is_saved_on_a_canceled_task_by_every_store(store):
    task_id = a_task(store, "canceled")
    request = HandlerRequest.for_task(store.get(task_id), store=store)
    record = {"agent": "remote", "url": "http://r/card", "taskId": "r-1", "contextId": "c-1", "state": "working"}
    request.record_delegation(record)
    request.record_delegation({**record, "state": "canceled"})  # the same remote task: replaced
    stored = store.get(task_id)
    assert stored["metadata"][METADATA_KEY] == [{**record, "state": "canceled"}]
    assert request.metadata[METADATA_KEY] == stored["metadata"][METADATA_KEY]
    assert stored["status"]["state"] == "canceled"
    assert request.update(lambda task: set_status(task, "working")) is None  # its state stays final
    assert request.current_task()["status"]["state"] == "canceled"
