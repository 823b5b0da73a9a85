"""The JSON-RPC endpoint's answers when all goes well: every method in every dialect, ListTasks,
and the toolnexus dialect exactly as the toolnexus client sends it (see test_errors.py)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from a2a.runtime.runner import get_runner
from a2a.testing.client import rpc_body as request
from tests.helpers import http, wait_until

# === Happy paths ========================================================================
from tests.jsonrpc.support import (
    ENDPOINT,
    TIMESTAMP,
    V03,
    V10,
    artifacts_handler,
    async_slow_handler,
    data_handler,
    envelope,
    failing_handler,
    fails,
    handler_cancelled,
    handler_finished,
    handler_path,
    handler_release,
    handler_started,
    no_kind_keys,
    ok,
    post,
    runner_idle,
    seed,
)


def test_blocking_send_completes_with_echo(dialect):
    task = dialect.send_message("hello there")
    assert task["status"]["state"] == dialect.state("completed")
    assert TIMESTAMP.match(task["status"]["timestamp"]), task["status"]
    [artifact] = task["artifacts"]
    assert artifact["artifactId"]
    assert artifact["parts"] == [dialect.text("echo: hello there")]
    [sent] = task["history"]
    assert sent["role"] == dialect.role("user")
    assert sent["parts"] == [dialect.text("hello there")]
    assert sent["taskId"] == task["id"]
    assert sent["contextId"] == task["contextId"]
    if not dialect.v10:
        assert sent["kind"] == "message"
    # What GetTask says later is what SendMessage answered.
    assert dialect.get_task(task["id"]) == task


def test_blocking_is_the_default(dialect):
    params = {"message": dialect.message("no configuration")}
    task = dialect.unwrap(ok(dialect.send, params, version=dialect.version))
    assert task["status"]["state"] == dialect.state("completed")
    assert task["artifacts"][0]["parts"] == [dialect.text("echo: no configuration")]


def test_non_blocking_send_then_poll(dialect, slow):
    task = dialect.send_message("later", blocking=False)
    assert task["status"]["state"] == dialect.state("submitted")
    assert TIMESTAMP.match(task["status"]["timestamp"])
    assert "artifacts" not in task
    wait_until(lambda: task["id"] in handler_started, what="the handler to start")
    assert dialect.get_task(task["id"])["status"]["state"] == dialect.state("working")
    handler_release.set()
    done = dialect.wait_for(task["id"], "completed")
    assert done["artifacts"][0]["parts"] == [dialect.text("slow: later")]
    assert done["status"]["timestamp"] >= task["status"]["timestamp"]


def test_non_blocking_send_with_echo_handler(dialect):
    task = dialect.send_message("quick", blocking=False)
    assert task["status"]["state"] in (dialect.state("submitted"), dialect.state("working"))
    done = dialect.wait_for(task["id"], "completed")
    assert done["artifacts"][0]["parts"] == [dialect.text("echo: quick")]


def test_send_history_length(dialect):
    task = dialect.send_message("no history please", config={"historyLength": 0})
    assert task["status"]["state"] == dialect.state("completed")
    assert "history" not in task
    assert len(dialect.get_task(task["id"])["history"]) == 1, "historyLength only trims the answer"


def test_get_task_history_length(dialect, store):
    task_id = seed(store, "completed", texts=("first", "second", "third"))
    full = dialect.get_task(task_id)
    assert [m["parts"][0]["text"] for m in full["history"]] == ["first", "second", "third"]
    assert "history" not in dialect.get_task(task_id, historyLength=0)
    [last] = dialect.get_task(task_id, historyLength=1)["history"]
    assert last["parts"] == [dialect.text("third")]
    assert len(dialect.get_task(task_id, historyLength=2)["history"]) == 2
    assert len(dialect.get_task(task_id, historyLength=50)["history"]) == 3
    assert len(dialect.get_task(task_id, historyLength="1")["history"]) == 1, "ProtoJSON int32 as a string"


def test_cancel_working_task(dialect, slow):
    task = dialect.send_message("take your time", blocking=False)
    wait_until(lambda: task["id"] in handler_started, what="the handler to start")
    canceled = ok(dialect.cancel, {"id": task["id"]}, version=dialect.version)
    assert canceled["id"] == task["id"]
    assert canceled["status"]["state"] == dialect.state("canceled")
    assert TIMESTAMP.match(canceled["status"]["timestamp"])
    # The handler sees the cancellation and returns; its late answer must be dropped.
    wait_until(lambda: task["id"] in handler_finished, what="the handler to finish")
    wait_until(runner_idle, what="the runner to settle")
    later = dialect.get_task(task["id"])
    assert later["status"]["state"] == dialect.state("canceled")
    assert "artifacts" not in later
    # Canceling again is refused: the task is terminal.
    fails(dialect.cancel, {"id": task["id"]}, code=-32002, version=dialect.version)


def test_cancel_working_async_task(dialect, slow, settings):
    settings.A2A_HANDLER = handler_path(async_slow_handler)
    task = dialect.send_message("async work", blocking=False)
    wait_until(lambda: task["id"] in handler_started, what="the handler to start")
    canceled = ok(dialect.cancel, {"id": task["id"]}, version=dialect.version)
    assert canceled["status"]["state"] == dialect.state("canceled")
    wait_until(lambda: task["id"] in handler_cancelled, what="the async handler to be cancelled")
    handler_release.set()
    wait_until(runner_idle, what="the runner to settle")
    later = dialect.get_task(task["id"])
    assert later["status"]["state"] == dialect.state("canceled")
    assert "artifacts" not in later


def test_cancel_input_required_task(dialect, store):
    task_id = seed(store, "input-required")
    waiting = dialect.get_task(task_id)
    assert waiting["status"]["state"] == dialect.state("input-required")
    assert waiting["status"]["message"]["parts"] == [dialect.text("Where to?")]
    canceled = ok(dialect.cancel, {"id": task_id}, version=dialect.version)
    assert canceled["status"]["state"] == dialect.state("canceled")
    assert dialect.get_task(task_id)["status"]["state"] == dialect.state("canceled")
    # A canceled task takes no more messages.
    params = {"message": dialect.message("Paris", taskId=task_id)}
    error = fails(dialect.send, params, code=-32004, version=dialect.version)
    assert "canceled" in error["message"]


def test_cancel_submitted_task_before_it_runs(dialect, store):
    task_id = seed(store, "submitted")
    canceled = ok(dialect.cancel, {"id": task_id}, version=dialect.version)
    assert canceled["status"]["state"] == dialect.state("canceled")
    # Even if the runner gets to it afterwards, it stays canceled and never runs.
    get_runner().submit(task_id).result(5)
    task = dialect.get_task(task_id)
    assert task["status"]["state"] == dialect.state("canceled")
    assert "artifacts" not in task


def test_cancel_task_queued_behind_busy_workers(slow):
    """With every worker busy, a new task waits in submitted; canceling it there sticks."""
    d = V10
    workers = get_runner().workers
    busy = [d.send_message(f"busy {i}", blocking=False)["id"] for i in range(workers)]
    wait_until(lambda: len(handler_started) == workers, what="every worker to be busy")
    queued = d.send_message("queued", blocking=False)
    assert queued["status"]["state"] == "TASK_STATE_SUBMITTED"
    time.sleep(0.05)
    assert d.get_task(queued["id"])["status"]["state"] == "TASK_STATE_SUBMITTED", "no free worker"
    canceled = ok(d.cancel, {"id": queued["id"]}, version=d.version)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    handler_release.set()
    for task_id in busy:
        d.wait_for(task_id, "completed")
    wait_until(runner_idle, what="the runner to settle")
    later = d.get_task(queued["id"])
    assert later["status"]["state"] == "TASK_STATE_CANCELED"
    assert "artifacts" not in later
    assert queued["id"] not in handler_started, "a task canceled in the queue never reaches the handler"


def test_failing_handler_fails_the_task(dialect, settings):
    settings.A2A_HANDLER = handler_path(failing_handler)
    task = dialect.send_message("burn")
    assert task["status"]["state"] == dialect.state("failed")
    assert TIMESTAMP.match(task["status"]["timestamp"])
    message = task["status"]["message"]
    assert message["role"] == dialect.role("agent")
    # the exception's type only: its text may quote internals (the traceback is in the log)
    assert message["parts"] == [dialect.text("The agent failed: RuntimeError")]
    assert message["taskId"] == task["id"]
    assert "artifacts" not in task
    assert dialect.get_task(task["id"])["status"] == task["status"]


def test_data_part_result(dialect, settings):
    settings.A2A_HANDLER = handler_path(data_handler)
    task = dialect.send_message("numbers")
    assert task["status"]["state"] == dialect.state("completed")
    data = {"answer": 42, "echo": "numbers", "items": [1, 2]}
    expected = {"data": data} if dialect.v10 else {"kind": "data", "data": data}
    assert task["artifacts"][0]["parts"] == [expected]


def test_list_of_artifacts_result(dialect, settings):
    settings.A2A_HANDLER = handler_path(artifacts_handler)
    task = dialect.send_message("report")
    summary, details = task["artifacts"]
    assert summary["name"] == "summary"
    assert summary["parts"] == [dialect.text("summary of report")]
    assert details["name"] == "details"
    assert details["description"] == "numbers and a file"
    assert summary["artifactId"] and details["artifactId"] and summary["artifactId"] != details["artifactId"]
    if dialect.v10:
        assert details["parts"] == [
            {"data": {"n": [1, 2, 3]}},
            {"raw": "aGk=", "mediaType": "text/plain", "filename": "hi.txt"},
        ]
        assert no_kind_keys(task)
    else:
        assert details["parts"] == [
            {"kind": "data", "data": {"n": [1, 2, 3]}},
            {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "hi.txt"}},
        ]


def test_v10_accepts_proto_names_and_ignores_unknown_fields():
    message_id = str(uuid.uuid4())
    params = {
        "tenant": "",
        "message": {
            "message_id": message_id,
            "context_id": "ctx-proto-names",
            "role": "ROLE_USER",
            "parts": [{"text": "snake", "futurePartField": 1}],
            "futureMessageField": {"x": 1},
        },
        "configuration": {"return_immediately": False, "history_length": 5, "futureConfigField": True},
        "futureParamsField": [1, 2],
    }
    task = V10.unwrap(ok("SendMessage", params, version="1.0"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["contextId"] == "ctx-proto-names"
    [sent] = task["history"]
    assert sent["messageId"] == message_id
    assert sent["parts"] == [{"text": "snake"}]
    assert task["artifacts"][0]["parts"] == [{"text": "echo: snake"}]


def test_v10_accepts_enum_numbers_and_file_parts(settings):
    settings.A2A_INPUT_MODES = ["text/*", "application/*"]
    params = {
        "message": {
            "messageId": "m-1",
            "role": 1,  # ROLE_USER
            "parts": [
                {"text": "see attached"},
                {"raw": "aGVsbG8=", "mediaType": "text/plain", "filename": "a.txt"},
                {"url": "https://example.com/b.pdf", "mediaType": "application/pdf"},
                {"data": {"k": "v"}},
            ],
        }
    }
    task = V10.unwrap(ok("SendMessage", params, version="1.0"))
    assert task["history"][0]["role"] == "ROLE_USER"
    assert task["history"][0]["parts"] == params["message"]["parts"], "parts come back as they were sent"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: see attached"}]


def test_v10_via_query_parameter():
    response = post(request("SendMessage", {"message": V10.message("by query")}), path=f"{ENDPOINT}?A2A-Version=1.0")
    task = V10.unwrap(envelope(response)["result"])
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("header", ["0.3", " 0.3 ", ""])
def test_explicit_v03_header(header):
    response = http(
        "POST",
        ENDPOINT,
        content=json.dumps(request("message/send", {"message": V03.message("v03")})).encode(),
        headers={"Content-Type": "application/json", "A2A-Version": header},
    )
    task = envelope(response)["result"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"


def test_context_id_generated_and_kept(dialect):
    first = dialect.send_message("one")
    second = dialect.send_message("two")
    assert uuid.UUID(first["contextId"]) and uuid.UUID(second["contextId"])
    assert first["contextId"] != second["contextId"], "each new conversation gets its own context"
    assert first["id"] != first["contextId"]
    kept = dialect.send_message("three", contextId=first["contextId"])
    assert kept["contextId"] == first["contextId"]
    assert kept["id"] != first["id"], "a reused context still starts a new task"
    assert kept["history"][0]["contextId"] == first["contextId"]


def test_follow_up_message_continues_an_input_required_task(dialect, store):
    task_id = seed(store, "input-required", texts=("book a flight", "Where to?"), context_id="ctx-trip")
    params = {"message": dialect.message("Paris", taskId=task_id), "configuration": dialect.config(blocking=True)}
    task = dialect.unwrap(ok(dialect.send, params, version=dialect.version))
    assert task["id"] == task_id
    assert task["contextId"] == "ctx-trip"
    assert task["status"]["state"] == dialect.state("completed")
    assert [m["parts"][0]["text"] for m in task["history"]] == ["book a flight", "Where to?", "Paris"]
    assert task["artifacts"][0]["parts"] == [dialect.text("echo: Paris")]
    [last] = dialect.get_task(task_id, historyLength=1)["history"]
    assert last["parts"] == [dialect.text("Paris")]


def test_follow_up_with_wrong_context_is_invalid(dialect, store):
    task_id = seed(store, "input-required", context_id="ctx-a")
    params = {"message": dialect.message("Paris", taskId=task_id, contextId="ctx-b")}
    error = fails(dialect.send, params, code=-32602, version=dialect.version)
    assert "message.contextId" in error["message"]
    assert dialect.get_task(task_id)["status"]["state"] == dialect.state("input-required")


def test_follow_up_to_a_working_task_is_refused(dialect, store):
    task_id = seed(store, "working")
    params = {"message": dialect.message("hurry", taskId=task_id)}
    error = fails(dialect.send, params, code=-32004, version=dialect.version)
    assert "working" in error["message"]


# --- ListTasks --------------------------------------------------------------------------


def test_list_tasks_filters_by_context_and_status(dialect, settings):
    ctx = f"ctx-{uuid.uuid4()}"
    done = [dialect.send_message(f"ok {i}", contextId=ctx)["id"] for i in range(2)]
    other = dialect.send_message("elsewhere", contextId="ctx-other")
    settings.A2A_HANDLER = handler_path(failing_handler)
    failed = dialect.send_message("bad", contextId=ctx)["id"]

    page = ok(dialect.list, {"contextId": ctx}, version=dialect.version)
    assert {t["id"] for t in page["tasks"]} == {*done, failed}
    assert page["totalSize"] == 3
    assert page["nextPageToken"] == ""
    assert other["id"] not in {t["id"] for t in page["tasks"]}

    page = ok(dialect.list, {"contextId": ctx, "status": dialect.state("failed")}, version=dialect.version)
    assert [t["id"] for t in page["tasks"]] == [failed]
    assert page["tasks"][0]["status"]["state"] == dialect.state("failed")
    assert page["totalSize"] == 1

    page = ok(dialect.list, {"status": dialect.state("completed")}, version=dialect.version)
    assert {t["id"] for t in page["tasks"]} == {*done, other["id"]}

    page = ok(dialect.list, {"contextId": "ctx-nobody"}, version=dialect.version)
    assert page == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}


def test_list_tasks_shape(dialect):
    ctx = f"ctx-{uuid.uuid4()}"
    sent = dialect.send_message("listed", contextId=ctx)
    [task] = ok(dialect.list, {"contextId": ctx}, version=dialect.version)["tasks"]
    assert task["id"] == sent["id"]
    assert task["status"]["state"] == dialect.state("completed")
    assert "artifacts" not in task, "artifacts only when asked for"
    if dialect.v10:
        assert no_kind_keys(task)
    else:
        assert task["kind"] == "task"
    [task] = ok(dialect.list, {"contextId": ctx, "includeArtifacts": True}, version=dialect.version)["tasks"]
    assert task["artifacts"] == sent["artifacts"]
    [task] = ok(dialect.list, {"contextId": ctx, "historyLength": 0}, version=dialect.version)["tasks"]
    assert "history" not in task


def test_list_tasks_paginates(dialect):
    ctx = f"ctx-{uuid.uuid4()}"
    ids = {dialect.send_message(f"task {i}", contextId=ctx)["id"] for i in range(5)}
    seen: list[str] = []
    token = None
    pages = []
    for _ in range(10):
        params: dict[str, Any] = {"contextId": ctx, "pageSize": 2}
        if token:
            params["pageToken"] = token
        page = ok(dialect.list, params, version=dialect.version)
        assert page["pageSize"] == 2
        assert page["totalSize"] == 5
        pages.append(len(page["tasks"]))
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        assert isinstance(token, str)
        if not token:
            break
    assert pages == [2, 2, 1]
    assert len(seen) == len(set(seen)) == 5
    assert set(seen) == ids
    # Newest-updated first.
    stamps = [dialect.get_task(i)["status"]["timestamp"] for i in seen]
    assert stamps == sorted(stamps, reverse=True)


def test_list_tasks_without_params(dialect):
    dialect.send_message("anything")
    page = ok(dialect.list, version=dialect.version)
    assert len(page["tasks"]) == 1
    assert page["nextPageToken"] == ""


def test_list_tasks_proto_names():
    ctx = f"ctx-{uuid.uuid4()}"
    V10.send_message("a", contextId=ctx)
    V10.send_message("b", contextId=ctx)
    page = ok("ListTasks", {"context_id": ctx, "page_size": 1, "include_artifacts": True}, version="1.0")
    assert len(page["tasks"]) == 1 and page["totalSize"] == 2 and page["nextPageToken"]
    assert page["tasks"][0]["artifacts"]
    rest = ok("ListTasks", {"context_id": ctx, "page_size": 1, "page_token": page["nextPageToken"]}, version="1.0")
    assert len(rest["tasks"]) == 1 and rest["nextPageToken"] == ""
    assert rest["tasks"][0]["id"] != page["tasks"][0]["id"]


# --- The toolnexus dialect exactly as the toolnexus client sends it ----------------


def test_toolnexus_client_flow():
    send = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "role": "user",
                "messageId": str(uuid.uuid4()),
                "parts": [{"kind": "text", "text": "archive this"}],
            },
            "configuration": {"blocking": False},
        },
    }
    answer = envelope(post(send))
    assert answer["id"] == 1
    result = answer["result"]
    task_id = result["id"]
    assert result["kind"] == "task"
    assert result["status"]["state"] in ("submitted", "working")

    def poll() -> dict[str, Any] | None:
        body = envelope(post({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}))
        assert body["id"] == 2
        got = body["result"]
        assert got["id"] == task_id
        assert got["status"]["state"] in ("submitted", "working", "completed"), got["status"]
        return got if got["status"]["state"] == "completed" else None

    task = wait_until(poll, what="the toolnexus task to complete")
    assert task["artifacts"][0]["parts"][0] == {"kind": "text", "text": "echo: archive this"}
    assert TIMESTAMP.match(task["status"]["timestamp"])


def test_toolnexus_blocking_send():
    params = {"message": {"role": "user", "messageId": "m-1", "parts": [{"kind": "text", "text": "now"}]}}
    result = ok("SendMessage", params)
    assert result["kind"] == "task"
    assert result["status"]["state"] == "completed"
    assert result["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: now"}]
