"""The handler API (docs/handlers.md): every state a handler may set, sync and async;
cancellation in ``if`` and wait forms; a direct Message with no Task; what the
request tells the handler; the class form; failures a developer can debug."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Any

import pytest

from a2a.handlers import (
    AgentHandler,
    Cancellation,
    HandlerRequest,
    InputRequired,
    Reply,
    Result,
    TaskFailed,
    TaskRejected,
    direct_reply,
)
from a2a.protocol.model import CancelParams, GetParams, SendParams
from a2a.runtime.runner import get_runner
from a2a.service import operations
from a2a.service.context import CallContext
from a2a.testing import WireClient
from a2a.testing.client import v03_message
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.helpers import send_direct, wait_until

HERE = __name__


@pytest.fixture(autouse=True)
def store(settings) -> MemoryTaskStore:
    settings.TASK_STORE = MemoryTaskStore()
    store = get_task_store()
    assert isinstance(store, MemoryTaskStore)
    return store


def stream(text: str, **extra: Any) -> list[Any]:
    async def go() -> list[Any]:
        return [item async for item in operations.stream_message(SendParams(message=v03_message(text, **extra)))]

    return asyncio.run(go())


def texts(msg: dict[str, Any] | None) -> list[str]:
    return [p.get("text") for p in (msg or {}).get("parts", ())]


# --- every state, one call each, sync and async -----------------------------------------

#: name -> (the call(s) the handler makes, the state, the status message's text, artifact texts)
STATES: dict[str, tuple[Any, str, list[str], list[str]]] = {
    "input-bare": (lambda r: r.input_required(), "input-required", [], []),
    "input-text": (lambda r: r.input_required("Which city?"), "input-required", ["Which city?"], []),
    "auth": (
        lambda r: r.auth_required("Sign in at https://example.com"),
        "auth-required",
        ["Sign in at https://example.com"],
        [],
    ),
    "auth-bare": (lambda r: r.auth_required(), "auth-required", [], []),
    "complete": (
        lambda r: r.complete("Here it is", artifacts="the report"),
        "completed",
        ["Here it is"],
        ["the report"],
    ),
    "complete-bare": (lambda r: r.complete(), "completed", [], []),
    "complete-parts": (
        lambda r: r.complete([{"kind": "text", "text": "a"}, {"kind": "text", "text": "b"}]),
        "completed",
        ["a", "b"],
        [],
    ),
    "fail": (lambda r: r.fail("no luck"), "failed", ["no luck"], []),
    "reject": (lambda r: r.reject("not my job"), "rejected", ["not my job"], []),
    "reject-bare": (lambda r: r.reject(), "rejected", [], []),
    "cancel": (lambda r: r.cancel("stopped by the agent"), "canceled", ["stopped by the agent"], []),
}

#: the same, spelt the async way
ASYNC_CALLS = {
    "input-bare": lambda r: r.ainput_required(),
    "input-text": lambda r: r.ainput_required("Which city?"),
    "auth": lambda r: r.aauth_required("Sign in at https://example.com"),
    "auth-bare": lambda r: r.aauth_required(),
    "complete": lambda r: r.acomplete("Here it is", artifacts="the report"),
    "complete-bare": lambda r: r.acomplete(),
    "complete-parts": lambda r: r.acomplete([{"kind": "text", "text": "a"}, {"kind": "text", "text": "b"}]),
    "fail": lambda r: r.afail("no luck"),
    "reject": lambda r: r.areject("not my job"),
    "reject-bare": lambda r: r.areject(),
    "cancel": lambda r: r.acancel("stopped by the agent"),
}


def set_state(request: HandlerRequest) -> None:
    assert STATES[request.text][0](request) is True  # saved


async def aset_state(request: HandlerRequest) -> None:
    assert await ASYNC_CALLS[request.text](request) is True


@pytest.mark.parametrize("handler", ["set_state", "aset_state"])
@pytest.mark.parametrize("name", list(STATES))
def test_every_state_is_one_call(name, handler, settings, store):
    settings.A2A_HANDLER = f"{HERE}.{handler}"
    _, state, status_text, artifacts = STATES[name]
    task = send_direct(name)
    assert task["status"]["state"] == state
    assert texts(task["status"].get("message")) == status_text
    assert [p["text"] for a in task.get("artifacts", ()) for p in a["parts"]] == artifacts
    assert "_lease" not in store.get(task["id"])  # settled: nobody holds it any more
    if state in ("input-required", "auth-required", "completed") and status_text:
        assert texts(task["history"][-1]) == status_text  # questions and answers join the conversation


def progress_both_ways(request: HandlerRequest) -> str:
    request.progress()  # a status update with no message
    request.progress([{"kind": "data", "data": {"step": 1}}])
    request.progress("half way")  # text
    return "done"


async def aprogress_both_ways(request: HandlerRequest) -> str:
    await request.aprogress()
    await request.aprogress([{"kind": "data", "data": {"step": 1}}])
    await request.aprogress("half way")
    return "done"


@pytest.mark.parametrize("handler", ["progress_both_ways", "aprogress_both_ways"])
def test_working_with_or_without_a_message(handler, settings):
    settings.A2A_HANDLER = f"{HERE}.{handler}"
    statuses = [i.task["status"] for i in stream("go") if i.kind == "status"]
    working = [s for s in statuses if s["state"] == "working"]
    assert [s.get("message", {}).get("parts") for s in working] == [
        None,  # the runner's start
        None,  # progress()
        [{"kind": "data", "data": {"step": 1}}],
        [{"kind": "text", "text": "half way"}],
    ]
    assert statuses[-1]["state"] == "completed"


def raising(request: HandlerRequest) -> Any:
    if request.text == "reject":
        raise TaskRejected("I only do weather")
    if request.text == "ask":
        raise InputRequired()  # no text needed
    if request.text == "result":
        return Result("the artifact", message="All done", metadata={"cost": 1})
    if request.text == "over budget":
        raise TaskFailed("Over budget", metadata={"cost": 2})
    raise TaskFailed("No such city: Atlantis")


def test_raised_and_returned_outcomes(settings):
    settings.A2A_HANDLER = f"{HERE}.raising"
    rejected = send_direct("reject")
    assert (rejected["status"]["state"], texts(rejected["status"]["message"])) == ("rejected", ["I only do weather"])
    asked = send_direct("ask")
    assert asked["status"]["state"] == "input-required" and "message" not in asked["status"]
    done = send_direct("result")
    assert texts(done["status"]["message"]) == ["All done"]
    assert done["artifacts"][0]["parts"][0]["text"] == "the artifact" and done["metadata"] == {"cost": 1}
    failed = send_direct("fail")
    assert texts(failed["status"]["message"]) == ["No such city: Atlantis"]


def test_a_raised_outcome_keeps_its_metadata(settings):
    settings.A2A_HANDLER = f"{HERE}.raising"
    task = send_direct("over budget")
    assert (task["status"]["state"], task["metadata"]) == ("failed", {"cost": 2})
    assert texts(task["status"]["message"]) == ["Over budget"]


def complete_then_return(request: HandlerRequest) -> str:
    request.complete("first")
    request.progress("too late")  # ignored: the task is settled
    return "ignored too"


def test_a_settled_task_keeps_the_handlers_call(settings):
    settings.A2A_HANDLER = f"{HERE}.complete_then_return"
    task = send_direct("x")
    assert texts(task["status"]["message"]) == ["first"] and "artifacts" not in task


# --- cancellation: if and wait ------------------------------------------------------------


def checks_cancelled(request: HandlerRequest) -> str:
    if request.cancelled:  # the README's idiom: false until the task is canceled
        return "stopped"
    return "ran"


def test_if_request_cancelled_is_false_while_not_canceled(settings):
    settings.A2A_HANDLER = f"{HERE}.checks_cancelled"
    task = send_direct("x")
    assert task["artifacts"][0]["parts"][0]["text"] == "ran"


NOTICED: dict[str, Any] = {}


def waits_for_cancel(request: HandlerRequest) -> str:
    NOTICED["started"] = True
    NOTICED["sync"] = request.wait_cancelled(10)  # True once canceled, False on timeout
    NOTICED["truthy"] = bool(request.cancelled) and request.cancelled.is_set()
    return "too late"


def test_wait_cancelled_wakes_when_the_task_is_canceled(settings, store):
    NOTICED.clear()
    settings.A2A_HANDLER = f"{HERE}.waits_for_cancel"
    task = send_direct("x", blocking=False)
    wait_until(lambda: NOTICED.get("started"), timeout=10)
    started = time.monotonic()
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    wait_until(lambda: "truthy" in NOTICED, timeout=10)
    assert time.monotonic() - started < 5
    assert NOTICED == {"started": True, "sync": True, "truthy": True}
    wait_until(lambda: get_runner().active == 0, timeout=10)
    assert store.get(task["id"])["status"]["state"] == "canceled"


def test_acancelled_waits_without_a_thread():
    async def go() -> tuple[bool, bool, bool]:
        cancelled = Cancellation()
        request = HandlerRequest(message=v03_message("x"), task_id="t", context_id="c", cancelled=cancelled)
        timed_out = await request.acancelled(0.01)
        threading.Timer(0.05, cancelled.set).start()
        woke = await request.acancelled(5)
        return timed_out, woke, bool(request.cancelled)

    assert asyncio.run(go()) == (False, True, True)


# --- a direct Message: no Task ----------------------------------------------------------


@direct_reply
def pinger(request: HandlerRequest) -> Any:
    if request.text == "ping":
        return Reply("pong")
    if request.text == "boom":
        raise TaskFailed("cannot")
    request.progress("on it")  # from here on there is a task
    return Reply("worked on it") if request.text == "late reply" else "done"


def test_direct_reply_creates_no_task(settings, store):
    settings.A2A_HANDLER = f"{HERE}.pinger"
    answer = send_direct("ping", contextId="ctx-1")
    assert answer["kind"] == "message" and answer["role"] == "agent" and texts(answer) == ["pong"]
    assert answer["contextId"] == "ctx-1" and "taskId" not in answer
    assert send_direct("ping", blocking=False)["kind"] == "message"
    assert len(store) == 0  # nothing stored, ever


def test_a_stream_carries_exactly_the_message(settings, store):
    settings.A2A_HANDLER = f"{HERE}.pinger"
    items = stream("ping")
    assert [i.kind for i in items] == ["message"]
    assert texts(items[0].message) == ["pong"]
    assert len(store) == 0


def test_a_direct_handler_that_works_gets_a_task(settings, store):
    settings.A2A_HANDLER = f"{HERE}.pinger"
    items = stream("work")
    assert items[0].kind == "task" and items[0].task["status"]["state"] == "working"
    assert items[-1].kind == "status" and items[-1].task["status"]["state"] == "completed"
    task = send_direct("work")
    assert task["status"]["state"] == "completed" and task["artifacts"][0]["parts"][0]["text"] == "done"
    assert send_direct("late reply")["kind"] == "message"  # a Reply after a task existed: the task holds it
    assert send_direct("boom")["status"]["state"] == "failed"
    non_blocking = send_direct("work", blocking=False)
    assert non_blocking["kind"] == "task"
    wait_until(lambda: store.get(non_blocking["id"])["status"]["state"] == "completed", timeout=10)
    assert len(store) == 5


@direct_reply
def starts_then_works(request: HandlerRequest) -> str:
    request.progress("started")  # the first task-visible act: the task is created with it
    time.sleep(0.3)
    return "done"


def test_a_direct_handlers_first_act_is_its_tasks_first_event(settings, store):
    """Issue 32: a direct handler's first act (a progress update) created the task in
    ``working`` (event 1) and then saved the act as event 2, another ``working``: a
    SubscribeToTask that opened in between (most often on the file store, whose saves
    are slowest) showed id 1 working, then working again as 2. The act is now the
    task's creation: one event, number 1, holding what it says."""
    settings.A2A_HANDLER = f"{HERE}.starts_then_works"
    task = send_direct("go", blocking=False)
    assert task["_seq"] == 1 and texts(task["status"].get("message")) == ["started"]
    assert store.get(task["id"])["_seq"] == 1  # no second "working" behind it
    wait_until(lambda: store.get(task["id"])["status"]["state"] == "completed", timeout=10)
    done = store.get(task["id"])
    assert done["_seq"] == 3  # the result, then completed
    assert "_events" not in done  # numbered, but kept for no one: no stream followed it


BUILT: dict[str, Any] = {}


def tagged(task: dict[str, Any]) -> dict[str, Any]:
    task["metadata"] = {**(task.get("metadata") or {}), "tagged": True}
    return task


@direct_reply
def builds_on_the_request(request: HandlerRequest) -> str:
    BUILT["before"] = request.current_task()  # a direct handler's task does not exist yet
    BUILT["saved"] = request.update(tagged)  # the first task-visible act: it creates the task
    BUILT["stored"] = request.current_task()
    request.complete("done")
    BUILT["late"] = request.update(tagged)  # settled: ignored
    return "ignored"


def test_code_building_on_the_request_saves_and_reads_the_task(settings, store):
    """``update()`` and ``current_task()``, what delegation builds on: the first update
    of a direct handler creates its task with the change (one event), an update after
    the handler settled the task is not saved."""
    settings.A2A_HANDLER = f"{HERE}.builds_on_the_request"
    BUILT.clear()
    task = send_direct("go")
    # the blocking send answers once the task is completed, maybe before the handler's next line
    wait_until(lambda: "late" in BUILT, what="the handler's update after complete()")
    assert BUILT["before"] is None and BUILT["late"] is None
    assert BUILT["saved"]["metadata"] == {"tagged": True} and BUILT["saved"]["_seq"] == 1
    assert BUILT["stored"]["id"] == task["id"] and BUILT["stored"]["metadata"] == {"tagged": True}
    assert task["status"]["state"] == "completed" and task["metadata"] == {"tagged": True}


def test_direct_reply_over_json_rpc(settings, store):
    settings.A2A_HANDLER = f"{HERE}.pinger"
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    v10 = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "ping"}]}

    client = WireClient(version=None)
    sent = client.rpc_response("SendMessage", {"message": v10}, request_id=1, headers=headers)
    streamed = client.rpc_response("SendStreamingMessage", {"message": v10}, request_id=2, headers=headers)
    assert set(sent.json()["result"]) == {"message"}
    events = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert len(events) == 1 and events[0]["result"]["message"]["parts"] == [{"text": "pong"}]
    assert len(store) == 0


def test_a_continuation_runs_as_a_task(settings, store):
    settings.A2A_HANDLER = f"{HERE}.asks_then_pings"
    asked = send_direct("ping")
    assert asked["status"]["state"] == "input-required"
    follow = send_direct("ping", taskId=asked["id"])
    assert follow["kind"] == "message" and texts(follow) == ["pong"]  # the task's reply, as before
    assert store.get(asked["id"])["status"]["state"] == "completed"


@direct_reply
def asks_then_pings(request: HandlerRequest) -> Any:
    if not request.is_continuation:
        raise InputRequired("again?")
    return Reply("pong")


# --- what the request says --------------------------------------------------------------

SEEN: list[dict[str, Any]] = []


def records(request: HandlerRequest) -> str:
    SEEN.append(
        {
            "continuation": request.is_continuation,
            "turn": request.turn,
            "version": request.version,
            "binding": request.binding,
            "caller": request.caller,
            "extensions": request.extensions,
            "metadata": request.metadata,
        }
    )
    if not request.is_continuation:
        request.input_required("and?")
        return None
    return "ok"


def test_the_request_says_who_calls_and_how(settings, store):
    SEEN.clear()
    settings.A2A_HANDLER = f"{HERE}.records"
    first = CallContext(caller="alice", version="0.3", binding="rest", extensions=("urn:x-ext",))
    params = SendParams(message=v03_message("hi"), blocking=True, metadata={"trace": "t-1"})
    asked = asyncio.run(operations.send_message(params, first))
    second = CallContext(caller="alice", version="1.0", binding="jsonrpc")
    done = send_direct("more", ctx=second, taskId=asked["id"])
    assert done["status"]["state"] == "completed"
    assert SEEN == [
        {
            "continuation": False,
            "turn": 1,
            "version": "0.3",
            "binding": "rest",
            "caller": "alice",
            "extensions": ("urn:x-ext",),
            "metadata": {"trace": "t-1"},
        },
        {
            "continuation": True,
            "turn": 2,
            "version": "1.0",
            "binding": "jsonrpc",
            "caller": "alice",
            "extensions": (),
            "metadata": {"trace": "t-1"},
        },
    ]
    # kept on the task (private), so a queue worker's request says the same
    stored = store.get(done["id"])
    again = HandlerRequest.for_task(stored)
    assert (again.turn, again.version, again.binding, again.caller) == (2, "1.0", "jsonrpc", "alice")
    shown = asyncio.run(operations.get_task(GetParams(id=done["id"]), second))
    assert "_call" in shown  # canonical; the dialects drop private keys when rendering


def test_private_call_record_is_not_rendered(settings):
    settings.A2A_HANDLER = "a2a.handlers.echo"
    message = {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]}
    answer = WireClient().rpc("SendMessage", {"message": message}, headers={"A2A-Extensions": "urn:x-ext"})
    result = answer["result"]["task"]
    assert "_call" not in json.dumps(result)
    stored = get_task_store().get(result["id"])
    assert stored["_call"]["binding"] == "jsonrpc" and stored["_call"]["extensions"] == ["urn:x-ext"]


# --- the class form -----------------------------------------------------------------------

CLASS_LOG: list[str] = []


class Agent(AgentHandler):
    def setup(self) -> None:
        CLASS_LOG.append("setup")

    def handle(self, request: HandlerRequest) -> str:
        if request.text == "wait":
            request.wait_cancelled(10)
            return "late"
        return f"handled {request.text}"

    def cancel(self, request: HandlerRequest) -> None:
        CLASS_LOG.append(f"cancel {request.task_id}")


class AsyncAgent(AgentHandler):
    direct_reply = True

    async def handle(self, request: HandlerRequest) -> Any:
        return Reply("hi from a class")


def test_class_form_is_set_up_once(settings, store):
    CLASS_LOG.clear()
    settings.A2A_HANDLER = f"{HERE}.Agent"
    assert send_direct("a")["artifacts"][0]["parts"][0]["text"] == "handled a"
    assert send_direct("b")["artifacts"][0]["parts"][0]["text"] == "handled b"
    assert CLASS_LOG == ["setup"]
    task = send_direct("wait", blocking=False)
    wait_until(lambda: store.get(task["id"])["status"]["state"] == "working", timeout=10)
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    wait_until(lambda: len(CLASS_LOG) == 2, timeout=10)
    assert CLASS_LOG[1:] == [f"cancel {task['id']}"]
    settings.A2A_HANDLER = f"{HERE}.AsyncAgent"
    assert texts(send_direct("x")) == ["hi from a class"]


# --- failures a developer can debug -------------------------------------------------------


def lookup(request: HandlerRequest) -> str:
    return {"town": "Paris"}["city"]


def test_an_exception_is_logged_with_its_traceback_and_hidden_from_the_client(settings, caplog):
    settings.A2A_HANDLER = f"{HERE}.lookup"
    with caplog.at_level(logging.INFO, logger="a2a.runtime.runner"):
        task = send_direct("x")
    assert texts(task["status"]["message"]) == ["The agent failed: KeyError"]
    [record] = [r for r in caplog.records if r.exc_info]
    assert task["id"] in record.getMessage() and "KeyError" in record.getMessage()
    assert record.levelno == logging.ERROR
    assert "lookup" in caplog.text and 'return {"town": "Paris"}["city"]' in caplog.text  # the traceback


def test_debug_shows_more(settings):
    settings.A2A_HANDLER = f"{HERE}.lookup"
    settings.DEBUG = True
    [text] = texts(send_direct("x")["status"]["message"])
    assert text.startswith("The agent failed: KeyError: 'city' (test_handler_api.py, line ")
    assert text.endswith("in lookup)")


def test_an_explicit_failure_is_shown_as_written_without_a_traceback(settings, caplog):
    settings.A2A_HANDLER = f"{HERE}.raising"
    with caplog.at_level(logging.INFO, logger="a2a.runtime.runner"):
        task = send_direct("fail")
    assert texts(task["status"]["message"]) == ["No such city: Atlantis"]
    assert not [r for r in caplog.records if r.exc_info]
