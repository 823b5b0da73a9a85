"""The agent's tools: one per skill of its card, or one for the whole agent.

Why one tool per skill: an MCP client's model picks a tool by its name and description,
and the card's skills are exactly the agent's own list of what it can do, each with an
id, a name and a description written for that choice. The A2A agent still decides for
itself what to do with a message (A2A has no skill selector): the tool's skill travels
as the message's ``metadata.skillId``, so a handler may use it. An agent whose card names
no skill is one tool, named after the agent. The list is in the card's order (the
settings', then the skills directory's), so ``tools/list`` is deterministic.

A tool's arguments: ``message`` (the text for the agent), and where the skill takes them
(its ``inputModes``, else the agent's ``INPUT_MODES``) ``data`` (a JSON object: a data
part) and ``files`` (file parts: a ``uri``, or ``bytes`` in Base64, each with an
optional ``name`` and ``mimeType``); ``contextId`` continues a conversation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from a2a.agents import Agent
from a2a.mcp.wire import invalid_params
from a2a.protocol.model import Message, Part, new_id
from a2a.service import card

#: The characters MCP's tool names are made of (SHOULD: A-Z a-z 0-9 _ - .), at most 128.
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_NAME = 128


@dataclass(frozen=True)
class Tool:
    """One tool: its MCP name, the skill it stands for (None: the whole agent), and what
    it takes."""

    name: str
    title: str
    description: str
    skill: str | None
    takes_data: bool
    takes_files: bool

    def definition(self, legacy: bool) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it (a 2025-11-25 client also reads that a call
        may be a task: ``execution.taskSupport``)."""
        properties: dict[str, Any] = {
            "message": {"type": "string", "description": "What to ask the agent, in plain words."},
            "contextId": {
                "type": "string",
                "description": "Continue this earlier conversation (a result's contextId).",
            },
        }
        if self.takes_data:
            properties["data"] = {"type": "object", "description": "Structured input for the agent (a JSON object)."}
        if self.takes_files:
            properties["files"] = {"type": "array", "description": "Files for the agent.", "items": _FILE_SCHEMA}
        schema = {"type": "object", "properties": properties, "required": ["message"], "additionalProperties": False}
        found: dict[str, Any] = {"name": self.name, "title": self.title, "description": self.description}
        found["inputSchema"] = schema
        if legacy:
            found["execution"] = {"taskSupport": "optional"}
        return found


_FILE_SCHEMA = {
    "type": "object",
    "properties": {
        "uri": {"type": "string"},
        "bytes": {"type": "string", "contentEncoding": "base64"},
        "name": {"type": "string"},
        "mimeType": {"type": "string"},
    },
    "additionalProperties": False,
}


def tool_name(raw: str) -> str:
    """``raw`` (a skill id, an agent name) as an MCP tool name: runs of other characters
    become ``_``, cut at 128 characters; ``agent`` for one that leaves nothing."""
    return _NOT_NAME.sub("_", raw).strip("_")[:MAX_NAME] or "agent"


def _takes(modes: list[str]) -> tuple[bool, bool]:
    """Whether input ``modes`` take a data part and file parts."""
    data = any(m in ("*/*", "application/*", "application/json") for m in modes)
    files = any(m not in ("text/plain", "application/json", "text/*") for m in modes)
    return data, files


def tools(agent: Agent) -> list[Tool]:
    """The agent's tools, in the card's order; a later skill whose name another already
    took gets ``_2``, ``_3``... (names are unique within a server)."""
    modes = list(agent.settings.INPUT_MODES)
    found: list[Tool] = []
    taken: set[str] = set()
    skills: list[dict[str, Any] | None] = list(card.skills(agent)) or [None]
    for skill in skills:
        raw = skill["id"] if skill else agent.settings.AGENT_NAME or agent.name
        name = base = tool_name(str(raw))
        n = 1
        while name in taken:
            n += 1
            name = f"{base[: MAX_NAME - 1 - len(str(n))]}_{n}"
        taken.add(name)
        data, files = _takes(list(skill.get("inputModes") or modes) if skill else modes)
        title = str(skill.get("name") or raw) if skill else str(raw)
        description = str(skill.get("description") or "") if skill else str(agent.settings.AGENT_DESCRIPTION)
        found.append(Tool(name, title, description, skill["id"] if skill else None, data, files))
    return found


def find(agent: Agent, name: Any) -> Tool:
    """The tool named ``name``; -32602 for an unknown one."""
    for tool in tools(agent):
        if tool.name == name:
            return tool
    raise invalid_params(f"Unknown tool: {str(name)[:128]}")


def message(tool: Tool, arguments: Any) -> Message:
    """The A2A message of a call's ``arguments``, checked against the tool's input schema
    (-32602 naming what is wrong)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise invalid_params("arguments must be an object")
    allowed = (
        {"message", "contextId"} | ({"data"} if tool.takes_data else set()) | ({"files"} if tool.takes_files else set())
    )
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise invalid_params(f"Invalid arguments for tool {tool.name}: unknown argument {unknown[0][:64]!r}")
    text = arguments.get("message")
    if not isinstance(text, str):
        raise invalid_params(f"Invalid arguments for tool {tool.name}: message must be a string")
    parts: list[Part] = [{"kind": "text", "text": text}]
    if "data" in arguments:
        if not isinstance(arguments["data"], dict):
            raise invalid_params(f"Invalid arguments for tool {tool.name}: data must be an object")
        parts.append({"kind": "data", "data": arguments["data"]})
    parts += [_file_part(tool, i, f) for i, f in enumerate(_files(tool, arguments.get("files", [])))]
    found: Message = {"kind": "message", "messageId": new_id(), "role": "user", "parts": parts}
    context = arguments.get("contextId")
    if context is not None:
        if not isinstance(context, str) or not context:
            raise invalid_params(f"Invalid arguments for tool {tool.name}: contextId must be a string")
        found["contextId"] = context
    if tool.skill is not None:
        found["metadata"] = {"skillId": tool.skill}
    return found


def _files(tool: Tool, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise invalid_params(f"Invalid arguments for tool {tool.name}: files must be an array")
    return value


def _file_part(tool: Tool, i: int, value: Any) -> Part:
    where = f"Invalid arguments for tool {tool.name}: files[{i}]"
    if not isinstance(value, dict) or set(value) - {"uri", "bytes", "name", "mimeType"}:
        raise invalid_params(f"{where} must be an object of uri or bytes, name, mimeType")
    if ("uri" in value) == ("bytes" in value):
        raise invalid_params(f"{where} must have exactly one of uri and bytes")
    if not all(isinstance(v, str) for v in value.values()):
        raise invalid_params(f"{where}: each field must be a string")
    return {"kind": "file", "file": dict(value)}
