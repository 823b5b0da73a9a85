"""The MCP endpoint in both revisions, in process: discovery, tools, calls, errors."""

from __future__ import annotations

import pytest

from tests.mcp.support import (
    ELICIT,
    LEGACY,
    MODERN,
    TASKS,
    error,
    events,
    legacy,
    legacy_session,
    modern,
    modern_body,
    modern_headers,
    post,
    result,
)

pytestmark = pytest.mark.django_db  # a 2025-11-25 session's end is a row of the database


@pytest.fixture(autouse=True)
def mcp_on(settings):
    settings.A2A_MCP = True
    settings.A2A_HANDLER = "tests.handlers.scripted"


def test_discover_names_both_revisions_and_caching_hints():
    found = result(modern("server/discover"))
    assert found["resultType"] == "complete"
    assert found["supportedVersions"] == [MODERN, LEGACY]
    assert "io.modelcontextprotocol/tasks" in found["capabilities"]["extensions"]
    assert found["ttlMs"] >= 0 and found["cacheScope"] == "public"


def test_tools_are_the_skills_in_order():
    found = result(modern("tools/list"))
    assert [t["name"] for t in found["tools"]] == ["echo"]
    tool = found["tools"][0]
    assert tool["title"] == "Echo" and tool["inputSchema"]["required"] == ["message"]
    assert found["cacheScope"] == "public"


def test_a_call_completes_as_an_a2a_task_owned_and_recorded():
    found = result(modern("tools/call", {"name": "echo", "arguments": {"message": "hi"}}))
    assert found == found | {"resultType": "complete", "isError": False}
    assert found["content"][0] == {"type": "text", "text": "done: hi"}
    from stores.backends import get_task_store

    task = get_task_store().get(found["_meta"]["a2a/taskId"])
    assert task["status"]["state"] == "completed" and task["_call"]["binding"] == "mcp"


def test_data_parts_become_structured_content(settings):
    settings.A2A_INPUT_MODES = ["text/plain", "application/json"]
    found = result(modern("tools/call", {"name": "echo", "arguments": {"message": 'data:{"a": 1}'}}))
    assert found["structuredContent"] == {"a": 1}


def test_a_failed_task_is_a_tool_error():
    found = result(modern("tools/call", {"name": "echo", "arguments": {"message": "fail:no luck"}}))
    assert found["isError"] is True and found["content"][0]["text"] == "no luck"


@pytest.mark.parametrize(
    "arguments",
    [{"message": 3}, {"message": "x", "bogus": 1}, {}, "text"],
    ids=["type", "unknown", "missing", "not-object"],
)
def test_wrong_arguments_are_invalid_params(arguments):
    error(modern("tools/call", {"name": "echo", "arguments": arguments}), 200, -32602)


def test_an_unknown_tool_is_invalid_params():
    assert (
        "Unknown tool"
        in error(modern("tools/call", {"name": "nope", "arguments": {"message": "x"}}), 200, -32602)["message"]
    )


def test_an_unknown_method_is_404_method_not_found():
    error(modern("resources/list"), 404, -32601)


def test_versions_and_headers_are_checked():
    body = modern_body("tools/list")
    headers = modern_headers(body)
    error(post(body, {k: v for k, v in headers.items() if k != "MCP-Protocol-Version"}), 400, -32020)
    error(post(body, headers | {"MCP-Protocol-Version": "1900-01-01"}), 400, -32022)  # the header's version
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
    found = error(post(body, headers | {"MCP-Protocol-Version": "1900-01-01"}), 400, -32022)
    assert found["data"] == {"supported": [MODERN, LEGACY], "requested": "1900-01-01"}
    error(modern("tools/list", **{"Mcp-Method": "tools/call"}), 400, -32020)
    call = modern_body("tools/call", {"name": "echo", "arguments": {"message": "x"}})
    error(post(call, modern_headers(call) | {"Mcp-Name": "other"}), 400, -32020)
    del body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
    error(post(body, headers), 400, -32602)


def test_bad_json_and_cross_origin_and_get():
    error(post(b"{nope", {"Content-Type": "application/json"}), 400, -32700)
    body = modern_body("tools/list")
    error(post(body, modern_headers(body) | {"Origin": "https://evil.example"}), 403, -32600)
    assert post(body, modern_headers(body) | {"Origin": "http://localhost:8000"}).status_code == 200


def test_off_unless_turned_on(settings):
    settings.A2A_MCP = False
    assert modern("server/discover").status_code == 404


def test_a_question_is_an_input_required_result_and_the_retry_continues_the_task():
    asked = result(modern("tools/call", {"name": "echo", "arguments": {"message": "ask:Which city?"}}, caps=ELICIT))
    assert asked["resultType"] == "input_required"
    ((key, request),) = asked["inputRequests"].items()
    assert request["method"] == "elicitation/create" and request["params"]["message"] == "Which city?"
    retry = {"name": "echo", "arguments": {"message": "ask:Which city?"}, "requestState": asked["requestState"]}
    retry["inputResponses"] = {key: {"action": "accept", "content": {"answer": "Paris"}}}
    done = result(modern("tools/call", retry, caps=ELICIT))
    assert done["content"][0]["text"] == "done: Paris"


def test_a_forged_request_state_is_refused():
    retry = {"name": "echo", "arguments": {"message": "x"}, "requestState": "forged", "inputResponses": {}}
    error(modern("tools/call", retry, caps=ELICIT), 200, -32602)


def test_a_question_without_the_elicitation_capability_names_it():
    found = error(modern("tools/call", {"name": "echo", "arguments": {"message": "ask:?"}}), 400, -32021)
    assert found["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}


def test_progress_streams_the_task_updates():
    params = {"name": "echo", "arguments": {"message": "progress:one;progress:two"}, "_meta": {"progressToken": "p"}}
    response = modern("tools/call", params)
    assert response.headers["content-type"].startswith("text/event-stream")
    sent = events(response)
    notes = [e["params"] for e in sent if e.get("method") == "notifications/progress"]
    assert [n["message"] for n in notes][:2] == ["one", "two"]  # then the answer's own chunk
    assert [n["progress"] for n in notes] == list(range(1, len(notes) + 1))
    assert sent[-1]["result"]["content"][0]["text"].startswith("done: ")


def test_a_task_handle_is_polled_to_its_end():
    handle = result(modern("tools/call", {"name": "echo", "arguments": {"message": "hi"}}, caps=TASKS))
    assert handle["resultType"] == "task" and handle["status"] == "working"
    from tests.helpers import wait_until

    def done():
        found = result(modern("tasks/get", {"taskId": handle["taskId"]}, caps=TASKS))
        return found if found["status"] == "completed" else None

    found = wait_until(done, timeout=10, what="the task to complete")
    assert found["result"]["content"][0]["text"] == "done: hi"


def test_a_task_handle_is_cancelled(tmp_path):
    gate = tmp_path / "gate"
    handle = result(modern("tools/call", {"name": "echo", "arguments": {"message": f"wait:{gate}"}}, caps=TASKS))
    assert result(modern("tasks/cancel", {"taskId": handle["taskId"]}, caps=TASKS)) == {"resultType": "complete"}
    assert result(modern("tasks/get", {"taskId": handle["taskId"]}, caps=TASKS))["status"] == "cancelled"
    gate.touch()


def test_an_unknown_task_is_invalid_params():
    error(modern("tasks/get", {"taskId": "nope"}, caps=TASKS), 200, -32602)


def test_legacy_initialize_list_and_call():
    session = legacy_session()
    assert [t["name"] for t in result(legacy(session, "tools/list"))["tools"]] == ["echo"]
    found = result(legacy(session, "tools/call", {"name": "echo", "arguments": {"message": "hi"}}))
    assert found["content"][0]["text"] == "done: hi" and "resultType" not in found
    assert result(legacy(session, "ping")) == {}


@pytest.mark.django_db(transaction=True)  # the DELETE writes from the app's thread
def test_legacy_session_is_required_and_ends():
    error(
        post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"Content-Type": "application/json", "MCP-Protocol-Version": LEGACY},
        ),
        400,
        -32600,
    )
    session = legacy_session()
    from tests.helpers import http

    assert http("DELETE", "/mcp", headers={"Mcp-Session-Id": session}).status_code == 204
    error(legacy(session, "tools/list"), 404, -32600)


@pytest.mark.django_db(transaction=True)  # the DELETE writes from the app's thread
def test_two_sessions_of_one_caller_are_two_and_one_ends_alone():
    """Two clients of one caller with the same capabilities, initialized at once: ending
    one leaves the other (ids signed within the same second were once the same)."""
    from tests.helpers import http

    first, second = legacy_session(), legacy_session()
    assert first != second
    assert http("DELETE", "/mcp", headers={"Mcp-Session-Id": first}).status_code == 204
    error(legacy(first, "tools/list"), 404, -32600)
    assert "tools" in result(legacy(second, "tools/list"))
