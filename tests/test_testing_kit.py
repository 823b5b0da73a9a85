"""The test kit (a2a.testing): its wire client against the project's ASGI app in every
binding and version, sync and async; its fake model driving the LLM handler; its fake
remote agent's scripts, failures and streams; the assertions; and the plugin loading in
a project that has never seen it (and doing nothing in one that is not Django)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import orjson
import pytest

from a2a.testing import (
    Binding,
    WireClient,
    anthropic_tool_use,
    artifact_text,
    assert_events,
    assert_task_state,
    event_kinds,
    openai_reply,
    openai_tool_call,
    state_of,
    v03_message,
    v10_message,
)
from a2a.testing.client import UNSET, rpc_body, send_params
from a2a.testing.fake_agent import (
    artifact,
    auth_required,
    canceled,
    completed,
    disconnect,
    failed,
    input_required,
    pause,
    working,
)
from tests.conftest import ALL_DATABASES, STORE_KINDS

ROOT = Path(__file__).resolve().parent.parent
pytestmark = ALL_DATABASES


# --- The wire client against the ASGI app -----------------------------------------------


def test_a_first_test_with_the_built_in_echo_handler(a2a_client):
    task = a2a_client.send("hello")["task"]
    assert_task_state(task, "completed")
    assert artifact_text(task) == "echo: hello"


def test_v03_and_http_json_speak_their_own_shapes(a2a_client):
    v03 = a2a_client.with_(version="0.3")
    assert v03.version is None  # v0.3 is a request without A2A-Version
    task = v03.send("hi", blocking=True)
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    response = a2a_client.rest("POST", "/message:send", json={"message": v10_message("x")})
    assert response.status_code == 200 and response.headers["content-type"] == "application/a2a+json"
    assert_task_state(response.json(), "TASK_STATE_COMPLETED")
    fetched = a2a_client.rest("GET", f"/tasks/{task['id']}")
    assert fetched.status_code == 200 and state_of(fetched.json()) == "completed"


@pytest.mark.parametrize(("name", "version"), [("jsonrpc", "1.0"), ("jsonrpc", None), ("rest", "1.0"), ("rest", "0.3")])
def test_one_test_body_over_every_binding_and_version(a2a_client, settings, name, version):
    """A :class:`Binding`'s operations, answers and errors read the same way on each."""
    settings.A2A_HANDLER = "tests.handlers.scripted"
    way = Binding(name, version, a2a_client)
    asked = way.result(way.send("ask:name?"))
    assert asked["status"]["state"] == way.state("input-required")
    done = way.result(way.send(way.message("finish", "twice"), task_id=asked["id"], context_id=asked["contextId"]))
    assert state_of(done) == "completed" and way.result(way.get(done["id"]))["id"] == done["id"]
    assert [t["id"] for t in way.result(way.list(contextId=done["contextId"]))["tasks"]] == [done["id"]]
    not_cancelable = way.error(way.cancel(done["id"]))
    assert (not_cancelable.code, not_cancelable.status) == (-32002, 200 if name == "jsonrpc" else 400)
    settings.A2A_MAX_PARTS = 1
    too_many = way.error(way.post(way.body({"message": way.message("a", "b")})))
    parts = "message.content" if way.v03_rest else "message.parts"
    assert (too_many.code, too_many.fields) == (-32602, [parts]), too_many
    unknown = way.error(way.get("no such task"))
    assert unknown.code == -32001 and "no such task" in unknown.message, unknown
    assert way.error(way.list(pageSize=1000)).fields == ["pageSize"]
    assert event_kinds(way.send_stream("hello"))[-1] == "completed"
    config = {"id": "c1", "url": "https://93.184.216.34/hook"}  # an address: no DNS, and never delivered to
    assert way.create_push_config(done["id"], config).status_code == 200
    assert way.get_push_config(done["id"], "c1").status_code == 200
    assert way.list_push_configs(done["id"]).status_code == 200
    assert way.delete_push_config(done["id"], "c1").status_code == 200
    assert way.error(way.get_push_config(done["id"], "c1")).code == -32001
    assert str(way) == f"{name}-{version or '0.3'}"


def test_raw_control_malformed_bodies_and_headers(a2a_client):
    response = a2a_client.request("POST", "/a2a/", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 200 and response.json()["error"]["code"] == -32700
    missing = a2a_client.rpc("GetTask", {"id": "nope"})
    assert missing["error"]["code"] == -32001
    assert a2a_client.rpc_response("GetTask", {"id": "nope"}, request_id="x").json()["id"] == "x"
    with pytest.raises(AssertionError, match="-32001"):
        a2a_client.result("GetTask", {"id": "nope"})


def test_raw_bodies_batches_notifications_and_tenants(a2a_client):
    """``rpc_raw`` sends a body as it is, with no header but the client's and the test's;
    ``rpc_body`` without an id is a notification; ``send(tenant=)`` scopes the task and
    ``tenant=None`` leaves the field out."""
    batch = orjson.dumps([rpc_body("GetTask", {"id": "a"}, 1), rpc_body("GetTask", {"id": "b"}, 2)])
    answers = a2a_client.rpc_raw(batch, headers={"Content-Type": "application/json"}).json()
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, -32001), (2, -32001)]
    bare = a2a_client.rpc_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask"')  # no Content-Type either
    assert bare.request.headers.get("content-type") is None and bare.request.headers["a2a-version"] == "1.0"
    assert bare.status_code == 415
    notification = rpc_body("GetTask", {"id": "a"}, request_id=UNSET)
    assert "id" not in notification and a2a_client.request("POST", "/a2a/", json=notification).status_code == 204
    assert "tenant" not in send_params("hi", "1.0", tenant=None)
    task = a2a_client.send("hi", tenant="acme")["task"]
    assert a2a_client.rpc("GetTask", {"id": task["id"]})["error"]["code"] == -32001  # another tenant's
    assert a2a_client.result("GetTask", {"id": task["id"], "tenant": "acme"})["id"] == task["id"]


def test_streams_and_the_event_assertions(a2a_client, settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    events = a2a_client.send_stream("progress:thinking;chunk:a:one;last:a:two")
    assert_events(events, ["submitted", "working", "working", "artifact", "artifact", "artifact", "completed"])
    v03 = a2a_client.with_(version="0.3").send_stream(v03_message("progress:x"))
    assert event_kinds(v03)[0] == "submitted" and event_kinds(v03)[-1] == "completed"
    with pytest.raises(AssertionError):
        assert_events(events, ["completed"])


def test_async_calls(a2a_client):
    async def go():
        task = (await a2a_client.asend("async hello"))["task"]
        body = rpc_body("SendStreamingMessage", {"message": v10_message("streamed")})
        frames = await a2a_client.astream("POST", "/a2a/", json=body)
        envelope = await a2a_client.arpc("GetTask", {"id": task["id"]})
        return task, frames, envelope

    task, frames, envelope = asyncio.run(go())
    assert artifact_text(task) == "echo: async hello"
    assert event_kinds(frames)[-1] == "completed"
    assert state_of(envelope) == "completed"


@pytest.mark.django_db(databases="__all__")  # closer than the module's mark: not transactional by itself
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_db_beside_the_client_sees_the_tasks_on_every_store(db, a2a_client, use_store):
    """``db`` asks for a transaction the runner's threads could not see through: the
    client's fixture makes the test transactional."""
    from django.db import connection

    assert not connection.in_atomic_block
    task = a2a_client.send("stored")["task"]
    assert use_store.get(task["id"])["status"]["state"] == "completed"


def test_another_agent_and_a_follow_up_turn(a2a_client, settings):
    """``send(agent=...)`` speaks to an agent of A2A_AGENTS at its own routes (found in the
    URLconf); ``task_id`` answers an ``input-required`` task, ``context_id`` continues a
    conversation."""
    settings.A2A_AGENTS = {"billing": {"HANDLER": "tests.handlers.scripted", "AGENT_NAME": "Billing"}}
    billing = a2a_client.with_(agent="billing")
    assert billing.jsonrpc_path() == "/agents/billing/a2a/"
    assert billing.rest_path("/tasks/x") == "/agents/billing/a2a/rest/tasks/x"
    assert billing.with_(version="0.3").rest_path("/tasks/x") == "/agents/billing/a2a/rest/v1/tasks/x"
    asked = a2a_client.send("ask:Which account?", agent="billing")["task"]
    assert_task_state(asked, "input-required")
    answered = a2a_client.send("number 7", agent="billing", task_id=asked["id"])["task"]
    assert answered["id"] == asked["id"] and state_of(answered) != "input-required"
    assert a2a_client.rpc("GetTask", {"id": asked["id"]})["error"]["code"] == -32001  # not the default agent's
    assert state_of(billing.result("GetTask", {"id": asked["id"]})) == state_of(answered)
    first = a2a_client.send("hi")["task"]
    again = a2a_client.send("again", context_id=first["contextId"])["task"]
    assert again["contextId"] == first["contextId"] and again["id"] != first["id"]
    with pytest.raises(Exception, match="No agent named 'nobody'"):
        a2a_client.send("hi", agent="nobody")


# --- The client's own store -------------------------------------------------------------


def test_the_clients_tasks_live_in_a_store_of_the_tests_own(a2a_client, settings):
    from stores.backends import get_task_store
    from stores.memory import MemoryTaskStore

    store = get_task_store()
    assert isinstance(store, MemoryTaskStore) and store is settings.TASK_STORE
    task = a2a_client.send("kept apart")["task"]
    assert store.get(task["id"]) is not None


def test_a_store_the_test_chose_first_is_kept(settings, tmp_path, request):
    from stores.backends import get_task_store
    from stores.file import FileTaskStore

    settings.TASK_STORE = f"file:{tmp_path}"
    client = request.getfixturevalue("a2a_client")  # asked for after the choice
    task = client.send("chosen")["task"]
    assert isinstance(get_task_store(), FileTaskStore) and (tmp_path / f"{task['id']}.json").exists()


@pytest.mark.a2a_project_store
def test_a_test_marked_a2a_project_store_talks_to_the_projects_store(a2a_client, settings):
    from importlib import import_module

    assert settings.TASK_STORE == import_module("tests.settings").TASK_STORE == "memory"


def test_agents_with_a_store_of_their_own_get_a_fresh_one_too(settings, monkeypatch, tmp_path):
    """An agent's own TASK_STORE in the settings module is as real as the project's."""
    from importlib import import_module

    from a2a.testing.isolation import own_stores

    agents = {"billing": {"TASK_STORE": f"file:{tmp_path}"}, "support": {"AGENT_NAME": "Support"}}
    monkeypatch.setattr(import_module("tests.settings"), "A2A_AGENTS", agents, raising=False)
    settings.A2A_AGENTS = agents
    overrides = own_stores()
    assert overrides["A2A_AGENTS"] == {"billing": {"TASK_STORE": "memory"}, "support": {"AGENT_NAME": "Support"}}
    assert agents["billing"]["TASK_STORE"] == f"file:{tmp_path}"  # the project's dict untouched
    settings.A2A_AGENTS = {"billing": {"TASK_STORE": f"file:{tmp_path}"}}  # the test's own choice
    assert "A2A_AGENTS" not in own_stores()


# --- The fake model ---------------------------------------------------------------------


def test_the_fake_model_answers_the_llm_handler(fake_model, a2a_client, settings):
    settings.A2A_HANDLER = "a2a.handlers.llm.handle"
    fake_model.queue(openai_reply("Paris."))
    task = a2a_client.send("Capital of France?")["task"]
    assert artifact_text(task) == "Paris."
    [seen] = fake_model.requests
    assert seen.path == "/v1/chat/completions" and seen.headers["authorization"] == "Bearer sk-fake"
    assert seen.body["messages"][-1] == {"role": "user", "content": "Capital of France?"}


def test_the_fake_model_scripts_tool_calls_in_both_styles(fake_model):
    fake_model.queue(openai_tool_call("billing", {"text": "refund"}), anthropic_tool_use("billing", {"text": "x"}))
    first = httpx.post(fake_model.url + "/chat/completions", json={}).json()
    second = httpx.post(fake_model.url + "/messages", json={}).json()
    call = first["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "billing", "arguments": '{"text": "refund"}'}
    assert second["content"][0] == {"type": "tool_use", "id": "toolu_1", "name": "billing", "input": {"text": "x"}}
    assert [seen.path for seen in fake_model.requests] == ["/v1/chat/completions", "/v1/messages"]


# --- The fake remote agent --------------------------------------------------------------


def test_the_fake_agent_serves_a_card_and_plays_its_scripts(fake_agent):
    card = httpx.get(fake_agent.card_url).json()
    assert card["supportedInterfaces"] == [{"url": fake_agent.url + "/a2a/", "protocolBinding": "JSONRPC",
                                            "protocolVersion": "1.0"}]  # fmt: skip
    remote = WireClient(base_url=fake_agent.url)
    fake_agent.script([working("looking"), input_required("Which account?")], [artifact("refunded"), completed()])
    asked = remote.send("refund me")["task"]
    assert_task_state(asked, "input-required")
    assert asked["status"]["message"]["parts"] == [{"text": "Which account?"}]
    answer = {"role": "ROLE_USER", "messageId": "a", "parts": [{"text": "number 7"}], "taskId": asked["id"]}
    done = remote.send(answer)["task"]
    assert done["id"] == asked["id"] and artifact_text(done) == "refunded"
    assert_task_state(remote.result("GetTask", {"id": asked["id"]}), "completed")
    assert remote.rpc("SendMessage", {"message": answer})["error"]["code"] == -32004  # terminal: no more turns
    assert remote.rpc("GetTask", {"id": "unknown"})["error"]["code"] == -32001


def test_the_fake_agent_fails_delays_streams_and_drops(fake_agent):
    remote = WireClient(base_url=fake_agent.url, timeout=0.5)
    fake_agent.fail_next(503, times=2)
    assert [remote.rpc_response("GetTask", {"id": "x"}).status_code for _ in range(3)] == [503, 503, 200]
    fake_agent.script([pause(2), completed()])
    with pytest.raises(httpx.ReadTimeout):
        remote.send("slow")
    fake_agent.script([working(), artifact("one", last_chunk=False), artifact("two", append=True), failed("boom")])
    events = remote.with_(timeout=5).send_stream("stream")
    assert_events(events, ["submitted", "working", "artifact", "artifact", "failed"])
    assert events[3]["artifactUpdate"]["append"] is True
    fake_agent.script([artifact("half", last_chunk=False), disconnect()])
    assert event_kinds(remote.send_stream("cut")) == ["submitted", "artifact"]
    with pytest.raises(httpx.RemoteProtocolError):
        remote.send("cut again")


def test_the_fake_agent_asks_for_credentials_and_cancels_on_its_own(fake_agent):
    remote = WireClient(base_url=fake_agent.url)
    fake_agent.script([auth_required("token, please")], [canceled(), completed("never")])
    asked = remote.send("secret")["task"]
    assert_task_state(asked, "auth-required")
    assert asked["status"]["message"]["parts"] == [{"text": "token, please"}]
    answer = {"role": "ROLE_USER", "messageId": "t", "parts": [{"text": "tok"}], "taskId": asked["id"]}
    assert_task_state(remote.send(answer), "canceled")


def test_the_fake_agent_cancels_a_running_task(fake_agent):
    remote = WireClient(base_url=fake_agent.url)
    fake_agent.script([pause(0.3), completed("too late")])
    task = remote.send("work", blocking=False)["task"]
    assert_task_state(task, "submitted")
    assert_task_state(remote.result("CancelTask", {"id": task["id"]}), "canceled")
    assert_task_state(remote.result("GetTask", {"id": task["id"]}), "canceled")


# --- The plugin in other projects -------------------------------------------------------

FIRST_TEST = """
from a2a.testing import artifact_text, assert_task_state


def test_my_agent_answers(a2a_client):
    task = a2a_client.send("hi")["task"]
    assert_task_state(task, "completed")
    assert artifact_text(task) == "echo: hi"
"""


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{project}:{ROOT}", "HOME": str(project)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "a2a.testing.plugin", *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_the_plugin_runs_a_first_test_in_a_fresh_project(tmp_path):
    (tmp_path / "mysite.py").write_text(
        textwrap.dedent(f"""
        SECRET_KEY = "x"
        INSTALLED_APPS = ["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                          "django.contrib.sessions", "django.contrib.messages", "a2a", "stores"]
        DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": "{tmp_path / "db.sqlite3"}"}}}}
        ROOT_URLCONF = "a2a.urls"
        ALLOWED_HOSTS = ["testserver"]
        TASK_STORE = "orm"
        A2A_HANDLER = "a2a.handlers.echo"
    """)
    )
    (tmp_path / "test_agent.py").write_text(FIRST_TEST)
    done = run_pytest(tmp_path, "--ds=mysite", "-p", "no:xdist")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_plugin_does_nothing_in_a_project_that_is_not_django(tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n\n"
                                            "def test_asks(a2a_client):\n    pass\n")  # fmt: skip
    done = run_pytest(tmp_path, "-p", "no:django", "-p", "no:xdist", "-rs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout and "DJANGO_SETTINGS_MODULE" in done.stdout


def test_the_package_declares_the_entry_point():
    assert '"a2a.testing.plugin" = "a2a.testing.plugin"' in (ROOT / "pyproject.toml").read_text()


def test_send_params_keeps_a_configuration_given_empty():
    """HTTP+JSON v0.3's proto3 ``configuration: {}`` (not blocking) is sent as given;
    no configuration, or only ``blocking=None``, sends none."""
    assert send_params("hi", "0.3", configuration={})["configuration"] == {}
    assert "configuration" not in send_params("hi", "0.3")
    assert send_params("hi", "0.3", configuration={}, blocking=False)["configuration"] == {"blocking": False}
