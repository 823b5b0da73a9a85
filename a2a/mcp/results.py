"""An A2A task as MCP sees it: a tool's result, a question, a task of the tasks extension.

A completed task's output (its artifacts' parts, else its status message's) becomes the
``CallToolResult``: text parts its text content, data parts its ``structuredContent``
(with the JSON as text too, as the spec asks), file parts a ``resource_link`` (a URI: the
project's files endpoint serves it to the task's owner only) or an embedded resource
(inline bytes). A failed, rejected or canceled task is a result with ``isError``: a tool
execution error the model reads, not a protocol error. A task waiting in
``input-required`` asks its question as a form elicitation: an approval (the framework
adapters' ``a2a.awaiting`` data) a yes/no form, anything else one text answer.
"""

from __future__ import annotations

from typing import Any

import orjson

from a2a.handlers.frameworks.awaiting import is_approval as asks_approval
from a2a.protocol.model import Message, Part, Task, task_state
from stores.fields import CREATED, task_call

#: The ``_meta`` keys a result names its A2A task and conversation with.
META_TASK = "a2a/taskId"
META_CONTEXT = "a2a/contextId"

ERROR_STATES = frozenset({"failed", "rejected", "canceled"})


def _text(parts: list[Part]) -> str:
    return "\n".join(p["text"] for p in parts if p.get("kind") == "text" and isinstance(p.get("text"), str))


def _status_parts(task: Task) -> list[Part]:
    return list(((task.get("status") or {}).get("message") or {}).get("parts") or [])


def _output_parts(task: Task) -> list[Part]:
    parts = [p for a in task.get("artifacts") or () for p in a.get("parts") or ()]
    return parts or _status_parts(task)


def _file_content(part: Part) -> dict[str, Any]:
    file = part.get("file") or {}
    name = str(file.get("name") or "file")
    mime = file.get("mimeType")
    if "uri" in file:
        link: dict[str, Any] = {"type": "resource_link", "uri": file["uri"], "name": name}
        return link | ({"mimeType": mime} if mime else {})
    resource: dict[str, Any] = {"uri": f"a2a-file:///{name}", "blob": file.get("bytes", "")}
    return {"type": "resource", "resource": resource | ({"mimeType": mime} if mime else {})}


def content(parts: list[Part]) -> dict[str, Any]:
    """The ``content`` and ``structuredContent`` of ``parts``."""
    blocks: list[dict[str, Any]] = []
    data: list[Any] = []
    for part in parts:
        kind = part.get("kind")
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "data":
            data.append(part.get("data"))
            blocks.append({"type": "text", "text": orjson.dumps(part.get("data")).decode()})
        elif kind == "file":
            blocks.append(_file_content(part))
    found: dict[str, Any] = {"content": blocks}
    if data:
        found["structuredContent"] = data[0] if len(data) == 1 and isinstance(data[0], dict) else {"data": data}
    return found


def _meta(task_id: str, context_id: str | None) -> dict[str, Any]:
    return {META_TASK: task_id} | ({META_CONTEXT: context_id} if context_id else {})


def tool_result(answer: Task | Message) -> dict[str, Any]:
    """The ``CallToolResult`` of a settled task (or of a handler's direct reply Message)."""
    if answer.get("kind") == "message":
        result = content(list(answer.get("parts") or ()))
        return result | {"isError": False, "_meta": _meta(str(answer.get("taskId") or ""), answer.get("contextId"))}
    state = task_state(answer)
    if state in ERROR_STATES:
        text = _text(_status_parts(answer)) or f"The task was {state}."
        result = {"content": [{"type": "text", "text": text}], "isError": True}
    elif state == "completed":
        result = content(_output_parts(answer)) | {"isError": False}
    else:  # auth-required, or a question the client cannot be asked
        text = _text(_status_parts(answer)) or f"The task is {state}."
        result = {"content": [{"type": "text", "text": f"The task is {state}: {text}"}], "isError": True}
    return result | {"_meta": _meta(answer["id"], answer.get("contextId"))}


# --- Questions ---------------------------------------------------------------------------------


def turn(task: Task) -> int:
    """The task's turn (how many messages it has taken): a question's key names it."""
    return int(task_call(task).get("turn") or 1)


def question_key(task: Task) -> str:
    """The key of the task's current question in ``inputRequests``: unique per turn."""
    return f"a2a-turn-{turn(task)}"


def is_approval(task: Task) -> bool:
    """Whether the task's question is a yes/no approval: a tool call waiting for one, or a
    graph's interrupt asking for one (LangGraph's ``ask_approval``)."""
    for part in _status_parts(task):
        awaiting = (part.get("data") or {}).get("a2a.awaiting") if part.get("kind") == "data" else None
        if not isinstance(awaiting, dict):
            continue
        interrupts = awaiting.get("interrupts") or []
        if awaiting.get("approvals") or any(isinstance(i, dict) and asks_approval(i.get("value")) for i in interrupts):
            return True
    return False


def elicitation(task: Task) -> dict[str, Any]:
    """The ``elicitation/create`` params asking the task's question (a form)."""
    message = _text(_status_parts(task)) or "The agent needs more input to go on."
    if is_approval(task):
        prop = {"type": "boolean", "title": "Approve", "description": "Approve (true) or deny (false)."}
        schema = {"type": "object", "properties": {"approved": prop}, "required": ["approved"]}
    else:
        prop = {"type": "string", "title": "Answer"}
        schema = {"type": "object", "properties": {"answer": prop}, "required": ["answer"]}
    return {"mode": "form", "message": message, "requestedSchema": schema}


def input_requests(task: Task) -> dict[str, Any]:
    return {question_key(task): {"method": "elicitation/create", "params": elicitation(task)}}


def answer_parts(task: Task, response: Any) -> list[Part] | None:
    """The follow-up message's parts of an ``ElicitResult`` answering the task's question;
    None when the person cancelled (or declined a question that is not an approval):
    the task is then canceled. ValueError for a response that is not one."""
    if not isinstance(response, dict) or response.get("action") not in ("accept", "decline", "cancel"):
        raise ValueError("an elicitation response has an action of accept, decline or cancel")
    action = response["action"]
    values: dict[str, Any] = response["content"] if isinstance(response.get("content"), dict) else {}
    if is_approval(task):
        if action == "cancel":
            return None
        approved = action == "accept" and values.get("approved") is True
        return [{"kind": "text", "text": "yes" if approved else "no"}, {"kind": "data", "data": {"approved": approved}}]
    if action != "accept":
        return None
    answer = values.get("answer")
    if not isinstance(answer, str):
        raise ValueError("the answer must be a string (content.answer)")
    return [{"kind": "text", "text": answer}]


# --- Tasks (the extension; 2025-11-25's tasks) -------------------------------------------------

_STATUS = {
    "submitted": "working",
    "working": "working",
    "input-required": "input_required",
    "auth-required": "input_required",
    "completed": "completed",
    "failed": "completed",  # a tool execution error: a completed task whose result has isError
    "rejected": "completed",
    "canceled": "cancelled",
}

POLL_INTERVAL_MS = 1000


def mcp_task(task: Task, *, legacy: bool) -> dict[str, Any]:
    """The MCP ``Task`` of an A2A task (2025-11-25: ``ttl`` and ``pollInterval``)."""
    state = task_state(task)
    status = "failed" if legacy and state in ("failed", "rejected") else _STATUS.get(state, "working")
    found: dict[str, Any] = {
        "taskId": task["id"],
        "status": status,
        "createdAt": task.get(CREATED) or (task.get("status") or {}).get("timestamp"),
        "lastUpdatedAt": (task.get("status") or {}).get("timestamp"),
    }
    if text := _text(_status_parts(task)):
        found["statusMessage"] = text
    if legacy:
        return found | {"ttl": None, "pollInterval": POLL_INTERVAL_MS}
    return found | {"ttlMs": None, "pollIntervalMs": POLL_INTERVAL_MS}


def detailed_task(task: Task) -> dict[str, Any]:
    """The extension's ``DetailedTask``: with the questions, or the result when done."""
    found = mcp_task(task, legacy=False)
    if found["status"] == "input_required":
        found["inputRequests"] = input_requests(task)
    elif found["status"] == "completed":
        found["result"] = {"resultType": "complete", **tool_result(task)}
    return found
