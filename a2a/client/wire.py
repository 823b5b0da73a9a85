"""Requests rendered and answers parsed in a remote agent's dialect, with the project's own
dialects (:mod:`a2a.protocol`): the leaves (messages, parts, states, roles, push configs)
are theirs, so a remote task becomes the canonical model by the same code that turns a
request into it; this module only adds the shapes a server sends and a client reads
(a Task, a stream event, a page).

Every parse error of an answer is an :class:`~a2a.client.errors.InvalidResponseError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from a2a.client.errors import InvalidResponseError
from a2a.protocol import V03, V03_REST, V1_VERSIONS, V10, V11, Dialect
from a2a.protocol.errors import A2AError
from a2a.protocol.model import (
    INT64_MAX,
    SETTLED_STATES,
    Artifact,
    Message,
    StreamItem,
    Task,
    pick,
    want_int,
    want_object,
    want_string,
)
from stores.base import TaskPage
from stores.fields import ARTIFACT_GENERATIONS, GENERATION, TIMELINE

T = TypeVar("T")
_ARTIFACT_KEYS = ("name", "description", "metadata", "extensions")


def dialect_of(version: str, binding: str) -> Dialect:
    """The dialect an interface speaks: 1.1, v1.0, v0.3 JSON-RPC, or v0.3 HTTP+JSON."""
    if version in V1_VERSIONS:
        return V11 if version == "1.1" else V10
    return V03_REST if binding == "HTTP+JSON" else V03


def parsed(parse: Callable[[], T], what: str) -> T:
    """``parse()``, with a protocol error (the dialect's validation) as InvalidResponseError."""
    try:
        return parse()
    except A2AError as exc:
        raise InvalidResponseError(f"The agent's {what} is not valid A2A: {exc.message}") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidResponseError(f"The agent's {what} is not valid A2A ({type(exc).__name__}: {exc})") from None


# --- requests --------------------------------------------------------------------------------


def render_send(
    d: Dialect,
    message: Message,
    *,
    blocking: bool = True,
    history_length: int | None = None,
    accepted_output_modes: list[str] | None = None,
    push_config: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    if_generation_match: int | None = None,
) -> dict[str, Any]:
    """SendMessageRequest params (a message in canonical shape); ``if_generation_match``
    (1.1 agents): a follow-up taken only while the task is at that generation."""
    config: dict[str, Any] = {"returnImmediately": not blocking} if d.version in V1_VERSIONS else {"blocking": blocking}
    if history_length is not None:
        config["historyLength"] = history_length
    if accepted_output_modes:
        config["acceptedOutputModes"] = list(accepted_output_modes)
    if if_generation_match is not None:
        config["ifGenerationMatch"] = str(if_generation_match)
    if push_config is not None:
        key = (
            "taskPushNotificationConfig"
            if d.version in V1_VERSIONS
            else "pushNotification"
            if d is V03_REST
            else "pushNotificationConfig"
        )
        rendered = render_push_config(d, {"taskId": message.get("taskId") or "", **push_config})
        config[key] = rendered if d.version in V1_VERSIONS else rendered["pushNotificationConfig"]
    body: dict[str, Any] = {"message": d.render_message(message), "configuration": config}
    if metadata:
        body["metadata"] = metadata
    return body


def render_push_config(d: Dialect, config: dict[str, Any]) -> dict[str, Any]:
    """A canonical push config (``id`` optional) as CreateTaskPushNotificationConfig params."""
    out = d.render_push_config({**config, "id": config.get("id") or ""})
    out.pop("name", None)  # v0.3 HTTP+JSON: the task comes from the path
    if not config.get("id"):
        (out if d.version in V1_VERSIONS else out["pushNotificationConfig"]).pop("id", None)
    return out


def render_list(
    d: Dialect,
    *,
    context_id: str | None = None,
    state: str | None = None,
    page_size: int | None = None,
    page_token: str | None = None,
    history_length: int | None = None,
    include_artifacts: bool | None = None,
    updated_after: str | None = None,
) -> dict[str, Any]:
    """ListTasksRequest params (states canonical, ``updated_after`` an ISO 8601 timestamp)."""
    params: dict[str, Any] = {
        "contextId": context_id,
        "status": d.render_state(state) if state else None,
        "pageSize": page_size,
        "pageToken": page_token,
        "historyLength": history_length,
        "includeArtifacts": include_artifacts,
        "statusTimestampAfter": updated_after,
    }
    return {k: v for k, v in params.items() if v is not None}


# --- answers ---------------------------------------------------------------------------------


def parse_status(d: Dialect, raw: Any, path: str) -> dict[str, Any]:
    raw = want_object(raw, path)
    status: dict[str, Any] = {"state": d.parse_state(raw.get("state"), f"{path}.state")}
    if raw.get("message"):
        status["message"] = d.parse_message(raw["message"], f"{path}.message")
    if raw.get("timestamp"):
        status["timestamp"] = want_string(raw["timestamp"], f"{path}.timestamp")
    return status


def parse_artifact(d: Dialect, raw: Any, path: str) -> Artifact:
    raw = want_object(raw, path)
    artifact: Artifact = {
        "artifactId": want_string(pick(raw, "artifactId"), f"{path}.artifactId"),
        "parts": [d.parse_part(p, f"{path}.parts[{i}]") for i, p in enumerate(raw.get("parts") or ())],
    }
    for key in _ARTIFACT_KEYS:
        if raw.get(key):
            artifact[key] = raw[key]
    return artifact


def parse_task(d: Dialect, raw: Any, path: str = "task") -> Task:
    """A Task in ``d``'s shape as a canonical task."""
    raw = want_object(raw, path)
    task: Task = {
        "kind": "task",
        "id": want_string(raw.get("id"), f"{path}.id"),
        "contextId": pick(raw, "contextId") or "",
        "status": parse_status(d, raw.get("status") or {}, f"{path}.status"),
    }
    if raw.get("artifacts"):
        task["artifacts"] = [parse_artifact(d, a, f"{path}.artifacts[{i}]") for i, a in enumerate(raw["artifacts"])]
    if raw.get("history"):
        task["history"] = [d.parse_message(m, f"{path}.history[{i}]") for i, m in enumerate(raw["history"])]
    if raw.get("metadata"):
        task["metadata"] = want_object(raw["metadata"], f"{path}.metadata")
    if (number := parse_generation(raw, path)) is not None:
        task[GENERATION] = number
    _parse_timeline(d, raw, task, path)
    return task


def _parse_timeline(d: Dialect, raw: dict[str, Any], task: Task, path: str) -> None:
    """Keep a 1.1 Task's ``timeline`` and its artifacts' generations in ``task`` (in place):
    :mod:`a2a.client.timeline` reads them."""
    entries = []
    for i, entry in enumerate(raw.get("timeline") or ()):
        at = f"{path}.timeline[{i}]"
        entry = want_object(entry, at)
        generation = _entry_generation(entry.get("generation"), f"{at}.generation")
        if entry.get("message") is not None:
            entries.append({"g": generation, "message": d.parse_message(entry["message"], f"{at}.message")})
        elif entry.get("status") is not None:
            entries.append({"g": generation, "status": parse_status(d, entry["status"], f"{at}.status")})
        # else: a kind of entry this client does not know: skipped, not a gap (spec 3.2.8)
    if "timeline" in raw:
        task[TIMELINE] = sorted(entries, key=lambda e: e["g"])
    spans = {}
    for i, artifact in enumerate(raw.get("artifacts") or ()):  # (parse_task checked each is an object)
        at = f"{path}.artifacts[{i}]"
        start = _entry_generation(artifact.get("startGeneration"), f"{at}.startGeneration")
        if start:
            end = _entry_generation(artifact.get("endGeneration"), f"{at}.endGeneration")
            spans[artifact.get("artifactId", "")] = [start, end or None]
    if spans:
        task[ARTIFACT_GENERATIONS] = spans


def _entry_generation(value: Any, path: str) -> int:
    return want_int(value, path, minimum=0, maximum=INT64_MAX) or 0


def parse_generation(raw: dict[str, Any], path: str) -> int | None:
    """The ``generation`` of a 1.1 Task or update (ProtoJSON: an int64 as a string)."""
    return want_int(raw.get("generation"), f"{path}.generation", minimum=0, maximum=INT64_MAX)


def _ids(raw: dict[str, Any], path: str) -> Task:
    return {
        "kind": "task",
        "id": want_string(pick(raw, "taskId"), f"{path}.taskId"),
        "contextId": pick(raw, "contextId") or "",
    }


def _parse_event(d: Dialect, kind: str, raw: Any) -> StreamItem:
    if kind == "task":
        return StreamItem("task", task=parse_task(d, raw))
    if kind == "message":
        return StreamItem("message", message=d.parse_message(raw))
    raw = want_object(raw, kind)
    task = _ids(raw, kind)
    number = parse_generation(raw, kind)
    if kind == "status":
        task["status"] = parse_status(d, raw.get("status") or {}, f"{kind}.status")
        final = raw.get("final")
        final = bool(final) if final is not None else _settled(task)
        return StreamItem("status", task=task, final=final, seq=number)
    return StreamItem(
        "artifact",
        task=task,
        artifact=parse_artifact(d, raw.get("artifact"), f"{kind}.artifact"),
        append=bool(raw.get("append")),
        last_chunk=bool(pick(raw, "lastChunk")),
        seq=number,
    )


def _settled(task: Task) -> bool:
    return task["status"]["state"] in SETTLED_STATES


#: v0.3 JSON-RPC ``kind`` and v1.0 StreamResponse member of each stream event kind.
_V03_KINDS = {"task": "task", "message": "message", "status-update": "status", "artifact-update": "artifact"}
_V10_KINDS = {"task": "task", "message": "message", "statusUpdate": "status", "artifactUpdate": "artifact"}


def parse_event(d: Dialect, raw: Any) -> StreamItem:
    """A stream event (or a SendMessage result) as a :class:`StreamItem`: a v0.3 event
    with its ``kind``, or a v1.0 StreamResponse with its one member."""

    def parse() -> StreamItem:
        obj = want_object(raw, "result")
        if obj.get("kind") in _V03_KINDS:
            return _parse_event(d, _V03_KINDS[obj["kind"]], obj)
        for key, kind in _V10_KINDS.items():
            member = pick(obj, key)
            if member is not None:
                return _parse_event(d, kind, member)
        if "kind" not in obj and "id" in obj and "status" in obj:  # a Task without its kind: toolnexus's
            return _parse_event(d, "task", obj)
        raise InvalidResponseError(f"The agent's answer is no task, message or task update: keys {sorted(obj)}")

    return parsed(parse, "event")


def parse_send_result(d: Dialect, raw: Any) -> Task | Message:
    """SendMessage's answer: the canonical Task or Message."""
    item = parse_event(d, raw)
    if item.kind == "message" and item.message is not None:
        return item.message
    if item.kind == "task" and item.task is not None:
        return item.task
    raise InvalidResponseError(f"SendMessage answered a {item.kind} update, not a task or a message")


def parse_list(d: Dialect, raw: Any) -> TaskPage:
    """ListTasks' answer as a page of canonical tasks."""

    def parse() -> TaskPage:
        obj = want_object(raw, "result")
        tasks = [parse_task(d, t, f"tasks[{i}]") for i, t in enumerate(obj.get("tasks") or ())]
        total = pick(obj, "totalSize")
        return TaskPage(tasks, pick(obj, "nextPageToken") or "", int(total) if total is not None else len(tasks))

    return parsed(parse, "task list")


def parse_push_config(d: Dialect, raw: Any) -> dict[str, Any]:
    """A TaskPushNotificationConfig as a canonical config ``{id, taskId, url, token?, authentication?}``."""

    def parse() -> dict[str, Any]:
        obj = want_object(raw, "result")
        if pick(obj, "taskId") is None and isinstance(obj.get("name"), str):
            # v0.3 HTTP+JSON names the task: "tasks/{id}/pushNotificationConfigs/{configId}".
            obj = {**obj, "taskId": obj["name"].split("/")[1] if obj["name"].count("/") >= 3 else ""}
        params = d.parse_push_create(obj)
        config: dict[str, Any] = {"id": params.id, "taskId": params.task_id, "url": params.url}
        if params.token:
            config["token"] = params.token
        if params.authentication:
            config["authentication"] = params.authentication
        return config

    return parsed(parse, "push notification config")


def parse_push_list(d: Dialect, raw: Any) -> list[dict[str, Any]]:
    """ListTaskPushNotificationConfigs' answer: a v0.3 array, or v1.0's ``{configs}``."""
    items = raw if isinstance(raw, list) else (raw or {}).get("configs") if isinstance(raw, dict) else None
    if not isinstance(items, list):
        raise InvalidResponseError("The agent's push notification config list is not a list")
    return [parse_push_config(d, item) for item in items]


def parse_task_result(d: Dialect, raw: Any) -> Task:
    """A bare Task answer (GetTask, CancelTask)."""
    return parsed(lambda: parse_task(d, raw), "task")
