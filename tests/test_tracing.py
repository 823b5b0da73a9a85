"""Tracing (A2A_TRACING): OpenTelemetry spans for the operations, the handler run, store
calls and push delivery, joined to an incoming W3C ``traceparent``, recorded by the
SDK's InMemorySpanExporter."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from a2a import push
from a2a.core import tracing
from a2a.handlers import HandlerRequest, Reply, direct_reply
from a2a.protocol.model import CancelParams
from a2a.service import operations
from a2a.testing import WireClient
from a2a.testing.client import rpc_body
from stores.backends import get_task_store
from tests.helpers import call
from tests.helpers import rpc10 as rpc
from tests.push.support import Receiver
from tests.test_executor import queue, run_jobs  # noqa: F401 (queue is a fixture)

pytestmark = pytest.mark.django_db

V10 = {"A2A-Version": "1.0"}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"

_EXPORTER = InMemorySpanExporter()
_THREADS: dict[str, str] = {}


@direct_reply
def replying(request: HandlerRequest) -> Reply | str:
    """A direct_reply handler: a Message for "ping", else a task with a progress update."""
    if request.text == "ping":
        return Reply("pong")
    request.progress("on it")
    return "done"


def threaded(request: HandlerRequest) -> str:
    """A handler noting the thread it ran on and saving a progress update from it."""
    _THREADS[request.task_id] = threading.current_thread().name
    request.progress("halfway")
    return "done"


@pytest.fixture
def store_kind() -> str:
    return "memory"  # every store is traced alike (the spans are around its calls)


@pytest.fixture(scope="module", autouse=True)
def _provider():
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the first (and only) provider of this process
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def spans(settings):
    settings.A2A_TRACING = True
    settings.A2A_HANDLER = "tests.test_tracing.threaded"
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def message(text: str = "hi") -> dict:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}


def named(exporter: InMemorySpanExporter, name: str) -> list:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(exporter: InMemorySpanExporter, name: str):
    found = named(exporter, name)
    assert len(found) == 1, (name, [s.name for s in exporter.get_finished_spans()])
    return found[0]


def wait_for_span(exporter: InMemorySpanExporter, name: str, timeout: float = 10.0):
    for _ in range(int(timeout / 0.01)):
        if named(exporter, name):
            return named(exporter, name)[0]
        threading.Event().wait(0.01)
    raise AssertionError(f"no span {name}: {[s.name for s in exporter.get_finished_spans()]}")


def test_send_message_spans_join_the_incoming_traceparent(spans, use_store):
    task = rpc("SendMessage", {"message": message(), "tenant": "acme"}, {"traceparent": TRACEPARENT})["result"]["task"]
    operation = one(spans, "a2a SendMessage")
    assert format(operation.context.trace_id, "032x") == TRACE_ID
    assert operation.parent is not None and operation.parent.is_remote
    assert format(operation.parent.span_id, "016x") == PARENT_ID
    assert operation.kind == trace.SpanKind.SERVER
    attributes = dict(operation.attributes)
    assert attributes["a2a.task_id"] == task["id"]
    assert attributes["a2a.context_id"] == task["contextId"]
    assert attributes["a2a.method"] == "SendMessage"
    assert attributes["a2a.binding"] == "jsonrpc"
    assert attributes["a2a.version"] == "1.0"
    assert attributes["a2a.tenant"] == "acme"
    # The store's save of the new task: a child of the operation.
    create = one(spans, "a2a.store create")
    assert create.parent.span_id == operation.context.span_id
    assert create.attributes["a2a.task_id"] == task["id"]
    # The handler ran on the runner's pool, a child of the operation that created the task.
    handler = wait_for_span(spans, "a2a.handler")
    assert _THREADS[task["id"]].startswith("a2a-handler")
    assert handler.context.trace_id == operation.context.trace_id
    assert handler.parent.span_id == operation.context.span_id
    assert handler.attributes["a2a.task_id"] == task["id"]
    assert handler.attributes["a2a.context_id"] == task["contextId"]
    # The handler's own saves (its progress update, on its thread) are children of its span.
    saves = [s for s in named(spans, "a2a.store save") if s.parent and s.parent.span_id == handler.context.span_id]
    assert saves, [(s.name, s.parent) for s in spans.get_finished_spans()]
    # The trace context is kept with the task (private: never shown to a client).
    stored = get_task_store().get(task["id"])
    assert stored["_trace"]["traceparent"].split("-")[1] == TRACE_ID
    assert "_trace" not in rpc("GetTask", {"id": task["id"], "tenant": "acme"})["result"]


def test_rest_operation_span_and_traceparent(spans, use_store):
    task = rpc("SendMessage", {"message": message()})["result"]["task"]
    spans.clear()
    response = call("GET", f"/a2a/rest/tasks/{task['id']}", headers={**V10, "traceparent": TRACEPARENT})
    assert response.status_code == 200
    operation = one(spans, "a2a GetTask")
    assert format(operation.context.trace_id, "032x") == TRACE_ID
    assert format(operation.parent.span_id, "016x") == PARENT_ID
    attributes = dict(operation.attributes)
    assert attributes["a2a.binding"] == "rest" and attributes["a2a.method"] == "GET tasks/{task_id}"
    assert attributes["a2a.task_id"] == task["id"] and attributes["a2a.context_id"] == task["contextId"]
    get = one(spans, "a2a.store get")
    assert get.parent.span_id == operation.context.span_id


def test_every_operation_has_its_span(spans, use_store, settings):
    settings.A2A_PUSH_NOTIFICATIONS = True
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True
    task_id = rpc("SendMessage", {"message": message()})["result"]["task"]["id"]
    rpc("ListTasks", {})
    rpc("CancelTask", {"id": task_id})
    rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "id": "c1", "url": "http://127.0.0.1:9/h"})
    rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})
    rpc("ListTaskPushNotificationConfigs", {"taskId": task_id})
    rpc("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})
    names = {s.name for s in spans.get_finished_spans()}
    for operation in (
        "ListTasks",
        "CancelTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ):
        assert f"a2a {operation}" in names, (operation, names)
    assert one(spans, "a2a.store list").parent.span_id == one(spans, "a2a ListTasks").context.span_id


def test_an_invalid_traceparent_starts_a_new_trace(spans, use_store):
    rpc("SendMessage", {"message": message()}, {"traceparent": "00-not-a-trace-01"})
    operation = one(spans, "a2a SendMessage")
    assert operation.parent is None


def test_the_handler_run_joins_the_trace_from_a_queue_worker(spans, queue, use_store):  # noqa: F811
    response = call(
        "POST",
        "/a2a/rest/message:send",
        json={"message": message(), "configuration": {"returnImmediately": True}},
        headers={**V10, "traceparent": TRACEPARENT},
    )
    task_id = response.json()["task"]["id"]
    operation = one(spans, "a2a SendMessage")
    assert not named(spans, "a2a.handler")  # only queued
    assert run_jobs(queue) == [task_id]  # the worker: another context, later
    handler = wait_for_span(spans, "a2a.handler")
    assert format(handler.context.trace_id, "032x") == TRACE_ID
    assert handler.parent.span_id == operation.context.span_id


def test_push_delivery_span_and_outgoing_traceparent(spans, use_store, settings):
    settings.A2A_PUSH_NOTIFICATIONS = True
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True
    receiver = Receiver()
    try:
        config = {"url": receiver.url()}
        params = {"message": message(), "configuration": {"taskPushNotificationConfig": config}}
        task = rpc("SendMessage", params, {"traceparent": TRACEPARENT})["result"]["task"]
        receiver.wait_for(2)
        assert push.wait_idle()
    finally:
        receiver.close()
        push.shutdown(grace=0)
    deliveries = named(spans, "a2a.push")
    assert deliveries
    for delivery in deliveries:
        assert format(delivery.context.trace_id, "032x") == TRACE_ID
        assert delivery.kind == trace.SpanKind.CLIENT
        assert delivery.attributes["a2a.task_id"] == task["id"]
        assert delivery.attributes["server.address"] == "127.0.0.1"
    sent = {hit.headers["traceparent"].split("-")[2] for hit in receiver.hits}
    assert sent <= {format(d.context.span_id, "016x") for d in deliveries}
    assert all(hit.headers["traceparent"].split("-")[1] == TRACE_ID for hit in receiver.hits)


def test_tracing_off_makes_no_spans_and_keeps_no_trace(settings, use_store):
    settings.A2A_TRACING = False
    _EXPORTER.clear()
    task = rpc("SendMessage", {"message": message()}, {"traceparent": TRACEPARENT})["result"]["task"]
    assert _EXPORTER.get_finished_spans() == ()
    assert "_trace" not in get_task_store().get(task["id"])
    assert tracing.operation("GetTask", None) is tracing.OFF  # type: ignore[arg-type]
    assert tracing.store("get", "t") is tracing.OFF and tracing.carrier() is None


def test_without_opentelemetry_tracing_is_off(settings, monkeypatch):
    settings.A2A_TRACING = True
    monkeypatch.setattr(tracing, "otel_trace", None)
    monkeypatch.setattr(tracing, "_enabled", None)
    assert not tracing.enabled()
    assert tracing.handler({"id": "t"}) is tracing.OFF
    assert tracing.incoming(TRACEPARENT) is None


def test_streams_have_their_spans(spans, use_store, settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    response = call("POST", "/a2a/rest/message:stream", json={"message": message("ask:more?")}, headers=V10)
    assert response.status_code == 200 and "TASK_STATE_INPUT_REQUIRED" in response.text
    operation = one(spans, "a2a SendStreamingMessage")
    task_id = operation.attributes["a2a.task_id"]
    assert operation.attributes["a2a.method"] == "POST message:stream"
    # SubscribeToTask on the interrupted task: its span, then the stream (ended by a cancel, if still open).
    body = rpc_body("SubscribeToTask", {"id": task_id})

    async def subscribe_then_cancel() -> str:
        # httpx's ASGI transport answers once the app finished: the subscription stays open
        # (the task waits for input) until the cancel, made from another thread, ends it.
        canceler = threading.Timer(0.5, lambda: asyncio.run(operations.cancel_task(CancelParams(id=task_id))))
        canceler.start()
        response = await WireClient(version=None).arequest("POST", "/a2a/", json=body, headers=V10)
        canceler.join()
        return response.text

    assert task_id in asyncio.run(subscribe_then_cancel())
    subscribed = one(spans, "a2a SubscribeToTask")
    assert subscribed.attributes["a2a.task_id"] == task_id
    assert subscribed.attributes["a2a.context_id"]


@pytest.mark.parametrize("text", ["ping", "long"])
def test_a_direct_reply_stream_has_its_span(spans, use_store, settings, text):
    """Every operation is traced alike (@tracing.traced): a stream answered by a direct_reply
    handler too, its setup (the handler's direct run) in the span."""
    settings.A2A_HANDLER = "tests.test_tracing.replying"
    headers = {**V10, "traceparent": TRACEPARENT}
    response = call("POST", "/a2a/rest/message:stream", json={"message": message(text)}, headers=headers)
    assert response.status_code == 200 and ("pong" in response.text if text == "ping" else "done" in response.text)
    operation = one(spans, "a2a SendStreamingMessage")
    assert format(operation.context.trace_id, "032x") == TRACE_ID
    assert operation.attributes["a2a.method"] == "POST message:stream"
    if text != "ping":  # a task was created: its handler run is in the operation's trace
        handler = wait_for_span(spans, "a2a.handler")
        assert handler.parent.span_id == operation.context.span_id


def test_traced_off_calls_the_function_as_it_is(settings):
    settings.A2A_TRACING = False

    async def answer(params, ctx):
        return params

    async def items(params, ctx):
        yield params

    called = tracing.traced("CancelTask", task_id="id")(answer)(CancelParams(id="t"), None)
    assert called.cr_code is answer.__code__  # the function's own coroutine: no layer added when off
    assert asyncio.run(called) == CancelParams(id="t")
    made = tracing.traced("SubscribeToTask", task_id="id")(items)(CancelParams(id="t"), None)
    assert made.ag_code is items.__code__  # likewise its own generator
    assert asyncio.run(anext(made)) == CancelParams(id="t")
    assert asyncio.iscoroutinefunction(operations.get_task)  # still an async function to whoever asks
    with pytest.raises(TypeError):
        tracing.traced("GetTask")(lambda params, ctx: params)
