"""Interoperability with the official MCP clients: the Python SDK (``mcp`` 2.3.0, in
.venv-mcp; it speaks 2026-07-28 and 2025-11-25) and the TypeScript SDK
(``@modelcontextprotocol/sdk`` 1.32.2 in tests/interop/js; it speaks 2025-11-25 and
older, not 2026-07-28), driving the real site under uvicorn with ``A2A_MCP`` on and
bearer tokens (two callers, alice and bob).

Each scenario runs in a client script (tests/interop/clients/mcp_client.py,
tests/interop/js/mcp_client.mjs) that prints one JSON line of what the SDK observed; the
memory site's scenarios run as one "suite" per client and revision (the SDK's start was
most of a scenario's time), the restarts each on their own.
The bad input the SDKs cannot send (no or an unknown protocol version, a header that
disagrees with the body) goes as raw HTTP from here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a.testing.client import rpc_body
from tests.helpers import live_rpc
from tests.interop.conftest import built_venv
from tests.interop.support import HERE, client_runner, server_env
from tests.ports import free_port
from tests.server import ROOT, manage, postgres_database, running_server

pytestmark = [pytest.mark.slow, pytest.mark.interop]

MCP_VENV = ROOT / ".venv-mcp"
MODERN, LEGACY = "2026-07-28", "2025-11-25"
ALICE, BOB = "alice-" + "a" * 34, "bob-" + "b" * 36
PYTHON_REVISIONS = pytest.mark.parametrize("revision", [MODERN, LEGACY])
#: What a protocol error may be answered with: the JSON-RPC codes MCP names.
PROTOCOL_ERRORS = {-32700, -32600, -32601, -32602, -32020, -32021, -32022}


# --- the clients and the servers --------------------------------------------------------------


@pytest.fixture(scope="session")
def mcp_python() -> Path:
    """.venv-mcp's Python (the official MCP Python SDK)."""
    return built_venv(MCP_VENV, "requirements-mcp.txt")


@pytest.fixture(scope="session")
def run_py(mcp_python, tmp_path_factory):
    """``run(endpoint, scenario, revision, *options)``: the Python SDK's script."""
    runner = client_runner(mcp_python, tmp_path_factory.mktemp("mcp-clients"))

    def run(endpoint: str, scenario: str, revision: str, *options: str, token: str = ALICE) -> dict[str, Any]:
        observed = runner("mcp_client.py", endpoint, scenario, "--revision", revision, "--token", token, *options)
        assert observed["sdk"]["version"] == "2.3.0" and observed["sdk"]["module"].startswith(str(MCP_VENV))
        return observed

    return run


@pytest.fixture(scope="session")
def run_ts(node):
    """``run(endpoint, scenario, *options)``: the TypeScript SDK's script (2025-11-25)."""
    runner = client_runner(node, HERE / "js", script_dir=HERE / "js")

    def run(endpoint: str, scenario: str, *options: str, token: str = ALICE) -> dict[str, Any]:
        observed = runner("mcp_client.mjs", endpoint, scenario, "--token", token, *options)
        assert observed["sdk"]["version"] == "1.32.2"
        assert observed["protocolVersion"] == LEGACY
        return observed

    return run


def mcp_env(tmp: Path, store: str, database_url: str = "") -> dict[str, str]:
    env = server_env(tmp, store)
    env.update(A2A_MCP="true", A2A_AUTHENTICATION_CLASSES="a2a.auth.BearerTokenAuthentication")
    if database_url:
        env["DATABASE_URL"] = database_url
    manage("migrate", "--noinput", env=env)
    script = (
        "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token\n"
        f"for name, key in (('alice', {ALICE!r}), ('bob', {BOB!r})):\n"
        "    Token.objects.get_or_create(user=User.objects.get_or_create(username=name)[0], key=key)"
    )
    manage("shell", "-c", script, env=env)
    return env


class Site:
    """A running site: ``base`` its URL (the same after a restart: a 2025-11-25 client
    answers an elicitation at the URL it connected to), ``endpoint`` its MCP endpoint."""

    def __init__(self, tmp: Path, env: dict[str, str], stack: contextlib.ExitStack) -> None:
        self.tmp, self.env, self.stack, self.starts = tmp, env, stack, 0
        self.port = free_port()
        self.start()

    def start(self) -> None:
        self.log = self.tmp / f"server-{self.starts}.log"
        self.server = self.stack.enter_context(running_server(self.env, log=self.log, port=self.port))
        self.base = str(self.server)
        self.starts += 1

    @property
    def endpoint(self) -> str:
        return f"{self.base}/mcp"

    def restart(self) -> str:
        """Kill the server (SIGKILL, as a crash or a hard stop: a graceful stop would wait
        for the open MCP response streams) and start it again on the same port, store and
        database: its endpoint."""
        os.kill(self.server.pid, signal.SIGKILL)
        while _alive(self.server.pid):
            time.sleep(0.05)
        self.start()
        return self.endpoint


@contextlib.contextmanager
def site(tmp: Path, env: dict[str, str]) -> Iterator[Site]:
    with contextlib.ExitStack() as stack:
        yield Site(tmp, env, stack)


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return waited == 0


@pytest.fixture(scope="module")
def mcp_site(tmp_path_factory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("mcp")
    with site(tmp, mcp_env(tmp, "memory")) as running:
        yield running


PROGRESS = "progress:step one;chunk:c1:Hello,;last:c1:world;progress:done"
#: The scenarios on the memory site, each client running them all in one process (the
#: SDK's start is most of a scenario's time): name -> scenario and options.
STEPS = [
    {"name": "connect", "scenario": "connect"},
    {"name": "complete", "scenario": "complete", "text": "artifact:first"},
    {"name": "fail", "scenario": "fail", "text": "fail:boom"},
    {"name": "progress", "scenario": "progress", "text": PROGRESS},
    {"name": "approve", "scenario": "approve"},
    {"name": "deny", "scenario": "deny"},
    {"name": "task-poll", "scenario": "task-poll", "text": "sleep:0.5;artifact:late"},
    {"name": "task-cancel", "scenario": "task-cancel", "text": "sleep:30"},
    {"name": "isolation", "scenario": "isolation", "other": BOB},
    {"name": "bad", "scenario": "bad"},
]


class Runs:
    """What a client's suite observed, by scenario: ``runs[name]`` fails the test that
    reads a scenario that crashed."""

    def __init__(self, observed: dict[str, Any]) -> None:
        self.observed = observed

    def __getitem__(self, name: str) -> dict[str, Any]:
        found = self.observed["runs"][name]
        assert "crashed" not in found, found
        return found


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("mcp-plan") / "steps.json"
    path.write_text(json.dumps(STEPS))
    return str(path)


@pytest.fixture(scope="module")
def py_runs(run_py, mcp_site, plan) -> dict[str, Runs]:
    """The Python SDK's suite on each revision (the two at once)."""
    with ThreadPoolExecutor(2) as pool:
        found = pool.map(lambda r: Runs(run_py(mcp_site.endpoint, "suite", r, "--state", plan)), (MODERN, LEGACY))
        return dict(zip((MODERN, LEGACY), found, strict=True))


@pytest.fixture(scope="module")
def ts_runs(run_ts, mcp_site, plan) -> Runs:
    """The TypeScript SDK's suite (2025-11-25)."""
    return Runs(run_ts(mcp_site.endpoint, "suite", "--state", plan))


@pytest.fixture(params=["file", "postgres"])
def durable_site(request, tmp_path) -> Iterator[Site]:
    """The site on a durable store (the file store; the ORM store on PostgreSQL), to restart."""
    if request.param == "file":
        with site(tmp_path, mcp_env(tmp_path, f"file:{tmp_path / 'tasks'}")) as running:
            yield running
        return
    admin = os.environ.get("A2A_TEST_POSTGRES_URL")
    if not admin:
        pytest.skip("A2A_TEST_POSTGRES_URL is not set")
    with postgres_database(admin, "a2a_mcp_interop") as url, site(tmp_path, mcp_env(tmp_path, "orm", url)) as running:
        yield running


def a2a_task(base: str, task_id: str, token: str = ALICE) -> dict[str, Any]:
    """The A2A task ``task_id`` as GetTask (v1.0 JSON-RPC) shows it to ``token``'s caller."""
    return live_rpc(base, "GetTask", {"id": task_id}, {"A2A-Version": "1.0", "Authorization": f"Bearer {token}"})


def a2a_tasks(base: str, token: str = ALICE) -> list[dict[str, Any]]:
    headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {token}"}
    return live_rpc(base, "ListTasks", {}, headers)["result"]["tasks"]


# --- what each scenario must show (both SDKs) -----------------------------------------------


def expect_tools(observed: dict[str, Any]) -> None:
    tools = observed["tools"]
    assert [t["name"] for t in tools] == ["echo"]  # one tool per skill of the card
    echo = tools[0]
    assert echo["description"].startswith("Replies with the text it was sent")
    assert echo["inputSchema"]["required"] == ["message"]
    assert echo["inputSchema"]["properties"]["message"]["type"] == "string"
    assert observed["deterministic"]


def expect_completed(observed: dict[str, Any]) -> None:
    assert observed["isError"] is False
    assert "done: artifact:first" in observed["text"] and "first" in observed["text"]


def expect_failed(observed: dict[str, Any]) -> None:
    assert observed["isError"] is True
    assert any("boom" in text for text in observed["text"])


def expect_progress(observed: dict[str, Any]) -> None:
    messages = [p["message"] for p in observed["progress"]]
    assert "step one" in messages and "done" in messages  # the handler's progress, in order
    assert messages.index("step one") < messages.index("done")
    values = [p["progress"] for p in observed["progress"]]
    assert values == sorted(values) and len(set(values)) == len(values)  # MUST increase
    assert observed["isError"] is False and any("Hello," in t for t in observed["text"])


def expect_approval(observed: dict[str, Any], approved: bool) -> None:
    (asked,) = observed["asked"]
    assert asked["message"] == "deploy({}) needs your approval: reply yes or no."
    assert asked["schema"]["properties"]["approved"]["type"] == "boolean"
    assert observed["isError"] is False
    assert ("approved: deploy" if approved else "denied: deploy") in observed["text"]


def expect_protocol_error(error: dict[str, Any] | None, *codes: int) -> None:
    assert error is not None, "answered as if valid"
    assert error["code"] in (codes or PROTOCOL_ERRORS), error


# --- the Python SDK, on each revision ---------------------------------------------------------


@PYTHON_REVISIONS
def test_python_connects_and_lists_one_tool_per_skill(py_runs, revision):
    observed = py_runs[revision]["connect"]
    assert observed["protocolVersion"] == revision  # auto: server/discover; legacy: initialize
    assert observed["capabilities"]["tools"] is not None
    if revision == MODERN:
        assert "io.modelcontextprotocol/tasks" in observed["capabilities"].get("extensions", {})
    expect_tools(observed)


@PYTHON_REVISIONS
def test_python_a_call_completes_and_its_task_is_the_callers(py_runs, mcp_site, revision):
    observed = py_runs[revision]["complete"]
    expect_completed(observed)
    task = a2a_task(mcp_site.base, observed["taskId"])["result"]  # an A2A task, alice's
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert observed["taskId"] not in {t["id"] for t in a2a_tasks(mcp_site.base, BOB)}


@PYTHON_REVISIONS
def test_python_a_failed_task_is_a_tool_error(py_runs, revision):
    expect_failed(py_runs[revision]["fail"])


@PYTHON_REVISIONS
def test_python_progress_streams_while_the_task_runs(py_runs, revision):
    expect_progress(py_runs[revision]["progress"])


@PYTHON_REVISIONS
@pytest.mark.parametrize("scenario", ["approve", "deny"])
def test_python_an_approval_through_elicitation(py_runs, revision, scenario):
    expect_approval(py_runs[revision][scenario], approved=scenario == "approve")


def test_python_modern_approval_answered_after_a_restart(run_py, durable_site, tmp_path):
    state = str(tmp_path / "state.json")
    asked = run_py(durable_site.endpoint, "ask", MODERN, "--state", state)
    assert asked["resultType"] == "input_required"
    (question,) = asked["inputRequests"].values()
    assert question["method"] == "elicitation/create"
    endpoint = durable_site.restart()
    answered = run_py(endpoint, "answer", MODERN, "--state", state)
    assert answered.get("isError") is False, answered
    assert "approved: deploy" in answered["text"]


def test_python_legacy_approval_answered_after_a_restart(mcp_python, durable_site, tmp_path):
    """2025-11-25: the elicitation/create is answered only once the server has restarted;
    the answer reaches the new process and the same A2A task completes, approved."""
    command = [str(mcp_python), str(HERE / "clients" / "mcp_client.py"), durable_site.endpoint, "restart-legacy"]
    legacy_restart(durable_site, [*command, "--revision", LEGACY, "--token", ALICE], tmp_path)


def legacy_restart(running: Site, command: list[str], tmp: Path, cwd: Path | None = None) -> None:
    """Run a client's ``restart-legacy`` scenario: restart the server once the client is
    asked, then let it answer; the same A2A task ends completed, approved."""
    gate = tmp / "gate"
    before = {t["id"] for t in a2a_tasks(running.base)}
    command = [*command, "--state", str(gate)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd or tmp)
    try:
        deadline = time.monotonic() + 90
        while not gate.with_suffix(".asked").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the client was never asked"
            time.sleep(0.05)
        running.restart()
        gate.write_text("open")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    observed = json.loads(out.strip().splitlines()[-1])
    assert observed["asked"][0]["message"] == "deploy({}) needs your approval: reply yes or no.", observed
    assert observed["statuses"][-1] == "completed", (observed, err[-2000:])  # seen by the client's session
    created = _ended(running, before)
    assert created["id"] == observed["asked"][0]["taskId"]
    created = a2a_task(running.base, created["id"])["result"]  # with its artifacts (ListTasks leaves them out)
    assert created["status"]["state"] == "TASK_STATE_COMPLETED", created
    assert created["artifacts"][-1]["parts"][0]["text"] == "approved: deploy"


def _ended(running: Site, before: set[str]) -> dict[str, Any]:
    """The one task created since ``before``, once it ended, as the running site shows it."""
    deadline = time.monotonic() + 30
    while True:
        created = [t for t in a2a_tasks(running.base) if t["id"] not in before]
        if created and not created[0]["status"]["state"].endswith(("WORKING", "SUBMITTED", "REQUIRED")):
            assert len(created) == 1, created
            return created[0]
        assert time.monotonic() < deadline, created
        time.sleep(0.1)


@PYTHON_REVISIONS
def test_python_a_task_handle_polled_to_its_end(py_runs, mcp_site, revision):
    observed = py_runs[revision]["task-poll"]
    assert observed["taskId"] and observed["statuses"][-1] == "completed"
    assert set(observed["statuses"][:-1]) <= {"working"}
    final = observed["final"]
    assert final["isError"] is False if "isError" in final else True
    assert any("done: sleep:0.5;artifact:late" in c.get("text", "") for c in final["content"])
    task = a2a_task(mcp_site.base, observed["taskId"])["result"]  # the handle is the A2A task's id
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


@PYTHON_REVISIONS
def test_python_a_task_handle_cancelled(py_runs, mcp_site, revision):
    observed = py_runs[revision]["task-cancel"]
    assert "error" not in observed["cancelled"], observed["cancelled"]
    assert observed["statuses"][-1] == "cancelled"
    assert a2a_task(mcp_site.base, observed["taskId"])["result"]["status"]["state"] == "TASK_STATE_CANCELED"


@PYTHON_REVISIONS
def test_python_one_caller_cannot_see_or_continue_anothers_task(py_runs, mcp_site, revision):
    observed = py_runs[revision]["isolation"]
    expect_protocol_error(observed["get"].get("error"))
    expect_protocol_error(observed["cancel"].get("error"))
    if revision == MODERN:
        expect_protocol_error(observed["continue"]["error"], -32602)
    owner = observed["ownerGet"]
    assert (owner.get("status") or owner.get("task", {}).get("status")) == "working"  # bob's cancel did nothing
    assert "error" in a2a_task(mcp_site.base, observed["taskId"], BOB)  # nor does A2A show it to bob


@PYTHON_REVISIONS
def test_python_bad_input_is_a_protocol_error(py_runs, revision):
    observed = py_runs[revision]["bad"]
    for name in ("unknownTool", "wrongArguments", "notAString"):
        expect_protocol_error(observed[name].get("error"), -32602)
    if revision == MODERN:
        expect_protocol_error(observed["forgedState"]["error"], -32602)


# --- bad input no SDK sends: raw HTTP ---------------------------------------------------------


def raw_mcp(endpoint: str, body: Any, headers: dict[str, str], token: str = ALICE) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}", **headers}
    return httpx.post(endpoint, content=json.dumps(body), headers={"Content-Type": "application/json", **headers})


def modern_call(name: str = "echo", version: str | None = MODERN) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/clientCapabilities": {}}
    if version is not None:
        meta["io.modelcontextprotocol/protocolVersion"] = version
    params = {"name": name, "arguments": {"message": "hi"}, "_meta": meta}
    return rpc_body("tools/call", params, request_id=7)


def modern_headers(name: str = "echo", version: str = MODERN) -> dict[str, str]:
    return {"MCP-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": name}


def error_answer(response: httpx.Response, status: int, *codes: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    error = response.json()["error"]
    expect_protocol_error(error, *codes)
    assert error["message"]
    return error


def test_raw_an_unknown_protocol_version_is_the_specs_error(mcp_site):
    body = modern_call(version="2099-01-01")
    error = error_answer(raw_mcp(mcp_site.endpoint, body, modern_headers(version="2099-01-01")), 400, -32022)
    assert set(error["data"]["supported"]) >= {MODERN, LEGACY}


def test_raw_a_missing_protocol_version_is_a_protocol_error(mcp_site):
    headers = {"Mcp-Method": "tools/call", "Mcp-Name": "echo"}
    error_answer(raw_mcp(mcp_site.endpoint, modern_call(version=None), headers), 400)


@pytest.mark.parametrize(
    "headers",
    [
        modern_headers(name="other"),  # Mcp-Name says another tool
        {**modern_headers(), "Mcp-Method": "tools/list"},  # Mcp-Method another method
        {**modern_headers(), "MCP-Protocol-Version": LEGACY},  # the header another version than _meta
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"},  # Mcp-Name missing
    ],
    ids=["name", "method", "version", "missing-name"],
)
def test_raw_a_header_that_disagrees_with_the_body_is_header_mismatch(mcp_site, headers):
    error_answer(raw_mcp(mcp_site.endpoint, modern_call(), headers), 400, -32020)


@pytest.mark.parametrize("body", ["{not json", [], {"jsonrpc": "2.0", "id": 1}], ids=["json", "batch", "no-method"])
def test_raw_a_malformed_body_is_never_a_500(mcp_site, body):
    raw = body if isinstance(body, str) else json.dumps(body)
    response = httpx.post(
        mcp_site.endpoint,
        content=raw,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {ALICE}",
            **modern_headers(),
        },
    )
    assert 400 <= response.status_code < 500, response.text
    expect_protocol_error(response.json()["error"])


def test_raw_no_token_is_401_with_a_challenge(mcp_site):
    response = httpx.post(mcp_site.endpoint, json=modern_call(), headers=modern_headers())
    assert response.status_code == 401 and response.headers["www-authenticate"].lower().startswith("bearer")


# --- the TypeScript SDK (2025-11-25) ----------------------------------------------------------


def test_typescript_initializes_and_lists_one_tool_per_skill(ts_runs):
    expect_tools(ts_runs["connect"])


def test_typescript_a_call_completes_and_one_fails(ts_runs, mcp_site):
    expect_completed(ts_runs["complete"])
    assert a2a_task(mcp_site.base, ts_runs["complete"]["taskId"])["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    expect_failed(ts_runs["fail"])


def test_typescript_progress(ts_runs):
    expect_progress(ts_runs["progress"])


@pytest.mark.parametrize("scenario", ["approve", "deny"])
def test_typescript_an_approval_through_elicitation(ts_runs, scenario):
    expect_approval(ts_runs[scenario], approved=scenario == "approve")


@pytest.mark.parametrize("scenario", ["task-poll", "task-cancel"])
def test_typescript_a_task_polled_and_one_cancelled(ts_runs, mcp_site, scenario):
    observed = ts_runs[scenario]
    end = {"task-poll": ("completed", "TASK_STATE_COMPLETED"), "task-cancel": ("cancelled", "TASK_STATE_CANCELED")}
    assert observed["statuses"][-1] == end[scenario][0], observed
    assert a2a_task(mcp_site.base, observed["taskId"])["result"]["status"]["state"] == end[scenario][1]
    if scenario == "task-poll":
        assert any("done: sleep:0.5;artifact:late" in t for t in observed["final"]["text"])


def test_typescript_one_caller_cannot_see_or_cancel_anothers_task(ts_runs):
    observed = ts_runs["isolation"]
    expect_protocol_error(observed["get"]["error"])
    expect_protocol_error(observed["cancel"]["error"])
    assert observed["ownerStatus"] == "working"


def test_typescript_bad_input_is_a_protocol_error(ts_runs):
    observed = ts_runs["bad"]
    for name in ("unknownTool", "wrongArguments"):
        expect_protocol_error(observed[name]["error"], -32602)


def test_typescript_approval_answered_after_a_restart(node, durable_site, tmp_path):
    """As the Python SDK's 2025-11-25 restart: the elicitation answered once the server restarted."""
    command = [str(node), str(HERE / "js" / "mcp_client.mjs"), durable_site.endpoint, "restart-legacy"]
    legacy_restart(durable_site, [*command, "--token", ALICE], tmp_path, cwd=HERE / "js")
