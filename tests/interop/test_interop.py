"""Interoperability with A2A clients nobody here wrote: the official A2A Python SDK
(``a2a-sdk``: its v1.0 JSON-RPC, HTTP+JSON and gRPC transports and its v0.3 compatibility
transports; and a2a-sdk 0.3, the v0.3 generation's own client, over HTTP+JSON) and
toolnexus's A2A agent tools, driving the real site under uvicorn.

Both clients install a top-level ``a2a`` package that clashes with ours, so they live
in ``.venv-interop`` (built by tests/interop/setup-venv.sh; ``make test`` builds it
first, and the ``interop_python`` fixture builds it when it is missing; a2a-sdk 0.3
likewise in ``.venv-interop03``) and run as subprocesses:
``tests/interop/clients/*.py BASE_URL SCENARIO`` prints one JSON line of what the
client observed, which the tests check. Push notifications are delivered to
a webhook receiver run here, on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import ROOT, free_port, running_server, site_env

pytestmark = [pytest.mark.slow, pytest.mark.interop]

HERE = Path(__file__).resolve().parent
CLIENTS = HERE / "clients"
VENV = ROOT / ".venv-interop"
VENV03 = ROOT / ".venv-interop03"  # a2a-sdk 0.3 (tests/interop/requirements-v03.txt)
CLIENT_TIMEOUT = 60  # seconds one client run may take (each scenario takes ~1-3 s)

V10_JSONRPC = ("1.0", "JSONRPC")
V10_REST = ("1.0", "HTTP+JSON")
V10_GRPC = ("1.0", "GRPC")  # a2a.grpc, served beside the site (A2A_GRPC_IN_ASGI)
V03_JSONRPC = ("0.3", "JSONRPC")
V03_REST = ("0.3", "HTTP+JSON")


# --- the interop venv and the clients ---------------------------------------------------------


@pytest.fixture(scope="session")
def interop_python() -> Path:
    """The interop venv's Python, the venv built (or brought up to date) first: the
    setup script is idempotent and returns at once when the venv is current."""
    try:
        subprocess.run(["bash", str(HERE / "setup-venv.sh")], check=True, capture_output=True, text=True, timeout=900)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"could not build {VENV}:\n{exc.stdout}\n{exc.stderr}")
    return VENV / "bin" / "python"


@pytest.fixture(scope="session")
def interop03_python() -> Path:
    """.venv-interop03's Python (a2a-sdk 0.3), the venv built or brought up to date first."""
    command = ["bash", str(HERE / "setup-venv.sh"), str(VENV03), str(HERE / "requirements-v03.txt")]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=900)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"could not build {VENV03}:\n{exc.stdout}\n{exc.stderr}")
    return VENV03 / "bin" / "python"


def client_env() -> dict[str, str]:
    """The environment of a client: no PYTHONPATH (nothing of this repository may be
    importable there) and no Django settings."""
    drop = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def client_runner(python: Path, cwd: Path):
    """``run(script, base_url, scenario, *options)``: run a client scenario with
    ``python`` in a subprocess and return the JSON it printed (failing the test with
    its stderr when it exits non-zero)."""

    def run(script: str, base_url: str, scenario: str, *options: str) -> dict[str, Any]:
        args = [str(python), str(CLIENTS / script), base_url, scenario, *options]
        try:
            proc = subprocess.run(
                args, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, env=client_env(), cwd=cwd
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{script} {scenario} {options} did not finish in {CLIENT_TIMEOUT}s:\n{exc.stderr}")
        if proc.returncode != 0:
            pytest.fail(
                f"{script} {scenario} {options} failed ({proc.returncode}):\n{proc.stderr}{server_log(base_url)}"
            )
        observed = json.loads(proc.stdout.strip().splitlines()[-1])
        assert observed["scenario"] == scenario
        return observed

    return run


@pytest.fixture(scope="session")
def run_client(interop_python, tmp_path_factory):
    """Run a client of .venv-interop (a2a-sdk 1.x, toolnexus): see :func:`client_runner`."""
    return client_runner(interop_python, tmp_path_factory.mktemp("clients"))  # no module of ours shadows theirs


@pytest.fixture(scope="session")
def run_client03(interop03_python, tmp_path_factory):
    """Run a client of .venv-interop03 (a2a-sdk 0.3): see :func:`client_runner`."""
    return client_runner(interop03_python, tmp_path_factory.mktemp("clients03"))


def server_log(base_url: str) -> str:
    """The end of the log of the server at ``base_url`` (for a failure message)."""
    log = getattr(base_url, "log", None)
    if log is None or not log.exists():
        return ""
    return "\n--- the end of the server's log ---\n" + log.read_text(errors="replace")[-4000:]


def sdk(run_client, base: str, scenario: str, version: tuple[str, str], *options: str) -> dict[str, Any]:
    protocol, binding = version
    observed = run_client("sdk_client.py", base, scenario, "--protocol", protocol, "--binding", binding, *options)
    # The SDK's own package, out of the interop venv, through the transport asked for.
    assert observed["sdk"]["module"].startswith(str(VENV))
    expected = {
        V10_JSONRPC: "JsonRpcTransport",
        V10_REST: "RestTransport",
        V10_GRPC: "GrpcTransport",
        V03_JSONRPC: "CompatJsonRpcTransport",
        V03_REST: "CompatRestTransport",
    }[version]
    assert observed["sdk"]["transport"].split()[0] == expected
    assert observed["sdk"]["agent"] == "toolnexus-agent"
    return observed


# --- the webhook receiver and the servers -------------------------------------------------------


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: str

    @property
    def task(self) -> dict[str, Any]:
        """The delivered task, in either dialect's shape (v1.0 wraps it in a StreamResponse)."""
        body = json.loads(self.body)
        return body.get("task", body)

    @property
    def state(self) -> str:
        return self.task["status"]["state"]


class Receiver:
    """A webhook on 127.0.0.1 that records every POST and answers 200."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self.cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                with receiver.cond:
                    receiver.hits.append(Hit(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    receiver.cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def hook(self) -> str:
        """A fresh webhook base URL (the client adds a path per config)."""
        return f"{self.url}/{uuid.uuid4().hex}"

    def at(self, url: str) -> list[Hit]:
        path = url.removeprefix(self.url)
        with self.cond:
            return [h for h in self.hits if h.path == path]

    def wait_for(self, url: str, state: str, timeout: float = 15) -> list[Hit]:
        """The hits at ``url`` once one reports ``state``."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                hits = self.at(url)
                if any(h.state == state for h in hits):
                    return hits
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no {state} delivery at {url}; got {[h.state for h in hits]}"
                self.cond.wait(remaining)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


def server_env(tmp: Path, store: str) -> dict[str, str]:
    return site_env(
        TASK_STORE=store,
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        A2A_HANDLER="tests.handlers.scripted",
        A2A_PUSH_ALLOW_PRIVATE_URLS="true",  # the receiver is on loopback
        A2A_PUSH_RETRY_DELAY="0.1",
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The site on the memory store, with the gRPC binding beside it in the same
    process (A2A_GRPC_IN_ASGI), advertised on the card (A2A_GRPC_URL)."""
    tmp = tmp_path_factory.mktemp("interop")
    grpc_address = f"127.0.0.1:{free_port()}"
    env = {
        **server_env(tmp, "memory"),
        "A2A_GRPC_IN_ASGI": "true",
        "A2A_GRPC_ADDRESS": grpc_address,
        "A2A_GRPC_URL": grpc_address,
    }
    with running_server(env, log=tmp / "server.log") as base:
        base.log = tmp / "server.log"
        yield base


@pytest.fixture(scope="module")
def file_server(tmp_path_factory):
    """The site on the file store: ``(base URL, tasks directory)``."""
    tmp = tmp_path_factory.mktemp("interop-file")
    tasks = tmp / "tasks"
    with running_server(server_env(tmp, f"file:{tasks}"), log=tmp / "server.log") as base:
        base.log = tmp / "server.log"
        yield base, tasks


BOTH_BINDINGS = pytest.mark.parametrize(  # every v1.0 binding
    "version", [V10_JSONRPC, V10_REST, V10_GRPC], ids=["jsonrpc", "rest", "grpc"]
)
EVERY_TRANSPORT = pytest.mark.parametrize(
    "version",
    [V10_JSONRPC, V10_REST, V10_GRPC, V03_JSONRPC, V03_REST],
    ids=["v1.0-jsonrpc", "v1.0-rest", "v1.0-grpc", "v0.3-jsonrpc", "v0.3-rest"],
)


# --- the official SDK ----------------------------------------------------------------------------


@EVERY_TRANSPORT
def test_sdk_send_blocking(run_client, server, version):
    observed = sdk(run_client, server, "send-blocking", version)
    task, fetched = observed["task"], observed["fetched"]
    assert task["state"] == "completed"
    assert task["artifacts"] == ["first", "done: progress:thinking;artifact:first"]
    assert task["historyRoles"] == ["ROLE_USER"]
    assert fetched == task  # GetTask gives the same task


@EVERY_TRANSPORT
def test_sdk_send_non_blocking_then_get_until_completed(run_client, server, version):
    observed = sdk(run_client, server, "send-nonblocking", version)
    assert observed["submitted"]["state"] == "submitted"
    assert observed["submitted"]["artifacts"] == []
    final = observed["final"]
    assert final["id"] == observed["submitted"]["id"]
    assert final["contextId"] == observed["submitted"]["contextId"]
    assert final["state"] == "completed"
    assert final["artifacts"] == ["later", "done: sleep:0.3;artifact:later"]
    assert observed["polls"] >= 2  # it was still going when first asked


@EVERY_TRANSPORT
def test_sdk_direct_reply_is_a_message(run_client, server, version):
    observed = sdk(run_client, server, "reply", version)
    assert observed["response"] == {"kind": "message", "text": "hi there", "role": "ROLE_AGENT"}


@EVERY_TRANSPORT
def test_sdk_errors_map_to_the_sdk_exceptions(run_client, server, version):
    observed = sdk(run_client, server, "errors", version)
    assert observed["getUnknown"]["type"] == "TaskNotFoundError"
    assert observed["cancelUnknown"]["type"] == "TaskNotFoundError"
    assert observed["cancelCompleted"]["type"] == "TaskNotCancelableError"
    assert observed["subscribeCompleted"]["type"] == "UnsupportedOperationError"
    failed = observed["failed"]
    assert failed["state"] == "failed" and failed["statusText"] == "boom"


@BOTH_BINDINGS  # the SDK's v0.3 transports have no ListTasks (it is not in v0.3)
def test_sdk_list_tasks(run_client, server, version):
    observed = sdk(run_client, server, "list", version)
    sent = observed["sent"]
    assert observed["listed"] == list(reversed(sent))  # newest first, the other context left out
    assert observed["totalSize"] == 2
    assert observed["artifacts"] == [["done: two"], ["done: one"]]
    assert observed["pages"] == [[sent[1]], [sent[0]]]
    assert observed["nextPageToken"] and observed["lastPageToken"] == ""
    assert observed["completed"] == sorted(sent)


@EVERY_TRANSPORT
def test_sdk_cancel_a_running_task(run_client, server, version):
    observed = sdk(run_client, server, "cancel", version)
    assert observed["canceled"]["id"] == observed["submitted"]["id"]
    assert observed["canceled"]["state"] == "canceled"
    assert observed["fetched"]["state"] == "canceled"
    assert observed["seconds"] < 4  # the handler's "sleep:5" did not have to finish


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] + (f":{e['state']}" if "state" in e else "") for e in events]


@EVERY_TRANSPORT
def test_sdk_streaming_send(run_client, server, version):
    observed = sdk(run_client, server, "stream", version)
    events = observed["events"]
    task_id = events[0]["id"]
    assert kinds(events) == [
        "task:submitted",
        "status-update:working",
        "status-update:working",
        "artifact-update",
        "artifact-update",
        "status-update:working",
        "artifact-update",
        "status-update:completed",
    ]
    assert all(e.get("taskId", task_id) == task_id for e in events)
    assert events[2]["text"] == "step one"
    first, last = events[3], events[4]
    assert (first["artifactId"], first["text"], first["append"], first["lastChunk"]) == ("c1", "Hello,", False, False)
    assert (last["artifactId"], last["text"], last["append"], last["lastChunk"]) == ("c1", "world", True, True)
    assert events[5]["text"] == "done"
    assert events[6]["text"] == "done: progress:step one;chunk:c1:Hello, ;last:c1:world;progress:done"
    assert observed["final"]["state"] == "completed"
    assert observed["final"]["artifacts"][0] == "Hello,\nworld"  # the chunks, as one artifact of two parts


@EVERY_TRANSPORT
def test_sdk_subscribe_to_a_running_task(run_client, server, version):
    observed = sdk(run_client, server, "subscribe", version)
    events = observed["events"]
    assert events[0]["kind"] == "task" and events[0]["id"] == observed["taskId"]
    assert events[0]["state"] == "working"
    assert kinds(events[1:]) == [
        "status-update:working",
        "artifact-update",
        "artifact-update",
        "status-update:completed",
    ]
    assert events[1]["text"] == "woke"
    assert [e["text"] for e in events[2:4]] == ["late", "done: sleep:1;progress:woke;artifact:late"]
    assert observed["final"]["state"] == "completed"


@EVERY_TRANSPORT
def test_sdk_multi_turn(run_client, server, version):
    observed = sdk(run_client, server, "multi-turn", version)
    asked, answered = observed["asked"], observed["answered"]
    assert asked["state"] == "input-required" and asked["statusText"] == "Which city?"
    assert answered["id"] == asked["id"] and answered["contextId"] == asked["contextId"]
    assert answered["state"] == "completed"
    assert answered["artifacts"] == ["Paris", "done: artifact:Paris"]
    assert observed["final"]["historyRoles"] == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]
    first, second = observed["streamed"]
    assert kinds(first)[-1] == "status-update:input-required" and first[-1]["text"] == "Which country?"
    assert second[0]["id"] == first[0]["id"]
    assert kinds(second)[-1] == "status-update:completed"
    assert [e["text"] for e in second if e["kind"] == "artifact-update"] == ["France", "done: artifact:France"]


def parsed_by_sdk(run_client, tmp_path, hits: list[Hit], dialect: str) -> list[dict[str, Any]]:
    """The delivered bodies as the SDK's types read them."""
    bodies = tmp_path / "bodies.json"
    bodies.write_text(json.dumps([{"dialect": dialect, "body": h.body} for h in hits]))
    return run_client("sdk_client.py", "-", "parse-push", "--bodies", str(bodies))["parsed"]


@EVERY_TRANSPORT
def test_sdk_push_config_methods_and_delivery(run_client, server, receiver, tmp_path, version):
    hook = receiver.hook()
    observed = sdk(run_client, server, "push", version, "--webhook", hook)
    task_id = observed["taskId"]
    assert [c["id"] for c in observed["created"]] == ["keep", "drop"]
    assert observed["created"][0] == {"taskId": task_id, "id": "keep", "url": f"{hook}/keep", "token": "tok-keep"}
    assert observed["got"] == observed["created"][0]
    assert observed["listed"] == ["drop", "keep"]
    assert observed["afterDelete"] == ["keep"]
    assert observed["getDeleted"]["type"] == "TaskNotFoundError"
    assert observed["final"]["state"] == "completed"

    hits = receiver.wait_for(f"{hook}/keep", "completed" if version[0] == "0.3" else "TASK_STATE_COMPLETED")
    assert receiver.at(f"{hook}/drop") == []  # deleted before the task moved on
    assert all(h.headers["x-a2a-notification-token"] == "tok-keep" for h in hits)
    assert all(h.task["id"] == task_id for h in hits)
    protocol = version[0]
    content_type = "application/a2a+json" if protocol == "1.0" else "application/json"
    assert all(h.headers["content-type"] == content_type for h in hits)
    parsed = parsed_by_sdk(run_client, tmp_path, hits, protocol)
    assert [p["id"] for p in parsed] == [task_id] * len(hits)
    assert parsed[-1]["state"] == "completed"


@EVERY_TRANSPORT
def test_sdk_push_config_in_send_message(run_client, server, receiver, tmp_path, version):
    hook = receiver.hook()
    observed = sdk(run_client, server, "push-in-send", version, "--webhook", hook)
    task_id = observed["final"]["id"]
    assert observed["final"]["state"] == "completed"
    [config] = observed["configs"]
    assert (config["taskId"], config["url"], config["token"]) == (task_id, f"{hook}/send", "tok-send")
    assert config["id"]  # generated by the server

    hits = receiver.wait_for(f"{hook}/send", "completed" if version[0] == "0.3" else "TASK_STATE_COMPLETED")
    assert all(h.headers["x-a2a-notification-token"] == "tok-send" for h in hits)
    parsed = parsed_by_sdk(run_client, tmp_path, hits, version[0])
    assert parsed[-1] == {**parsed[-1], "id": task_id, "state": "completed"}


def test_the_card_offers_both_bindings_in_both_versions(server):
    """What the SDK's factory chose from above: every (binding, version) pair, in the
    v1.0 ``supportedInterfaces`` and in the v0.3 ``additionalInterfaces``; gRPC in v1.0
    only (a v0.3 gRPC client speaks v0.3's proto)."""
    card = httpx.get(f"{server}/.well-known/agent-card.json").json()
    rest = f"{server}/a2a/rest"
    assert card["additionalInterfaces"] == [
        {"url": card["url"], "transport": "JSONRPC"},
        {"url": rest, "transport": "HTTP+JSON"},
    ]
    offered = {(i["protocolBinding"], i["protocolVersion"]): i["url"] for i in card["supportedInterfaces"]}
    assert offered == {
        ("JSONRPC", "1.0"): card["url"],
        ("HTTP+JSON", "1.0"): rest,
        ("JSONRPC", "0.3"): card["url"],
        ("HTTP+JSON", "0.3"): rest,
        ("GRPC", "1.0"): offered[("GRPC", "1.0")],
    }
    assert offered[("GRPC", "1.0")].startswith("127.0.0.1:")


# --- a2a-sdk 0.3: the v0.3 generation's own client, over HTTP+JSON --------------------------------


def sdk03(run_client03, base: str, scenario: str, *options: str) -> dict[str, Any]:
    observed = run_client03("sdk03_client.py", base, scenario, *options)
    assert observed["sdk"]["module"].startswith(str(VENV03))
    # Its RestTransport, at the HTTP+JSON interface of the v0.3 card (it appends "/v1/...").
    assert observed["sdk"]["transport"] == f"RestTransport {base}/a2a/rest"
    assert observed["sdk"]["agent"] == "toolnexus-agent"
    return observed


def test_sdk03_send_blocking_and_get(run_client03, server):
    observed = sdk03(run_client03, server, "send-blocking")
    assert observed["task"]["state"] == "completed"
    assert observed["task"]["artifacts"] == ["first", "done: progress:thinking;artifact:first"]
    assert observed["fetched"] == observed["task"]


def test_sdk03_send_non_blocking_then_poll(run_client03, server):
    observed = sdk03(run_client03, server, "send-nonblocking")
    assert observed["submitted"]["state"] == "submitted"
    assert observed["final"]["state"] == "completed" and observed["polls"] >= 2
    assert observed["final"]["artifacts"] == ["later", "done: sleep:0.3;artifact:later"]


def test_sdk03_direct_reply(run_client03, server):
    assert sdk03(run_client03, server, "reply")["response"] == [{"kind": "message", "text": "hi there"}]


def test_sdk03_errors_are_http_statuses(run_client03, server):
    """a2a-sdk 0.3's REST client reports an error by its HTTP status."""
    observed = sdk03(run_client03, server, "errors")
    http_error = "A2AClientHTTPError"
    assert observed["getUnknown"] == {"type": http_error, "status": 404}
    assert observed["cancelUnknown"] == {"type": http_error, "status": 404}
    assert observed["cancelCompleted"] == {"type": http_error, "status": 400}
    assert observed["streamToUnknown"] == {"type": http_error, "status": 404}
    assert observed["failed"]["state"] == "failed" and observed["failed"]["statusText"] == "boom"


def test_sdk03_cancel(run_client03, server):
    observed = sdk03(run_client03, server, "cancel")
    assert observed["canceled"]["state"] == "canceled" and observed["fetched"]["state"] == "canceled"


def test_sdk03_stream(run_client03, server):
    events = sdk03(run_client03, server, "stream")["events"]
    assert kinds(events[1:]) == [
        "status-update:working",
        "status-update:working",
        "artifact-update",
        "artifact-update",
        "status-update:working",
        "artifact-update",
        "status-update:completed",
    ]
    assert [e["final"] for e in events if e["kind"] == "status-update"] == [False, False, False, True]
    first, last = events[3], events[4]
    assert (first["artifactId"], first["append"], first["lastChunk"]) == ("c1", False, False)
    assert (last["artifactId"], last["text"], last["append"], last["lastChunk"]) == ("c1", "world", True, True)


def test_sdk03_resubscribe(run_client03, server):
    observed = sdk03(run_client03, server, "resubscribe")
    events = observed["events"]
    assert events[0] == {"kind": "task", "id": observed["taskId"], "state": events[0]["state"]}
    assert kinds(events[1:]) == [
        "status-update:working",
        "artifact-update",
        "artifact-update",
        "status-update:completed",
    ]
    assert observed["final"]["state"] == "completed"


def test_sdk03_multi_turn(run_client03, server):
    observed = sdk03(run_client03, server, "multi-turn")
    assert observed["asked"]["state"] == "input-required" and observed["asked"]["statusText"] == "Which city?"
    assert observed["answered"]["id"] == observed["asked"]["id"]
    assert observed["answered"]["artifacts"] == ["Paris", "done: artifact:Paris"]
    assert observed["final"]["historyRoles"] == ["user", "agent", "user"]


def test_sdk03_push_configs_and_delivery(run_client03, server, receiver):
    hook = receiver.hook()
    observed = sdk03(run_client03, server, "push", "--webhook", hook)
    task_id = observed["taskId"]
    assert observed["created"] == [
        {"taskId": task_id, "id": name, "url": f"{hook}/{name}", "token": f"tok-{name}"} for name in ("one", "two")
    ]
    assert observed["got"] == observed["created"][1]
    assert observed["getUnknown"] == {"type": "A2AClientHTTPError", "status": 404}
    for name in ("one", "two"):
        hits = receiver.wait_for(f"{hook}/{name}", "completed")  # v0.3 deliveries: the Task
        assert all(h.headers["x-a2a-notification-token"] == f"tok-{name}" for h in hits)
        assert all(h.task["id"] == task_id for h in hits)


def test_sdk03_card(run_client03, server):
    observed = sdk03(run_client03, server, "card")
    assert observed["preferred"] == "JSONRPC" and observed["interfaces"] == ["JSONRPC", "HTTP+JSON"]


# --- the SDK on the file store -----------------------------------------------------------------


def test_sdk_on_the_file_store(run_client, file_server, receiver):
    base, tasks = file_server
    sent = sdk(run_client, base, "send-nonblocking", V10_JSONRPC)["final"]
    turns = sdk(run_client, base, "multi-turn", V10_REST)["answered"]
    hook = receiver.hook()
    pushed = sdk(run_client, base, "push", V10_JSONRPC, "--webhook", hook)
    receiver.wait_for(f"{hook}/keep", "TASK_STATE_COMPLETED")
    for task in (sent, turns, pushed["final"]):
        assert task["state"] == "completed"
        on_disk = json.loads((tasks / f"{task['id']}.json").read_text())
        assert on_disk["status"]["state"] == "completed"
    assert pushed["afterDelete"] == ["keep"]


# --- toolnexus --------------------------------------------------------------------------------

TOOL = "toolnexus-agent_echo"  # sanitize(card name) + "_" + sanitize(skill id)


def toolnexus(run_client, base: str, scenario: str) -> dict[str, Any]:
    observed = run_client("toolnexus_client.py", base, scenario)
    assert observed["toolnexus"]["module"].startswith(str(VENV))
    return observed


def test_toolnexus_makes_a_tool_per_skill(run_client, server):
    observed = toolnexus(run_client, server, "tools")
    [tool] = observed["tools"]
    assert tool["name"] == TOOL
    assert tool["description"].startswith("Replies with the text it was sent")
    assert tool["schema"]["required"] == ["task"]


def test_toolnexus_round_trip(run_client, server):
    result = toolnexus(run_client, server, "echo")["result"]
    assert result["isError"] is False
    assert result["output"] == "done: hello from toolnexus"
    assert result["metadata"]["state"] == "completed"
    assert result["metadata"]["agent"] == "toolnexus-agent"


def test_toolnexus_reads_every_artifact(run_client, server):
    result = toolnexus(run_client, server, "artifacts")["result"]
    assert result["isError"] is False
    assert result["output"] == "one\ntwo\ndone: progress:thinking;artifact:one;artifact:two"


def test_toolnexus_failed_task_is_a_tool_error(run_client, server):
    result = toolnexus(run_client, server, "fail")["result"]
    task_id = result["metadata"]["taskId"]
    assert result["isError"] is True
    assert result["output"] == f"A2A task {task_id} failed: boom"
    assert result["metadata"]["state"] == "failed"


def test_toolnexus_task_canceled_elsewhere_is_a_tool_error(run_client, server):
    observed = toolnexus(run_client, server, "canceled")
    result = observed["result"]
    assert result["metadata"]["taskId"] == observed["canceledTaskId"]
    assert result["isError"] is True
    assert result["output"] == f"A2A task {observed['canceledTaskId']} canceled"


def test_toolnexus_input_required_is_not_terminal(run_client, server):
    """toolnexus polls until a terminal state, so a task that asks for input runs into
    the tool's timeout (1 s here) and is reported with the state it is in."""
    result = toolnexus(run_client, server, "ask")["result"]
    assert result["isError"] is True
    assert result["metadata"]["state"] == "input-required"
    assert "timed out" in result["output"] and "state=input-required" in result["output"]


def test_toolnexus_on_the_file_store(run_client, file_server):
    base, tasks = file_server
    result = toolnexus(run_client, base, "echo")["result"]
    assert result["output"] == "done: hello from toolnexus"
    on_disk = json.loads((tasks / f"{result['metadata']['taskId']}.json").read_text())
    assert on_disk["status"]["state"] == "completed"
