"""U+0000 (NUL) from a client or a handler, on every store (memory, file, ORM on SQLite,
ORM on PostgreSQL when configured) and every binding (JSON-RPC v1.0 and v0.3, REST
v1.0 and v0.3): the same answer everywhere, never an internal error.

The rule (docs/protocol.md, the NUL item): an *id* holding NUL (task, context, message, push
config id; a lookup too) is invalid params (-32602, HTTP 400) before any store is
asked; *content* holding NUL (text, data, metadata, a handler's result) is kept
faithfully and read back as sent, PostgreSQL's ``jsonb`` included (which cannot hold
``\\u0000``: see ``stores.models.NulSafeJSONField``). And an outcome a store refuses
(a value it cannot hold, a broken constraint, a task that cannot be serialized) fails
the task at once, naming the reason, instead of being retried for ten leases and then
failed as "the process stopped"."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.db import DataError, IntegrityError, OperationalError

from a2a.handlers import HandlerRequest
from a2a.runtime.refusals import UNSAVABLE_MESSAGE
from a2a.testing import Binding
from stores.base import StoreError
from stores.models import NUL_WRAPPER, NulSafeDecoder, NulSafeEncoder
from tests.db_marks import store_params
from tests.helpers import ASGI

NUL = "\x00"
TEXT = f"before{NUL}after"
DATA = {f"key{NUL}": [f"value{NUL}", {"deep": NUL}]}
METADATA = {"note": f"meta{NUL}data", f"k{NUL}": 1}
#: JSON-RPC and HTTP+JSON, each in v1.0 and v0.3.
BINDINGS = [
    pytest.param(Binding(name, version, ASGI), id=f"{name}-{version}")
    for name, version in (("jsonrpc", "1.0"), ("jsonrpc", "0.3"), ("rest", "1.0"), ("rest", "0.3"))
]
#: JSON-RPC v1.0, for the tests of one binding.
V10 = Binding("jsonrpc", "1.0", ASGI)


@pytest.fixture(params=store_params(transaction=True))
def store_kind(request) -> str:
    """Each store; an ORM one in real transactions (the runner's threads see its rows)."""
    return request.param


@pytest.fixture(autouse=True)
def _quick(settings):
    settings.A2A_BLOCKING_TIMEOUT = 10.0
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True


# --- every binding ----------------------------------------------------------------------


def message(way: Binding, text: str = "hello", data: Any = None, **ids: str) -> dict[str, Any]:
    """A user message in the binding's shape: a text part (and a data part)."""
    msg = way.message(text, **ids)
    if data is None:
        return msg
    if way.v03_rest:  # v0.3's proto Message: its DataPart wraps a Struct
        msg["content"] = [*msg["content"], {"data": {"data": data}}]
    else:
        msg["parts"] = [*msg["parts"], {"data": data} if way.v10 else {"kind": "data", "data": data}]
    return msg


def outcome(way: Binding, operation: str, **params: Any) -> tuple[str, Any]:
    """Run ``operation`` (send, get, cancel, list) through ``way``: ("ok", result) or
    ("error", its JSON-RPC code), the REST reason mapped to its code. Never an internal
    error or an HTTP 500 (asserted). A send blocks, as each version says it."""
    if operation == "send":
        params.setdefault("configuration", {} if way.v10 else {"blocking": True})
    response = way.call(operation, params, None)
    if way.name == "jsonrpc":
        assert response.status_code == 200, response.text
        assert response.json().get("error", {}).get("code") != -32603, response.text
    assert response.status_code < 500, response.text
    if response.status_code >= 400 or "error" in response.json():
        return "error", way.error(response).code
    return "ok", way.result(response)


def task_of(result: dict[str, Any]) -> dict[str, Any]:
    return result.get("task", result)


def strings(value: Any) -> set[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set(value) | {s for v in value.values() for s in strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in strings(v)}
    return set()


# === ids: invalid params on every store and binding, before any store is asked ========


def _id_cases(binding: Binding) -> dict[str, tuple[str, dict[str, Any]]]:
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "get": ("get", {"id": NUL}),
        "get-inside": ("get", {"id": f"task{NUL}id"}),
        "cancel": ("cancel", {"id": f"task{NUL}"}),
        "list-by-context": ("list", {"contextId": f"ctx{NUL}"}),
    }
    for key in ("taskId", "contextId", "messageId"):
        cases[f"send-{key}"] = ("send", {"message": message(binding, **{key: f"x{NUL}y"})})
    return cases


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_id_holding_nul_is_invalid_params_on_every_store(use_store, binding):
    answers = {name: outcome(binding, operation, **params) for name, (operation, params) in _id_cases(binding).items()}
    assert answers == {name: ("error", -32602) for name in answers}
    assert use_store.list().total_size == 0  # nothing was created


def test_push_config_ids_holding_nul_are_invalid_params_on_every_store(use_store):
    task_id = task_of(outcome(V10, "send", message=message(V10))[1])["id"]
    hook = {"url": "http://127.0.0.1:9/hook"}
    for method, params in [
        ("CreateTaskPushNotificationConfig", {"taskId": task_id, "id": f"c{NUL}", **hook}),
        ("CreateTaskPushNotificationConfig", {"taskId": f"t{NUL}", **hook}),
        ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": f"c{NUL}"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": f"c{NUL}"}),
        ("ListTaskPushNotificationConfigs", {"taskId": f"t{NUL}"}),
    ]:
        answer = ASGI.rpc(method, params, version="1.0")
        assert answer.get("error", {}).get("code") == -32602, (method, params, answer)
    response = ASGI.request("GET", f"/a2a/rest/tasks/{task_id}/pushNotificationConfigs/c%00", version="1.0")
    assert response.status_code == 400, response.text


def test_a_push_config_holding_nul_comes_back_as_sent_on_every_store(use_store):
    """Content of a push config (its URL's path here) is kept like a task's."""
    task_id = task_of(outcome(V10, "send", message=message(V10))[1])["id"]
    url = f"http://127.0.0.1:9/hook{NUL}path"
    answers = []
    for method, params in [
        ("CreateTaskPushNotificationConfig", {"taskId": task_id, "id": "c1", "url": url}),
        ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}),
    ]:
        answers.append(ASGI.rpc(method, params, version="1.0"))
    assert [a.get("result", a).get("url") for a in answers] == [url, url], answers


# === content: kept faithfully on every store ========================================


@pytest.mark.parametrize("binding", BINDINGS)
def test_content_holding_nul_comes_back_as_sent_on_every_store(use_store, binding):
    """Text, data, message metadata and request metadata holding NUL: the task is
    created, run (the echo handler answers with the text, NUL included), and read
    back, stored and over the wire, exactly as sent."""
    metadata = {"metadata": METADATA} if not binding.v03_rest else {}
    status, result = outcome(binding, "send", message=message(binding, TEXT, DATA, metadata=METADATA), **metadata)
    assert status == "ok", result
    task_id = task_of(result)["id"]
    stored = use_store.get(task_id)
    assert stored["status"]["state"] == "completed", stored
    sent = stored["history"][0]
    assert [p.get("text", p.get("data")) for p in sent["parts"]] == [TEXT, DATA]
    assert sent["metadata"] == METADATA
    if metadata:
        assert stored["metadata"] == METADATA
    assert stored["artifacts"][0]["parts"][0]["text"] == f"echo: {TEXT}"
    status, fetched = outcome(binding, "get", id=task_id)
    assert status == "ok", fetched
    assert {TEXT, f"echo: {TEXT}", "key\x00", "value\x00", NUL, "meta\x00data"} <= strings(fetched)
    status, page = outcome(binding, "list", contextId=stored["contextId"])
    assert status == "ok" and TEXT in strings(page), page


def test_the_orm_field_round_trips_any_document():
    """The wrapper is written only when a NUL is there, and reads back as it was; a
    literal backslash-u0000 in the data stays six characters."""
    for value in [
        {"id": "t", "text": TEXT},
        {"id": "t", "text": "\\u0000 is six characters here"},
        {"id": "t", "both": ["\\u0000", NUL, "\\\x00"]},
        {"id": "t", "plain": "é✓"},
        {NUL: NUL},
        [NUL],
        NUL,
    ]:
        text = json.dumps(value, cls=NulSafeEncoder)
        assert "\\u0000" not in text.replace("\\\\u0000", "")  # no NUL escape left for jsonb to refuse
        assert json.loads(text, cls=NulSafeDecoder) == value
    assert json.dumps({"id": "t"}, cls=NulSafeEncoder) == '{"id": "t"}'  # no wrapper when not needed
    assert NUL_WRAPPER in json.loads(json.dumps({"x": NUL}, cls=NulSafeEncoder))


# === a handler's result: saved faithfully, or refused at once with the reason ==========


def nul_result(request: HandlerRequest) -> dict[str, Any]:
    """A handler answering with a data part holding NUL, and progress holding NUL."""
    request.progress(f"working{NUL}on it")
    return {"kind": "data", "data": {"answer": f"forty{NUL}two", f"k{NUL}": [NUL]}}


def wait_settled(store, task_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = store.get(task_id)
        if task and task["status"]["state"] in ("completed", "failed", "canceled"):
            return task
        time.sleep(0.02)
    raise AssertionError(f"task {task_id} did not settle in {timeout} s: {store.get(task_id)}")


def test_a_handler_result_holding_nul_completes_with_it_intact(use_store, settings):
    settings.A2A_HANDLER = "tests.test_hostile_nul.nul_result"
    status, result = outcome(V10, "send", message=message(V10, "go"))
    assert status == "ok", result
    task = wait_settled(use_store, task_of(result)["id"], 5)
    assert task["status"]["state"] == "completed", task["status"]
    assert task["artifacts"][0]["parts"][0]["data"] == {"answer": f"forty{NUL}two", f"k{NUL}": [NUL]}


REFUSALS = {
    "DataError": DataError("value too long for type character varying(255)\nDETAIL: the data"),
    "IntegrityError": IntegrityError('new row violates check constraint "x"\nDETAIL: Failing row (secret)'),
    "serialization": TypeError("Type is not JSON serializable: set"),
    "StoreError-from-UnicodeError": StoreError("could not save the task: surrogates not allowed"),
}


def _refusing(store, error: Exception, outcome: str, attempts: list[str]):
    """``store.save``, refusing every task saved in state ``outcome`` with ``error``."""
    save = store.save

    def refusing_save(task, expected_version=None):
        if task["status"]["state"] == outcome:
            attempts.append(outcome)
            raise error
        return save(task, expected_version)

    return refusing_save


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_result_the_store_refuses_fails_the_task_at_once_with_the_reason(use_store, settings, refusal):
    """Not ten leases (here 300 s) of retries then "the process stopped": at once, once."""
    settings.A2A_LEASE_SECONDS = 30.0
    error = REFUSALS[refusal]
    if refusal == "StoreError-from-UnicodeError":
        error.__cause__ = UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
    attempts: list[str] = []
    use_store.save = _refusing(use_store, error, "completed", attempts)
    started = time.monotonic()
    status, result = outcome(V10, "send", message=message(V10, "hello"))
    assert status == "ok", result
    task = wait_settled(use_store, task_of(result)["id"], 5)
    assert time.monotonic() - started < 5
    assert task["status"]["state"] == "failed"
    reason = task["status"]["message"]["parts"][0]["text"]
    cause = error if refusal != "StoreError-from-UnicodeError" else error.__cause__
    assert reason.startswith(f"{UNSAVABLE_MESSAGE}: {type(cause).__name__}: "), reason
    assert str(cause).splitlines()[0] in reason
    assert "DETAIL" not in reason  # the database's further lines quote the data
    assert attempts == ["completed"]  # tried once, not retried
    assert "stopped" not in reason


def test_an_outage_while_saving_the_result_is_still_waited_out(use_store, settings):
    """A transient error (the connection lost) is retried: the result is kept."""
    attempts: list[str] = []
    save = use_store.save

    def flaky_save(task, expected_version=None):
        if task["status"]["state"] == "completed" and len(attempts) < 3:
            attempts.append("completed")
            raise OperationalError("server closed the connection unexpectedly")
        return save(task, expected_version)

    use_store.save = flaky_save
    status, result = outcome(V10, "send", message=message(V10, "hello"))
    assert status == "ok", result
    task = wait_settled(use_store, task_of(result)["id"], 5)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == "echo: hello"
    assert len(attempts) == 3
