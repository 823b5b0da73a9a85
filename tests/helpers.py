"""What many tests need, one copy each: waiting for a task or a condition, HTTP
requests to the project's ASGI application in this process, and the reference listing
the stores' indexes are checked against (:func:`page_in_memory`)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any

import httpx
import orjson
from prometheus_client import REGISTRY

from a2a.asgi import get_asgi_application
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


_app: Any = None


def asgi_app() -> Any:
    """The project's ASGI application (``a2a.asgi``), built once."""
    global _app
    if _app is None:
        _app = get_asgi_application()
    return _app


def http(method: str, path: str, *, content: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
    """One request to :func:`asgi_app`, through httpx's ASGI transport (no server)."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=asgi_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.request(method, path, content=content, headers=headers)

    return asyncio.run(go())


def v10_message(text: str, **extra: Any) -> dict:
    """A v1.0 user message with one text part."""
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def v03_message(text: str, **extra: Any) -> dict:
    """A v0.3 user message with one text part."""
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def sse(
    method: str, url: str, *, on_first: Callable[[], Any] | None = None, raw: list | None = None, **kwargs: Any
) -> list[dict]:
    """Every SSE data frame of a streaming request to a live server, until it closes the
    stream (calling ``on_first`` once the first frame is in; every line into ``raw``)."""
    events: list[dict] = []
    with httpx.stream(method, url, timeout=15, **kwargs) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if raw is not None:
                raw.append(line)
            if line.startswith("data: "):
                events.append(orjson.loads(line[6:]))
                if on_first is not None and len(events) == 1:
                    on_first()
    return events


def metric_sample(name: str, **labels: str) -> float:
    """The sum of the Prometheus samples of ``name`` whose labels include ``labels`` (over
    every agent unless ``agent`` is one of them)."""
    return sum(
        s.value
        for family in REGISTRY.collect()
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    )
