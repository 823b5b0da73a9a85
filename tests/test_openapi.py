"""The OpenAPI description of the HTTP+JSON binding (``/a2a/rest/openapi.json``): made from
the binding's route table (every route and method is in it, and each described path
reaches the view it names), a valid OpenAPI 3.2 document whose schemas are the
specification's, served at its URL; and, against a live server, a bounded schemathesis
run (marked slow) that finds no server error and no answer off the description."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import jsonschema
import pytest
import referencing
from django.urls import URLPattern, get_resolver, resolve
from openapi_spec_validator import validate

from a2a.http import openapi, rest
from tests.helpers import call
from tests.server import running_server, site_env

URL = "/a2a/rest/openapi.json"
V10 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def doc() -> dict:
    return openapi.document("http://testserver/a2a/rest", "agent", "1.0.0")


def rest_url_patterns() -> dict[str, object]:
    """Every URL pattern of a2a.urls that serves the binding (by name), the interface URL
    itself (``rest``: the servers entry) and the description aside."""
    return {
        p.name: p
        for p in get_resolver("a2a.urls").url_patterns
        if isinstance(p, URLPattern) and p.name and p.name.startswith("rest-") and p.name != "rest-openapi"
    }


def test_every_rest_route_and_method_is_described(doc):
    described = {(op["x-a2a-route"], method.upper()) for item in doc["paths"].values() for method, op in item.items()}
    routed = {(route.name, method) for route in rest.ROUTES for method in route.operations}
    assert described == routed
    assert set(rest_url_patterns()) == {route.name for route in rest.ROUTES}  # urls.py routes exactly the table
    assert {name for name, _ in described} == set(rest_url_patterns())
    # the twelve operations of spec 11.3 (SubscribeToTask by POST and GET)
    assert len(described) == 12


def test_each_described_path_reaches_its_view(doc):
    assert doc["servers"] == [{"url": "http://testserver/a2a/rest"}]
    for path, item in doc["paths"].items():
        for op in item.values():
            concrete = path.replace("{task_id}", "t-1:x" if path.endswith((":cancel", ":subscribe")) else "t-1")
            concrete = concrete.replace("{config_id}", "c-1")
            for prefix in ("/a2a/rest", "/a2a/rest/v1"):  # v0.3's spelling reaches the same view
                match = resolve(prefix + concrete)
                assert match.url_name == op["x-a2a-route"], (prefix + concrete, match.url_name)
                assert match.func is rest.ROUTE[op["x-a2a-route"]].view
            route = rest.ROUTE[op["x-a2a-route"]]
            for param in op["parameters"]:
                if param.get("in") == "path":  # the route's regex is the parameter's pattern
                    assert param["schema"]["pattern"] == f"^{route.param_pattern(param['name'])}$"


def test_it_is_a_valid_openapi_3_document(doc):
    assert doc["openapi"].startswith("3.")
    validate(doc)  # raises on an invalid document (and on a $ref that resolves to nothing)


def test_the_schemas_are_the_specifications(doc):
    schemas = doc["components"]["schemas"]
    send = doc["paths"]["/message:send"]["post"]
    assert send["requestBody"]["content"]["application/a2a+json"]["schema"] == {
        "$ref": "#/components/schemas/SendMessageRequest"
    }
    assert send["responses"]["200"]["content"]["application/a2a+json"]["schema"] == {
        "$ref": "#/components/schemas/SendMessageResponse"
    }
    # application/json to a client whose Accept prefers it (a2a/http/media.py), errors too
    assert list(send["responses"]["200"]["content"]) == ["application/a2a+json", "application/json"]
    assert list(send["responses"]["default"]["content"]) == ["application/a2a+json", "application/json"]
    assert schemas["Task"]["title"] == "Task"
    assert schemas["Message"]["properties"]["parts"]["items"] == {"$ref": "#/components/schemas/Part"}
    list_params = {p["name"] for p in doc["paths"]["/tasks"]["get"]["parameters"] if p.get("in") == "query"}
    assert {"contextId", "status", "pageSize", "pageToken", "historyLength", "includeArtifacts"} <= list_params


def validator(doc: dict, name: str) -> jsonschema.Draft202012Validator:
    resource = referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012)
    registry = referencing.Registry().with_resource("urn:openapi", resource)
    return jsonschema.Draft202012Validator({"$ref": f"urn:openapi#/components/schemas/{name}"}, registry=registry)


def test_real_answers_match_the_described_schemas(doc, settings):
    settings.A2A_HANDLER = "a2a.handlers.echo"
    example = doc["paths"]["/message:send"]["post"]["requestBody"]["content"]["application/a2a+json"]["example"]
    body = {**example, "message": {**example["message"], "messageId": str(uuid.uuid4())}}
    sent = call("POST", "/a2a/rest/message:send", json=body, headers=V10)
    assert sent.status_code == 200, sent.text
    assert not list(validator(doc, "SendMessageResponse").iter_errors(sent.json()))
    task_id = sent.json()["task"]["id"]
    got = call("GET", f"/a2a/rest/tasks/{task_id}", headers=V10)
    assert not list(validator(doc, "Task").iter_errors(got.json()))
    listed = call("GET", "/a2a/rest/tasks", headers=V10)
    assert not list(validator(doc, "ListTasksResponse").iter_errors(listed.json()))
    missing = call("GET", "/a2a/rest/tasks/nope", headers=V10)
    assert missing.status_code == 404
    assert not list(validator(doc, "Status").iter_errors(missing.json()))


def test_the_1_1_draft_is_described(doc):
    """``A2A-Version: 1.1`` offered; ``currentGeneration`` a query parameter of GetTask;
    the task's and the updates' ``generation``; ``ifGenerationMatch`` and its 409."""
    assert doc["components"]["parameters"]["A2AVersion"]["schema"]["enum"] == ["1.0", "1.1"]
    schemas = doc["components"]["schemas"]
    get = doc["paths"]["/tasks/{task_id}"]["get"]
    [current] = [p for p in get["parameters"] if p.get("name") == "currentGeneration"]
    assert current["in"] == "query" and not current["required"]
    assert "long-poll" in current["schema"]["description"]
    for name in ("Task", "TaskStatusUpdateEvent", "TaskArtifactUpdateEvent"):
        assert schemas[name]["properties"]["generation"]["type"] == "string"  # int64 in ProtoJSON
    config = schemas["SendMessageConfiguration"]
    assert "ifGenerationMatch" in config["properties"] and "^(if_generation_match)$" in config["patternProperties"]
    for path in ("/message:send", "/message:stream"):
        conflict = doc["paths"][path]["post"]["responses"]["409"]
        assert "TaskGenerationMismatchError" in conflict["description"]
        assert conflict["content"]["application/a2a+json"]["schema"] == {"$ref": "#/components/schemas/Status"}
    assert "409" not in doc["paths"]["/tasks/{task_id}:cancel"]["post"]["responses"]


def test_real_1_1_answers_match_the_described_schemas(doc, settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    v11 = {"A2A-Version": "1.1"}
    message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "ask:Which city?"}]}
    sent = call("POST", "/a2a/rest/message:send", json={"message": message}, headers=v11)
    assert sent.status_code == 200, sent.text
    assert not list(validator(doc, "SendMessageResponse").iter_errors(sent.json()))
    task = sent.json()["task"]
    generation = int(task["generation"])
    # A long-poll already past: answered at once, a Task with its generation.
    got = call("GET", f"/a2a/rest/tasks/{task['id']}?currentGeneration={generation - 1}", headers=v11)
    assert got.status_code == 200 and got.json()["generation"] == task["generation"]
    assert not list(validator(doc, "Task").iter_errors(got.json()))
    # A follow-up that expects another generation: the described 409.
    follow = {**message, "messageId": str(uuid.uuid4()), "taskId": task["id"], "contextId": task["contextId"]}
    body = {"message": follow, "configuration": {"ifGenerationMatch": str(generation + 5)}}
    for path in ("/a2a/rest/message:send", "/a2a/rest/message:stream"):
        conflict = call("POST", path, json=body, headers=v11)
        assert conflict.status_code == 409, conflict.text
        assert conflict.headers["content-type"] == "application/a2a+json"
        assert not list(validator(doc, "Status").iter_errors(conflict.json()))
        assert conflict.json()["error"]["details"][0]["reason"] == "TASK_GENERATION_MISMATCH"


def test_served_at_its_url():
    response = call("GET", URL)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    served = response.json()
    assert served["servers"] == [{"url": "http://testserver/a2a/rest"}]
    assert served["info"]["title"] == "toolnexus-agent: A2A HTTP+JSON binding"
    assert set(served["paths"]) == {"/" + route.path for route in rest.ROUTES}
    assert call("POST", URL).status_code == 405


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_answer_off_the_description(tmp_path):
    """A bounded run (10 examples per operation, every phase, links followed) against the
    real server, in each version the description offers (``A2A-Version`` 1.0 and 1.1,
    from its enum): no 5xx, every status, content type and body as described. A
    long-poll (``currentGeneration``) is held at most a second."""
    schemathesis = Path(sys.executable).parent / "schemathesis"
    env = site_env(TASK_STORE="memory", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", A2A_LONG_POLL_TIMEOUT="1")
    with running_server(env, log=tmp_path / "server.log") as base:
        command = [
            str(schemathesis),
            "run",
            f"{base}{URL}",
            "--mode",
            "positive",
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--max-examples",
            "10",
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--seed",
            "20261201",
            "--generation-database",
            "none",
        ]
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "passed" in run.stdout
