"""What the interop tests share: the clients run in .venv-interop, the webhook receiver, the servers' environment."""

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

import pytest

from tests.server import ROOT, site_env

HERE = Path(__file__).resolve().parent
CLIENTS = HERE / "clients"
VENV = ROOT / ".venv-interop"
VENV03 = ROOT / ".venv-interop03"  # a2a-sdk 0.3 (tests/interop/requirements-v03.txt)
CLIENT_TIMEOUT = 60  # seconds one client run may take

V10_JSONRPC = ("1.0", "JSONRPC")
V10_REST = ("1.0", "HTTP+JSON")
V10_GRPC = ("1.0", "GRPC")  # a2a.grpc, served beside the site (A2A_GRPC_IN_ASGI)
V03_JSONRPC = ("0.3", "JSONRPC")
V03_REST = ("0.3", "HTTP+JSON")


def client_env() -> dict[str, str]:
    """The environment of a client: no PYTHONPATH (nothing of this repository may be
    importable there) and no Django settings."""
    drop = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def client_runner(python: Path, cwd: Path, *, script_dir: Path = CLIENTS):
    """``run(script, base_url, scenario, *options)``: run a client scenario with
    ``python`` (or node) in a subprocess and return the JSON it printed (failing the test
    with its stderr when it exits non-zero)."""

    def run(script: str, base_url: str, scenario: str, *options: str) -> dict[str, Any]:
        args = [str(python), str(script_dir / script), base_url, scenario, *options]
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


def server_log(base_url: str) -> str:
    """The end of the log of the server at ``base_url`` (for a failure message)."""
    log = getattr(base_url, "log", None)
    if log is None or not log.exists():
        return ""
    return "\n--- the end of the server's log ---\n" + log.read_text(errors="replace")[-4000:]


def sdk(
    run_client, base: str, scenario: str, version: tuple[str, str], *options: str, agent: str = "toolnexus-agent"
) -> dict[str, Any]:
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
    assert observed["sdk"]["agent"] == agent
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

    def delivered(self, url: str, protocol: str, token: str, task_id: str) -> list[Hit]:
        """The deliveries at ``url`` once one reports the task completed (as ``protocol``
        writes the state), each asserted to carry ``token`` and to be of ``task_id``."""
        hits = self.wait_for(url, "completed" if protocol == "0.3" else "TASK_STATE_COMPLETED")
        assert all(h.headers["x-a2a-notification-token"] == token for h in hits)
        assert all(h.task["id"] == task_id for h in hits)
        return hits

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def server_env(tmp: Path, store: str) -> dict[str, str]:
    return site_env(
        TASK_STORE=store,
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        A2A_HANDLER="tests.handlers.scripted",
        A2A_PUSH_ALLOW_PRIVATE_URLS="true",  # the receiver is on loopback
        A2A_PUSH_RETRY_DELAY="0.1",
    )


BOTH_BINDINGS = pytest.mark.parametrize(  # every v1.0 binding
    "version", [V10_JSONRPC, V10_REST, V10_GRPC], ids=["jsonrpc", "rest", "grpc"]
)
EVERY_TRANSPORT = pytest.mark.parametrize(
    "version",
    [V10_JSONRPC, V10_REST, V10_GRPC, V03_JSONRPC, V03_REST],
    ids=["v1.0-jsonrpc", "v1.0-rest", "v1.0-grpc", "v0.3-jsonrpc", "v0.3-rest"],
)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] + (f":{e['state']}" if "state" in e else "") for e in events]


# --- what every SDK client must observe (the Python and the JavaScript SDK's scenarios) ---------


def expect_sent_blocking(observed: dict[str, Any]) -> None:
    """send-blocking: a blocking SendMessage's completed task, then GetTask's same task."""
    task, fetched = observed["task"], observed["fetched"]
    assert task["state"] == "completed"
    assert task["artifacts"] == ["first", "done: progress:thinking;artifact:first"]
    assert task["historyRoles"] == ["ROLE_USER"]
    assert fetched == task  # GetTask gives the same task


def expect_listed(observed: dict[str, Any]) -> None:
    """list: one context's two tasks, newest first, paged, filtered by state."""
    sent = observed["sent"]
    assert observed["listed"] == list(reversed(sent))  # newest first, the other context left out
    assert observed["totalSize"] == 2
    assert observed["artifacts"] == [["done: two"], ["done: one"]]
    assert observed["pages"] == [[sent[1]], [sent[0]]]
    assert observed["nextPageToken"] and observed["lastPageToken"] == ""
    assert observed["completed"] == sorted(sent)


def expect_streamed(observed: dict[str, Any], *, appended: bool = True) -> None:
    """stream: every event of a streamed message, in order (``appended``: whether the
    client kept the second chunk's ``append``)."""
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
    assert (last["artifactId"], last["text"], last["append"], last["lastChunk"]) == ("c1", "world", appended, True)
    assert events[5]["text"] == "done"
    assert events[6]["text"] == "done: progress:step one;chunk:c1:Hello, ;last:c1:world;progress:done"
    assert observed["final"]["state"] == "completed"
    assert observed["final"]["artifacts"][0] == "Hello,\nworld"  # the chunks, as one artifact of two parts


def expect_canceled(observed: dict[str, Any]) -> None:
    """cancel: a running task canceled, without waiting for its handler."""
    assert observed["canceled"]["id"] == observed["submitted"]["id"]
    assert observed["canceled"]["state"] == "canceled"
    assert observed["fetched"]["state"] == "canceled"
    assert observed["seconds"] < 4  # the handler's "sleep:5" did not have to finish


def expect_multi_turn(observed: dict[str, Any]) -> None:
    """multi-turn: an input-required task answered, blocking and on a stream."""
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


def expect_subscribed(observed: dict[str, Any]) -> None:
    """subscribe: SubscribeToTask on a running task: its snapshot, then every event to the end."""
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


def expect_errors(observed: dict[str, Any], field: str) -> None:
    """errors: GetTask and CancelTask of an unknown task, CancelTask of a completed one,
    answered as the SDK's errors (named by ``field``: ``type`` in Python, ``name`` in
    JavaScript); a failed task's status message."""
    assert observed["getUnknown"][field] == "TaskNotFoundError"
    assert observed["cancelUnknown"][field] == "TaskNotFoundError"
    assert observed["cancelCompleted"][field] == "TaskNotCancelableError"
    failed = observed["failed"]
    assert failed["state"] == "failed" and failed["statusText"] == "boom"


def expect_push_configs(observed: dict[str, Any], hook: str) -> None:
    """push: two configs created, got, listed, one deleted (then unknown); the task completed."""
    task_id = observed["taskId"]
    assert [c["id"] for c in observed["created"]] == ["keep", "drop"]
    assert observed["created"][0] == {"taskId": task_id, "id": "keep", "url": f"{hook}/keep", "token": "tok-keep"}
    assert observed["got"] == observed["created"][0]
    assert observed["listed"] == ["drop", "keep"]
    assert observed["afterDelete"] == ["keep"]
    assert observed["getDeleted"]["type"].endswith("TaskNotFoundError")
    assert observed["final"]["state"] == "completed"
