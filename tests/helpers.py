"""What many tests need, one copy each: waiting for a task or a condition, and HTTP
requests to the project's ASGI application in this process or to a live server (the
test kit's :class:`~a2a.testing.client.WireClient`, which also builds the messages)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection
from typing import Any

import httpx
from prometheus_client import REGISTRY

from a2a.protocol.model import SendParams
from a2a.service import operations
from a2a.service.context import CallContext
from a2a.testing.client import WireClient, v03_message, v10_message
from bench import lifecycle
from stores.base import StoreUnavailable, Task, TaskStore


def wait_for_state(store: TaskStore, task_id: str, states: Collection[str], timeout: float = 10.0) -> Task:
    """The task once it is in one of ``states`` (a store that cannot read right now is
    asked again); AssertionError naming where it stood after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    task = None
    while time.monotonic() < deadline:
        try:
            task = store.get(task_id)
        except StoreUnavailable:
            task = None
        if task and task["status"]["state"] in states:
            return task
        time.sleep(0.01)
    raise AssertionError(f"task {task_id} never reached {set(states)}: {task}")


def wait_until(predicate: Callable[[], Any], *, timeout: float = 5.0, what: str = "a condition") -> Any:
    """``predicate()``'s first truthy value, asked every 10 ms; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


#: Requests to the project's ASGI application in this process (built once), through the
#: test kit's wire client; no ``A2A-Version`` header unless a request names one.
ASGI = WireClient(version=None)


def asgi_app() -> Any:
    """The project's ASGI application (``a2a.asgi``), built once."""
    return ASGI.application()


def asgi_scope(path: str = "/a2a/", *, method: str = "POST", headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The ASGI scope of an HTTP request, for a test that calls the application with a
    ``receive`` and ``send`` of its own (a client that goes away): JSON content, then ``headers``."""
    return lifecycle.scope(path, method=method, headers=headers, host="testserver")


def http(method: str, path: str, *, content: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
    """One request to :func:`asgi_app`, through httpx's ASGI transport (no server)."""
    return ASGI.request(method, path, content=content, headers=headers)


def call(method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request to a newly built ASGI application, so that the settings the test
    changed (``MIDDLEWARE`` among them) apply; ``json=``, ``headers=``, ``content=``."""
    return WireClient(version=None).request(method, path, **kwargs)


def rpc10(method: str, params: Any, headers: dict[str, str] | None = None) -> Any:
    """A v1.0 JSON-RPC call to a newly built ASGI application: the whole envelope."""
    return WireClient().rpc(method, params, headers=headers)


def live_rpc(base: str, method: str, params: Any, headers: dict[str, str] | None = None) -> Any:
    """A JSON-RPC call to the live server at ``base`` (no ``A2A-Version`` unless in
    ``headers``): the whole envelope."""
    return WireClient(base_url=base, version=None).rpc(method, params, headers=headers)


def live_result(base: str, method: str, params: Any, http: httpx.Client | None = None) -> Any:
    """A v1.0 JSON-RPC call to the live server at ``base`` (on ``http``'s connections when
    given): its result; AssertionError with the envelope when it is an error."""
    return WireClient(base_url=base, http=http, timeout=20).result(method, params)


def live_submit(base: str, text: str, http: httpx.Client | None = None) -> str:
    """A non-blocking v1.0 SendMessage to the live server at ``base``: the task's id,
    once the answer says it is submitted."""
    task = WireClient(base_url=base, http=http, timeout=20).send(text, blocking=False)["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    return task["id"]


def send_wire(text: str, *, task_id: str | None = None, context_id: str | None = None) -> Task:
    """A blocking v1.0 SendMessage of ``text`` through the JSON-RPC binding (the whole
    request path); ``task_id``/``context_id`` for a follow-up turn: the task as answered."""
    return WireClient().send(text, task_id=task_id, context_id=context_id)["task"]


def send_direct(
    text_or_message: str | dict,
    *,
    blocking: bool = True,
    metadata: dict | None = None,
    ctx: CallContext | None = None,
    **fields: Any,
) -> dict:
    """SendMessage through the operation itself, no binding (as the bindings call it):
    the task (or message) as answered. A text becomes a v0.3 user message; ``fields`` go
    on the message (``contextId``, ``taskId``, ``metadata``)."""
    if isinstance(text_or_message, str):
        message = v03_message(text_or_message, **fields)
    else:
        message = {**text_or_message, **fields}
    params = SendParams(message=message, blocking=blocking, metadata=metadata)
    return asyncio.run(operations.send_message(params, ctx) if ctx else operations.send_message(params))


def sse(
    method: str, url: str, *, on_first: Callable[[], Any] | None = None, raw: list | None = None, **kwargs: Any
) -> list[dict]:
    """Every SSE data frame of a streaming request to a live server, until it closes the
    stream (calling ``on_first`` once the first frame is in; every line into ``raw``)."""
    return WireClient(base_url=url, version=None).stream(method, url, on_first=on_first, raw=raw, **kwargs)


def metric_sample(name: str, **labels: str) -> float:
    """The sum of the Prometheus samples of ``name`` whose labels include ``labels`` (over
    every agent unless ``agent`` is one of them)."""
    return sum(
        s.value
        for family in REGISTRY.collect()
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    )


__all__ = [
    "ASGI",
    "asgi_app",
    "asgi_scope",
    "call",
    "http",
    "metric_sample",
    "rpc10",
    "send_direct",
    "sse",
    "v03_message",
    "v10_message",
    "wait_for_state",
    "wait_until",
]
