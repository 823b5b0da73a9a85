"""Push notifications end to end: the config methods in both dialects over JSON-RPC (the
real ASGI app, in-process), and deliveries to a real webhook receiver on 127.0.0.1.

The receiver is a small threaded HTTP server; it records each request on arrival, can
answer from a script of status codes, and can hold every request until the test lets
it go. Private URLs are allowed for these tests (the receiver is on loopback) except
where the SSRF guard itself is tested. Waiting is done on events (the receiver's
condition, ``push.wait_idle``), never by sleeping.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from a2a import push
from a2a.core import lifecycle
from a2a.protocol.model import new_task, set_status
from a2a.testing import WireClient
from stores.backends import get_task_store
from stores.memory import MemoryTaskStore
from tests.conftest import ALL_DATABASES, STORE_KINDS
from tests.helpers import ASGI

V10, V03 = "1.0", None  # the A2A-Version header each dialect sends
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

    @property
    def state(self) -> str:
        """The task state the delivery reports, in either dialect's shape."""
        task = self.body.get("task", self.body)
        return task["status"]["state"]


class Receiver:
    """A webhook on 127.0.0.1: records every POST, answers ``script`` codes then 200."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self.script: list[int] = []
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
                    receiver.hits.append(Hit(self.path, headers, json.loads(body)))
                    status = receiver.script.pop(0) if receiver.script else 200
                    receiver.cond.notify_all()
                receiver.release.wait(30)
                with receiver.cond:
                    receiver.in_flight -= 1
                self.send_response(status)
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


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _push_settings(settings):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True  # the receiver is on loopback
    settings.A2A_PUSH_RETRY_DELAY = 0.01
    settings.A2A_PUSH_TIMEOUT = 5.0
    yield
    push.shutdown(grace=0)


@pytest.fixture(autouse=True)
def dns(monkeypatch) -> dict[str, list[str]]:
    """Names the webhook resolver answers without the network: every ``*.example.com``
    is a public address; tests add names (and change answers) in the returned dict."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        addresses = answers.get(host) or (["93.184.216.34"] if host.endswith(".example.com") else None)
        if addresses is None:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in addresses]

    monkeypatch.setattr("a2a.push.socket.getaddrinfo", getaddrinfo)
    return answers


@pytest.fixture
def memory(settings):
    settings.TASK_STORE = MemoryTaskStore()
    return get_task_store()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- JSON-RPC plumbing ---------------------------------------------------------------------


def rpc(method: str, params: Any, *, version: str | None = None) -> dict:
    """One JSON-RPC call through the ASGI app; the whole envelope."""
    return ASGI.rpc(method, params, version=version, status=200)


def ok(method: str, params: Any, *, version: str | None = None) -> Any:
    answer = rpc(method, params, version=version)
    assert "error" not in answer, answer
    return answer["result"]


def fails(method: str, params: Any, code: int, *, version: str | None = None) -> dict:
    answer = rpc(method, params, version=version)
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


def send(version: str | None, config: dict, *, blocking: bool = True) -> dict:
    """SendMessage with an inline push config; the task as answered (canonical keys)."""
    key = "taskPushNotificationConfig" if version == V10 else "pushNotificationConfig"
    configuration = {key: config, **({"returnImmediately": not blocking} if version == V10 else {"blocking": blocking})}
    result = ok("SendMessage", {"message": message(version), "configuration": configuration}, version=version)
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


# === the config methods ============================================================================


@ALL_DATABASES  # the ORM stores, from the runner's threads too
@pytest.mark.parametrize("store_kind", ["memory", "file", "orm-sqlite"])
def test_v10_create_get_list_delete(use_store):
    task_id = a_task(use_store)
    url = "https://hooks.example.com/a2a"  # never called: nothing happens to the task
    made = create(V10, task_id, url, token="tok-1", authentication={"scheme": "Bearer", "credentials": "s3cret"})
    assert made == {
        "id": made["id"],
        "taskId": task_id,
        "url": url,
        "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "s3cret"},
    }
    assert made["id"]  # generated
    second = create(V10, task_id, "https://hooks.example.com/other", id="second")
    assert second == {"id": "second", "taskId": task_id, "url": "https://hooks.example.com/other"}

    get, list_, delete = PUSH_METHODS[V10][1:]
    assert ok(get, {"taskId": task_id, "id": made["id"]}, version=V10) == made
    assert ok(get, {"task_id": task_id, "id": "second"}, version=V10) == second  # proto field names too
    listed = ok(list_, {"taskId": task_id}, version=V10)
    assert listed == {"configs": [made, second], "nextPageToken": ""}

    assert ok(delete, {"taskId": task_id, "id": made["id"]}, version=V10) is None
    assert ok(list_, {"taskId": task_id}, version=V10) == {"configs": [second], "nextPageToken": ""}
    assert ok(delete, {"taskId": task_id, "id": made["id"]}, version=V10) is None  # idempotent
    error = fails(get, {"taskId": task_id, "id": made["id"]}, -32001, version=V10)
    assert made["id"] in error["message"] and "config" in error["message"]


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", ["memory", "file", "orm-sqlite"])
def test_a_config_created_while_its_task_is_deleted_is_not_kept(use_store, monkeypatch):
    """The task is deleted (with its configs) while the webhook URL is checked: the
    create answers task-not-found and leaves no config behind."""
    task_id = a_task(use_store)
    checked = push.check_url

    async def check_and_lose_the_task(url: str) -> None:
        await checked(url)
        await use_store.adelete(task_id)

    monkeypatch.setattr(push, "check_url", check_and_lose_the_task)
    error = fails(
        PUSH_METHODS[V10][0], {"taskId": task_id, "url": "https://hooks.example.com/a2a"}, -32001, version=V10
    )
    assert task_id in error["message"]
    assert use_store.push_configs.list_push_configs(task_id) == []


@ALL_DATABASES  # the ORM stores, from the runner's threads too
@pytest.mark.parametrize("store_kind", ["memory", "file", "orm-sqlite"])
def test_v03_set_get_list_delete(use_store):
    task_id = a_task(use_store)
    set_, get, list_, delete = PUSH_METHODS[V03]
    auth = {"schemes": ["Bearer"], "credentials": "s3cret"}
    first = ok(
        set_,
        {
            "taskId": task_id,
            "pushNotificationConfig": {"url": "https://a.example.com/", "token": "t", "authentication": auth},
        },
    )
    config_id = first["pushNotificationConfig"]["id"]
    assert first == {
        "taskId": task_id,
        "pushNotificationConfig": {
            "id": config_id,
            "url": "https://a.example.com/",
            "token": "t",
            "authentication": auth,
        },
    }
    second = ok(set_, {"taskId": task_id, "pushNotificationConfig": {"id": "b", "url": "https://b.example.com/"}})
    assert second == {"taskId": task_id, "pushNotificationConfig": {"id": "b", "url": "https://b.example.com/"}}

    assert ok(get, {"id": task_id, "pushNotificationConfigId": "b"}) == second
    assert ok(get, {"id": task_id}) == first  # no config id: the task's first config
    assert ok(list_, {"id": task_id}) == [first, second]  # a bare array

    assert ok(delete, {"id": task_id, "pushNotificationConfigId": config_id}) is None
    assert ok(list_, {"id": task_id}) == [second]
    assert ok(delete, {"id": task_id, "pushNotificationConfigId": config_id}) is None  # idempotent
    fails(get, {"id": task_id, "pushNotificationConfigId": config_id}, -32001)


def test_v03_set_with_an_existing_id_replaces_it(memory):
    task_id = a_task(memory)
    set_, _, list_, _ = PUSH_METHODS[V03]
    ok(set_, {"taskId": task_id, "pushNotificationConfig": {"id": "x", "url": "https://one.example.com/"}})
    ok(set_, {"taskId": task_id, "pushNotificationConfig": {"id": "x", "url": "https://two.example.com/"}})
    assert [c["pushNotificationConfig"]["url"] for c in ok(list_, {"id": task_id})] == ["https://two.example.com/"]


def test_toolnexus_dialect_v03_params_under_v10_method_names(memory):
    task_id = a_task(memory)
    made = ok(
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "pushNotificationConfig": {"url": "https://a.example.com/"}},
    )
    assert made["pushNotificationConfig"]["url"] == "https://a.example.com/"
    assert ok("ListTaskPushNotificationConfigs", {"id": task_id}) == [made]


def test_v10_list_pages(memory):
    task_id = a_task(memory)
    for name in ("a", "b", "c"):
        create(V10, task_id, f"https://{name}.example.com/", id=name)
    list_ = PUSH_METHODS[V10][2]
    page = ok(list_, {"taskId": task_id, "pageSize": 2}, version=V10)
    assert [c["id"] for c in page["configs"]] == ["a", "b"] and page["nextPageToken"]
    rest = ok(list_, {"taskId": task_id, "pageSize": 2, "pageToken": page["nextPageToken"]}, version=V10)
    assert [c["id"] for c in rest["configs"]] == ["c"] and rest["nextPageToken"] == ""
    error = fails(list_, {"taskId": task_id, "pageToken": "nope!"}, -32602, version=V10)
    assert error_field(error, V10) == "pageToken"


@pytest.mark.parametrize("version", DIALECTS)
def test_unknown_task_is_task_not_found(memory, version):
    create_, get, list_, delete = PUSH_METHODS[version]
    if version == V10:
        calls = [
            (create_, {"taskId": "nope", "url": "https://a.example.com/"}),
            (get, {"taskId": "nope", "id": "x"}),
            (list_, {"taskId": "nope"}),
            (delete, {"taskId": "nope", "id": "x"}),
        ]
    else:
        calls = [
            (create_, {"taskId": "nope", "pushNotificationConfig": {"url": "https://a.example.com/"}}),
            (get, {"id": "nope"}),
            (list_, {"id": "nope"}),
            (delete, {"id": "nope", "pushNotificationConfigId": "x"}),
        ]
    for method, params in calls:
        error = fails(method, params, -32001, version=version)
        assert "nope" in error["message"]


@pytest.mark.parametrize(
    ("version", "method", "params", "field"),
    [
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T"}, "url"),
        (V10, "CreateTaskPushNotificationConfig", {"url": "https://a.example.com/"}, "taskId"),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "ftp://a.example.com/"}, "url"),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "not a url"}, "url"),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "https://a.example.com:99999/"}, "url"),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {"taskId": "T", "url": "https://a.example.com/", "token": "a\r\nX: y"},
            "token",
        ),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {"taskId": "T", "url": "https://a.example.com/", "authentication": {}},
            "authentication.scheme",
        ),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {"taskId": "T", "url": "https://a.example.com/", "authentication": {"scheme": "Bad Scheme"}},
            "authentication.scheme",
        ),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {
                "taskId": "T",
                "url": "https://a.example.com/",
                "authentication": {"scheme": "Bearer", "credentials": "x\ny"},
            },
            "authentication.credentials",
        ),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "https://a.example.com/", "id": 5}, "id"),
        (V10, "GetTaskPushNotificationConfig", {"taskId": "T"}, "id"),
        (V10, "GetTaskPushNotificationConfig", {"id": "x"}, "taskId"),
        (V10, "DeleteTaskPushNotificationConfig", {"taskId": "T"}, "id"),
        (V10, "ListTaskPushNotificationConfigs", {}, "taskId"),
        (V10, "ListTaskPushNotificationConfigs", {"taskId": "T", "pageSize": -1}, "pageSize"),
        (V03, "tasks/pushNotificationConfig/set", {"taskId": "T"}, "pushNotificationConfig"),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {"taskId": "T", "pushNotificationConfig": {}},
            "pushNotificationConfig.url",
        ),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {"pushNotificationConfig": {"url": "https://a.example.com/"}},
            "taskId",
        ),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {
                "taskId": "T",
                "pushNotificationConfig": {"url": "https://a.example.com/", "authentication": {"credentials": "x"}},
            },
            "pushNotificationConfig.authentication.schemes",
        ),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {
                "taskId": "T",
                "pushNotificationConfig": {
                    "url": "https://a.example.com/",
                    "authentication": {"schemes": ["Bearer", 5]},
                },
            },
            "pushNotificationConfig.authentication.schemes",
        ),
        (V03, "tasks/pushNotificationConfig/get", {"pushNotificationConfigId": "x"}, "id"),
        (V03, "tasks/pushNotificationConfig/list", {}, "id"),
        (V03, "tasks/pushNotificationConfig/delete", {"id": "T"}, "pushNotificationConfigId"),
    ],
)
def test_bad_params_name_the_field(memory, version, method, params, field):
    memory.save(set_status(new_task(message(V03), context_id="c") | {"id": "T"}, "working"))
    error = fails(method, params, -32602, version=version)
    assert error_field(error, version) == field, error


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"taskId": "T", "url": "https://a.example.com/\ud800"}, "url"),
        ({"taskId": "T", "url": "https://a.example.com/", "id": "\udfff"}, "id"),
    ],
)
def test_lone_surrogates_are_invalid_params(params, field):
    """(orjson refuses them in a request body; in-process callers get a clean -32602 too)"""
    from a2a.protocol import V10 as v10_dialect
    from a2a.protocol.errors import InvalidParamsError

    with pytest.raises(InvalidParamsError) as exc:
        v10_dialect.parse_push_create(params)
    assert exc.value.field == field


@pytest.mark.parametrize(
    ("version", "configuration", "field"),
    [
        (V10, {"taskPushNotificationConfig": {"token": "t"}}, "configuration.taskPushNotificationConfig.url"),
        (V10, {"pushNotificationConfig": {"url": "gopher://x"}}, "configuration.pushNotificationConfig.url"),
        (
            V03,
            {"pushNotificationConfig": {"url": "https://a.example.com/", "token": 5}},
            "configuration.pushNotificationConfig.token",
        ),
        (V03, {"pushNotificationConfig": "https://a.example.com/"}, "configuration.pushNotificationConfig"),
    ],
)
def test_bad_send_push_config_names_the_field_and_creates_nothing(memory, version, configuration, field):
    error = fails("SendMessage", {"message": message(version), "configuration": configuration}, -32602, version=version)
    assert error_field(error, version) == field, error
    assert len(memory) == 0


# === disabled ======================================================================================


@pytest.mark.parametrize("version", DIALECTS)
def test_disabled_answers_push_not_supported(memory, settings, version, receiver):
    settings.A2A_PUSH_NOTIFICATIONS = False
    task_id = a_task(memory)
    for method in PUSH_METHODS[version]:
        error = fails(method, {"taskId": task_id, "id": task_id, "url": receiver.url()}, -32003, version=version)
        assert "Push notifications" in error["message"]
        if version == V10:
            assert error["data"][0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"
    key = "taskPushNotificationConfig" if version == V10 else "pushNotificationConfig"
    params = {"message": message(version), "configuration": {key: {"url": receiver.url()}}}
    fails("SendMessage", params, -32003, version=version)
    assert len(memory) == 1  # the SendMessage created no task


def test_card_advertises_the_setting(settings):
    async def card(version: str | None) -> dict:
        client = WireClient(version=None)
        return (
            await client.arequest("GET", "/.well-known/agent-card.json", headers={"A2A-Version": version or ""})
        ).json()

    assert asyncio.run(card(None))["capabilities"]["pushNotifications"] is True
    assert asyncio.run(card(V10))["capabilities"]["pushNotifications"] is True
    settings.A2A_PUSH_NOTIFICATIONS = False
    assert asyncio.run(card(None))["capabilities"]["pushNotifications"] is False
    assert asyncio.run(card(V10))["capabilities"]["pushNotifications"] is False


# === the SSRF guard ==================================================================================

PRIVATE_URLS = [
    "http://127.0.0.1:{port}/hook",
    "http://127.9.9.9/",
    "http://localhost:{port}/hook",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:{port}/",
    "http://[::ffff:127.0.0.1]/",
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://100.64.0.1/",
    "https://2130706433/",  # 127.0.0.1 as one number
]


@pytest.mark.parametrize("version", DIALECTS)
@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_private_urls_are_refused(memory, settings, receiver, version, url):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    url = url.format(port=receiver.port)
    task_id = a_task(memory)
    if version == V10:
        error = fails(PUSH_METHODS[V10][0], {"taskId": task_id, "url": url}, -32602, version=V10)
    else:
        params = {"taskId": task_id, "pushNotificationConfig": {"url": url}}
        error = fails(PUSH_METHODS[V03][0], params, -32602)
    assert url in error["message"] and "A2A_PUSH_ALLOW_PRIVATE_URLS" in error["message"]
    assert get_task_store().push_configs.list_push_configs(task_id) == []


@pytest.mark.parametrize("version", DIALECTS)
def test_send_with_a_private_url_is_refused_before_any_task_exists(memory, settings, receiver, version):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    key = "taskPushNotificationConfig" if version == V10 else "pushNotificationConfig"
    params = {"message": message(version), "configuration": {key: {"url": receiver.url()}}}
    error = fails("SendMessage", params, -32602, version=version)
    assert receiver.url() in error["message"]
    assert len(memory) == 0
    assert receiver.hits == []


def test_public_address_is_accepted_without_the_setting(memory, settings):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    task_id = a_task(memory)
    made = create(V10, task_id, "https://93.184.216.34/hook")  # a literal: no DNS needed
    assert made["url"] == "https://93.184.216.34/hook"


class Seen(logging.Handler):
    """Sets ``event`` when a record from ``a2a.push`` contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


@pytest.fixture
def push_log():
    handlers: list[Seen] = []

    def watch(text: str) -> Seen:
        handler = Seen(text)
        logging.getLogger("a2a.push").addHandler(handler)
        handlers.append(handler)
        return handler

    yield watch
    for handler in handlers:
        logging.getLogger("a2a.push").removeHandler(handler)


def test_the_address_is_checked_again_at_delivery(memory, settings, receiver, dns, push_log):
    """DNS rebinding: public when the config was made, loopback when the update is sent."""
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    answers = dns
    answers["hooks.example"] = ["93.184.216.34"]
    task_id = a_task(memory)
    create(V10, task_id, f"http://hooks.example:{receiver.port}/hook")
    answers["hooks.example"] = ["127.0.0.1"]
    refused = push_log("not sent")
    ok("CancelTask", {"id": task_id}, version=V10)
    assert refused.event.wait(10)
    assert push.wait_idle()
    assert receiver.hits == []


def test_delivery_goes_to_the_checked_address_with_the_host_header(memory, receiver, dns):
    """The request is pinned to the address that was checked (httpx never resolves the name)."""
    dns["hooks.example"] = ["127.0.0.1"]
    task_id = a_task(memory)
    create(V03, task_id, f"http://hooks.example:{receiver.port}/in?x=1", token="t")
    ok("tasks/cancel", {"id": task_id})
    [hit] = receiver.wait_for(1)
    assert hit.path == "/in?x=1"
    assert hit.headers["host"] == f"hooks.example:{receiver.port}"
    assert hit.state == "canceled"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.31.255.255", False),
        ("192.168.0.1", False),
        ("169.254.1.1", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("255.255.255.255", False),
        ("224.0.0.251", False),
        ("240.0.0.1", False),
        ("::1", False),
        ("::", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("ff02::1", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:8.8.8.8", True),
    ],
)
def test_address_classification(address, public):
    import ipaddress

    assert (push._refusal(ipaddress.ip_address(address)) is None) is public


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
    task = send(version, config)
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
    ok("CancelTask", {"id": task_id}, version=V10)
    hits = {h.path: h for h in receiver.wait_for(2)}
    assert hits["/v10"].body["task"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert hits["/v10"].headers["content-type"] == "application/a2a+json"
    assert hits["/v03"].body["status"]["state"] == "canceled" and hits["/v03"].body["kind"] == "task"
    assert hits["/v03"].headers["content-type"] == "application/json"
    assert "authorization" not in hits["/v03"].headers and "x-a2a-notification-token" not in hits["/v03"].headers


def test_a_failing_webhook_gets_the_update_after_retries(memory, receiver):
    receiver.script = [500, 500]
    send(V03, {"url": receiver.url(), "token": "t"}, blocking=False)
    hits = receiver.wait_for(4)
    assert push.wait_idle()
    assert [h.state for h in receiver.hits] == ["working", "working", "working", "completed"]
    assert hits[0].body == hits[2].body  # the same version, again


@pytest.mark.parametrize("status", [503, 429])
def test_delivery_gives_up_after_the_configured_attempts(memory, receiver, settings, caplog, status):
    settings.A2A_PUSH_MAX_ATTEMPTS = 2
    receiver.script = [status] * 10
    send(V10, {"url": receiver.url()})
    receiver.wait_for(4)
    assert push.wait_idle()
    assert [h.state for h in receiver.hits] == ["TASK_STATE_WORKING"] * 2 + ["TASK_STATE_COMPLETED"] * 2
    assert "given up after 2 attempt(s)" in caplog.text


def test_a_client_error_is_not_retried(memory, receiver, caplog):
    receiver.script = [404]
    send(V03, {"url": receiver.url()})
    receiver.wait_for(2)
    assert push.wait_idle()
    assert [h.state for h in receiver.hits] == ["working", "completed"]
    assert "HTTP 404; not retrying" in caplog.text


@pytest.mark.parametrize("version", DIALECTS)
def test_a_slow_webhook_does_not_slow_send_message_and_gets_one_request_at_a_time(memory, receiver, version):
    receiver.release.clear()  # hold every request until the test lets go
    started = time.monotonic()
    task = send(version, {"url": receiver.url()})  # blocking: waits for the task, not for the webhook
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
    task = send(V03, {"url": f"http://127.0.0.1:{closed_port()}/hook"}, blocking=blocking)
    elapsed = time.monotonic() - started
    assert elapsed < 2, elapsed
    assert task["status"]["state"] == ("completed" if blocking else "submitted")
    assert retrying.event.wait(10)
    assert not push.wait_idle(timeout=0.2)  # the deliveries are still being retried


def test_deleting_a_config_stops_its_deliveries(memory, receiver):
    receiver.release.clear()
    task = send(V10, {"url": receiver.url(), "id": "cfg"})
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

    monkeypatch.setattr("a2a.push.get_task_store", broken)
    push.on_task_saved({"id": "t1", "status": {"state": "working"}})
    assert "could not queue push notifications" in caplog.text


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_no_worker_thread_for_tasks_without_configs(use_store):
    """Every store says "no configs" without a query (memory: a dict; file: a stat; ORM:
    the save's own statement), so a task nobody listens to is never handed to delivery."""
    push.shutdown(grace=0)
    assert ok("SendMessage", {"message": message(V03)})["status"]["state"] == "completed"
    assert not push._delivery.started  # the store said "no configs": nothing was handed off


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
