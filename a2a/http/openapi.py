"""The OpenAPI 3.2 description of the HTTP+JSON binding, served at ``a2a/rest/openapi.json``.

Generated from the binding's own route table (:data:`a2a.http.rest.ROUTES`, which
``a2a/urls/`` makes the URL patterns from): every route and method, its A2A operation,
and the request and response schemas of the specification's JSON Schema bundle
(``a2a/protocol/a2a.schema.json``, the A2A v1.0 ``a2a.schema.json``, Apache-2.0, copied
as published), renamed into ``components/schemas``. It describes the v1.0 dialect (the
``A2A-Version: 1.0`` header); v0.3 clients use the same routes with ``/v1`` before each
path and v0.3 bodies. The A2A 1.1 draft's fields (the task's ``generation``,
``currentGeneration``, ``ifGenerationMatch``: :data:`DRAFT_11_FIELDS`) are added to the
v1.0 schemas, each described as the draft's, and ``A2A-Version: 1.1`` is offered beside
``1.0``: a 1.0 answer never carries them, a 1.1 answer may.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import json
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from a2a.conf import a2a_settings
from a2a.http.common import origin, request_agent
from a2a.http.media import A2A_JSON, JSON
from a2a.http.rest import PARAM, ROUTES, Route
from a2a.protocol import V1_VERSIONS
from a2a.protocol.model import INT64_MAX

OPENAPI_VERSION = "3.2.0"  # 3.2 describes each event of an SSE stream (itemSchema)
#: Request fields bound to the path (or, ``tenant``, to a tenant path not served here),
#: never query parameters.
PATH_FIELDS = frozenset({"id", "taskId", "tenant"})
SCHEMAS = "#/components/schemas/"
SSE_EVENT = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "event": {"type": "string"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"anyOf": [{"$ref": SCHEMAS + "StreamResponse"}, {"$ref": SCHEMAS + "Status"}]},
        },
    },
}
#: Request bodies the agent accepts, for readers and for testing tools' first cases.
EXAMPLES = {
    "SendMessageRequest": {
        "message": {"role": "ROLE_USER", "messageId": "openapi-example", "parts": [{"text": "hello"}]},
        "configuration": {"returnImmediately": False},
    },
}
#: int64 in ProtoJSON: a number or a string of digits in a request, a string in an answer.
_INT64_IN = {
    "anyOf": [
        {"type": "integer", "minimum": 0, "maximum": INT64_MAX},
        {"type": "string", "pattern": "^[0-9]{1,19}$"},
    ]
}
_GENERATION = {"type": "string", "pattern": "^[0-9]+$"}
_DRAFT = "A2A 1.1 draft (section 3.2.7 Task Generation Semantics): "
#: The A2A 1.1 draft's fields, added to the v1.0 schemas: schema -> {(JSON name, proto name): schema}.
DRAFT_11_FIELDS: dict[str, dict[tuple[str, str], dict[str, Any]]] = {
    "Task": {
        ("generation", "generation"): {
            **_GENERATION,
            "description": _DRAFT + "grows by exactly 1 on every state change and artifact change, starting at "
            "1. Only in answers to A2A-Version: 1.1.",
        }
    },
    "TaskStatusUpdateEvent": {
        ("generation", "generation"): {
            **_GENERATION,
            "description": _DRAFT + "the task's generation after this update. Only with A2A-Version: 1.1.",
        }
    },
    "TaskArtifactUpdateEvent": {
        ("generation", "generation"): {
            **_GENERATION,
            "description": _DRAFT + "the task's generation after this update. Only with A2A-Version: 1.1.",
        }
    },
    "SendMessageConfiguration": {
        ("ifGenerationMatch", "if_generation_match"): {
            **_INT64_IN,
            "description": _DRAFT + "a follow-up is taken only while the task's generation is this one; "
            "otherwise 409 TaskGenerationMismatchError. Ignored for a new task.",
        }
    },
    "GetTaskRequest": {
        ("currentGeneration", "current_generation"): {
            **_INT64_IN,
            "description": _DRAFT + "a long-poll: the answer waits until the task's generation is past this "
            "one (at once when it already is, or the task is terminal), or A2A_LONG_POLL_TIMEOUT, then "
            "gives the task as it stands.",
        }
    },
}
_TIMELINE = "A2A 1.1 draft (section 3.2.8 Task Timeline Semantics): "
_TIMELINE_LENGTH = {
    "anyOf": [{"type": "integer", "minimum": 0, "maximum": 2147483647}, {"type": "string", "pattern": "^[0-9]+$"}],
    "description": _TIMELINE + "at most this many most recent timeline entries (unset: all, 0: none). "
    "Only with A2A-Version: 1.1.",
}
_ENTRY = {
    "type": "object",
    "title": "TimelineEntry",
    "description": "A client message or an agent status, with the generation at which it was appended.",
    "properties": {
        "message": {"$ref": SCHEMAS + "Message"},
        "status": {"$ref": SCHEMAS + "TaskStatus"},
        "generation": _GENERATION,
    },
}
DRAFT_11_FIELDS["Task"][("timeline", "timeline")] = {
    "type": "array",
    "items": _ENTRY,
    "description": _TIMELINE + "the client messages and agent statuses in generation order (gaps are "
    "artifact updates). Only in answers to A2A-Version: 1.1.",
}
DRAFT_11_FIELDS["Artifact"] = {
    ("startGeneration", "start_generation"): {
        **_GENERATION,
        "description": _TIMELINE + "the generation at which the artifact first appeared.",
    },
    ("endGeneration", "end_generation"): {
        **_GENERATION,
        "description": _TIMELINE + "the generation at which it was completed; unset while it streams.",
    },
}
for _request in ("SendMessageConfiguration", "GetTaskRequest", "ListTasksRequest"):
    DRAFT_11_FIELDS.setdefault(_request, {})[("timelineLength", "timeline_length")] = _TIMELINE_LENGTH
#: The answer to a follow-up whose ``ifGenerationMatch`` is not the task's generation.
GENERATION_MISMATCH = {
    "description": _DRAFT + "TaskGenerationMismatchError (status ABORTED, ErrorInfo reason "
    "TASK_GENERATION_MISMATCH; metadata taskId, expectedGeneration, currentGeneration): "
    "configuration.ifGenerationMatch is not the task's generation.",
    "content": {media: {"schema": {"$ref": SCHEMAS + "Status"}} for media in (A2A_JSON, JSON)},
}
#: The task a SendMessage answers with, as the path parameter of the task's operations
#: (OpenAPI links: what a stateful test follows).
TASK_LINKS = ("GetTask", "CancelTask", "SubscribeToTaskGet", "ListTaskPushNotificationConfigs")


@functools.cache
def spec_schemas() -> dict[str, Any]:
    """The a2a.schema.json definitions as OpenAPI component schemas: each named by its
    title without spaces (``Send Message Request`` -> ``SendMessageRequest``, the name its
    ``$ref``s use), ``$schema`` dropped, ``$ref``s pointing into ``components/schemas``."""
    raw = json.loads((importlib.resources.files("a2a.protocol") / "a2a.schema.json").read_text())

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v) for k, v in node.items() if k != "$schema"}
            ref = out.get("$ref")
            if isinstance(ref, str) and ref.endswith(".jsonschema.json"):
                out["$ref"] = SCHEMAS + ref.removesuffix(".jsonschema.json").rsplit(".", 1)[-1]
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    return {title.replace(" ", ""): rewrite(definition) for title, definition in raw["definitions"].items()}


@functools.cache
def described_schemas() -> dict[str, Any]:
    """:func:`spec_schemas` with the A2A 1.1 draft's fields (:data:`DRAFT_11_FIELDS`): the
    camelCase name a property, the proto name a pattern property, as a2a.schema.json
    names every field."""
    schemas = copy.deepcopy(spec_schemas())
    for name, fields in DRAFT_11_FIELDS.items():
        for (json_name, proto_name), schema in fields.items():
            schemas[name]["properties"][json_name] = schema
            if proto_name != json_name:
                schemas[name].setdefault("patternProperties", {})[f"^({proto_name})$"] = schema
    return schemas


def _status_schema() -> dict[str, Any]:
    """google.rpc.Status, as the binding answers every error (spec 11.6)."""
    return {
        "type": "object",
        "description": "An error: google.rpc.Status with the HTTP status as code (spec 5.4, 11.6).",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "status", "message"],
                "properties": {
                    "code": {"type": "integer"},
                    "status": {
                        "type": "string",
                        "examples": ["INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "UNAVAILABLE"],
                    },
                    "message": {"type": "string"},
                    "details": {"type": "array", "items": {"type": "object"}},
                },
            }
        },
    }


def _openapi_path(path: str) -> str:
    return "/" + path  # the {param} placeholders are already OpenAPI's


def _parameters(route: Route, request: dict[str, Any], *, query: bool) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = [{"$ref": "#/components/parameters/A2AVersion"}]
    for _literal, name in PARAM.findall(route.path + "{}"):
        if name:  # the route's own regex, as a pattern (a task id holds no "/", nor ":" in most routes)
            schema = {"type": "string", "pattern": f"^{route.param_pattern(name)}$"}
            parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    if query:
        for name, schema in (request.get("properties") or {}).items():
            if name not in PATH_FIELDS:
                parameters.append({"name": name, "in": "query", "required": False, "schema": schema})
    return parameters


def _answer(response: str | None) -> dict[str, Any]:
    if response is None:
        return {
            "description": "A Server-Sent Events stream, the data of each event a StreamResponse; "
            "an error before the first event is a Status body, one after it a last event with a Status.",
            # OpenAPI 3.2: the schema of each event of the stream (its data is JSON).
            "content": {"text/event-stream": {"itemSchema": SSE_EVENT}},
        }
    schema = {"type": "object"} if response == "Empty" else {"$ref": SCHEMAS + response}
    return {"description": f"{response} (google.protobuf.Empty: {{}})" if response == "Empty" else response,
            "content": _json(schema)}  # fmt: skip


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    """An answer's content: ``application/a2a+json``, or ``application/json`` to a client
    whose ``Accept`` prefers it (:mod:`a2a.http.media`)."""
    return {A2A_JSON: {"schema": schema}, JSON: {"schema": schema}}


def _operation(route: Any, method: str, operation: Any, operation_id: str, request: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI operation object of one route's method."""
    entry: dict[str, Any] = {
        "operationId": operation_id,
        "summary": operation.name,
        "description": request.get("description", ""),
        "parameters": _parameters(route, request, query=not operation.body),
        "responses": {
            "200": _answer(operation.response),
            "default": {
                "description": "An error (google.rpc.Status)",
                "content": _json({"$ref": SCHEMAS + "Status"}),
            },
        },
        "x-a2a-route": route.name,
    }
    if operation.request == "SendMessageRequest":
        entry["responses"]["409"] = GENERATION_MISMATCH
    if route.aliases:
        entry["description"] += f" Also served as {', '.join('/' + a for a in route.aliases)}."
    if operation.body:
        media: dict[str, Any] = {"schema": {"$ref": SCHEMAS + operation.request}}
        if operation.request in EXAMPLES:
            media["example"] = EXAMPLES[operation.request]
        entry["requestBody"] = {"required": True, "content": {A2A_JSON: media, JSON: media}}
    if operation.name == "SendMessage":
        entry["responses"]["200"]["links"] = {
            name: {"operationId": name, "parameters": {"path.task_id": "$response.body#/task/id"}}
            for name in TASK_LINKS
        }
    return entry


def _paths(schemas: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every route's path item, each operation id unique (a second method on one name
    gets the method appended)."""
    paths: dict[str, dict[str, Any]] = {}
    operation_ids: set[str] = set()
    for route in ROUTES:
        item = paths.setdefault(_openapi_path(route.path), {})
        for method, operation in route.operations.items():
            operation_id = operation.name
            if operation_id in operation_ids:
                operation_id += method.capitalize()
            operation_ids.add(operation_id)
            item[method.lower()] = _operation(route, method, operation, operation_id, schemas[operation.request])
    return paths


@functools.lru_cache(maxsize=16)
def document(server_url: str, title: str, version: str) -> dict[str, Any]:
    """The OpenAPI document for the binding served at ``server_url``."""
    schemas = described_schemas()
    paths = _paths(schemas)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": f"{title}: A2A HTTP+JSON binding",
            "version": version,
            "description": (
                "The A2A v1.0 HTTP+JSON/REST binding (specification section 11) of this agent, generated "
                "from its route table. Send `A2A-Version: 1.0`, or `1.1` for the A2A 1.1 draft's task "
                "generation (`generation` in answers; `currentGeneration`, `ifGenerationMatch` and its 409); "
                "v0.3 clients put /v1 before each path. Errors are google.rpc.Status objects."
            ),
        },
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {
            "schemas": {**copy.deepcopy(schemas), "Status": _status_schema()},
            "parameters": {
                "A2AVersion": {
                    "name": "A2A-Version",
                    "in": "header",
                    "required": True,
                    "description": "The protocol version of the request and its answer (spec 3.6): 1.0, or "
                    "1.1 (the draft: answers carry the task's generation).",
                    "schema": {"type": "string", "enum": sorted(V1_VERSIONS)},
                }
            },
        },
    }


@csrf_exempt  # read-only: any other method gets 405, not CSRF's 403
async def openapi_json(request: HttpRequest) -> HttpResponse:
    """GET the OpenAPI description of the HTTP+JSON binding (public, like the card)."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    agent = request_agent(request)
    doc = document(origin(request) + agent.path("rest"), agent.settings.AGENT_NAME, agent.settings.AGENT_VERSION)
    return HttpResponse(
        orjson.dumps(doc),
        content_type="application/json",
        headers={"Cache-Control": f"public, max-age={a2a_settings.CARD_MAX_AGE}", "Vary": "Host"},
    )
