"""What the push tests (tests/push/) share: the webhook receiver on 127.0.0.1, JSON-RPC calls in
both dialects, a log watcher (the fixtures are in conftest.py)."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from a2a.protocol.model import new_task, set_status
from a2a.testing.client import send_params
from tests.helpers import ASGI

V10, V03 = "1.0", None  # the A2A-Version header each dialect sends
V11 = "1.1"  # the 1.1 draft: v1.0's shapes, plus the task's generation
DIALECTS = [V10, V03]
PUSH_METHODS = {
    V10: (
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ),
    V03: (
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    ),
}


# --- the webhook receiver -------------------------------------------------------------------


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""  # the body's bytes as received

    @property
    def state(self) -> str:
        """The task state the delivery reports, in either dialect's shape."""
        task = self.body.get("task", self.body)
        return task["status"]["state"]


class Receiver:
    """A webhook on 127.0.0.1: records every POST, answers ``script`` codes (or (code,
    headers) pairs) then 200."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self.script: list[int | tuple[int, dict[str, str]]] = []
        self.release = threading.Event()
        self.release.set()  # clear it to hold each request until it is set again
        self.cond = threading.Condition()
        self.in_flight = 0
        self.max_in_flight = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.cond:
                    receiver.in_flight += 1
                    receiver.max_in_flight = max(receiver.max_in_flight, receiver.in_flight)
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    receiver.hits.append(Hit(self.path, headers, json.loads(body), body))
                    answer = receiver.script.pop(0) if receiver.script else 200
                    status, extra = answer if isinstance(answer, tuple) else (answer, {})
                    receiver.cond.notify_all()
                receiver.release.wait(30)
                with receiver.cond:
                    receiver.in_flight -= 1
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (a deleted config) is not a test failure

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), name="webhook", daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_for(self, count: int, timeout: float = 15) -> list[Hit]:
        with self.cond:
            ok = self.cond.wait_for(lambda: len(self.hits) >= count, timeout)
            assert ok, f"the webhook got {len(self.hits)} of {count} requests: {[h.state for h in self.hits]}"
            return list(self.hits)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


# --- JSON-RPC plumbing ---------------------------------------------------------------------


def ok(method: str, params: Any, *, version: str | None = None) -> Any:
    answer = ASGI.rpc(method, params, version=version, status=200)
    assert "error" not in answer, answer
    return answer["result"]


def fails(method: str, params: Any, code: int, *, version: str | None = None) -> dict:
    answer = ASGI.rpc(method, params, version=version, status=200)
    assert "result" not in answer, answer
    assert answer["error"]["code"] == code, answer["error"]
    return answer["error"]


def error_field(error: dict, version: str | None) -> str | None:
    if version == V10:
        violations = [d for d in error.get("data", ()) if d["@type"].endswith("BadRequest")]
        return violations[0]["fieldViolations"][0]["field"] if violations else None
    return (error.get("data") or {}).get("field")


def message(version: str | None, text: str = "hello") -> dict:
    if version == V10:
        return {"role": "ROLE_USER", "messageId": f"m-{time.monotonic_ns()}", "parts": [{"text": text}]}
    return {
        "kind": "message",
        "role": "user",
        "messageId": f"m-{time.monotonic_ns()}",
        "parts": [{"kind": "text", "text": text}],
    }


def task_with_push(version: str | None, config: dict, *, blocking: bool = True) -> dict:
    """A task made by SendMessage with an inline push config; the task as answered (canonical keys)."""
    key = "taskPushNotificationConfig" if version == V10 else "pushNotificationConfig"
    params = send_params(message(version), version, blocking=blocking, configuration={key: config})
    result = ok("SendMessage", params, version=version)
    return result["task"] if version == V10 else result


def create(version: str | None, task_id: str, url: str, **fields: Any) -> dict:
    """Create a config in the dialect's shape; the result as rendered."""
    if version == V10:
        return ok(PUSH_METHODS[V10][0], {"taskId": task_id, "url": url, **fields}, version=V10)
    return ok(PUSH_METHODS[V03][0], {"taskId": task_id, "pushNotificationConfig": {"url": url, **fields}})


def a_task(store, state: str = "working") -> str:
    """A task saved straight into the store (no event, no runner)."""
    task = set_status(new_task(message(V03), context_id="ctx"), state)
    store.save(task)
    return task["id"]


class Seen(logging.Handler):
    """Sets ``event`` when a record from ``a2a.push`` contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()
