"""The model's tools, and the loop that runs them: the project's own functions
(:mod:`a2a.handlers.functions`), and remote agents: the skills of the agents ``A2A_LLM_REMOTE_TOOLS``
names (entries of ``A2A_REMOTE_AGENTS``) offered to the model, each call run on the
remote agent, its answer fed back, for at most ``A2A_LLM_MAX_ROUNDS`` model requests.

Each remote skill is one tool: its name is ``<agent>__<skill id>`` with every character
the providers refuse (anything but ``A-Z a-z 0-9 _ -``) as ``_``, at most 64 characters
(a longer one is cut and ends with a hash of the whole) and unique (``_2``, ``_3`` after
a repeat); an agent whose card lists no skill is one tool named after the agent. The
description is the skill's (name, description, examples) and the agent's name; the one
parameter, ``request``, is the text sent to the agent (with ``"metadata": {"skill": id}``,
this project's way to target a skill).

The cards are fetched once per process, on the first task that needs them, and kept until
``A2A_REMOTE_AGENTS`` or ``A2A_LLM_REMOTE_TOOLS`` changes; an agent that cannot be reached
is left out (a warning is logged) and asked again after :data:`RETRY_UNREACHABLE` seconds.

The loop (:class:`ToolLoop`) speaks both styles: OpenAI-compatible function calling
(``tools``, the answer's ``tool_calls``, a ``role: tool`` message per result) and Anthropic
tool use (``tools``, ``tool_use`` blocks, a user turn of ``tool_result`` blocks, a failure
with ``is_error``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.core.signals import setting_changed

from a2a.client import ClientError, async_remote_client, user_message
from a2a.handlers.functions import FunctionTool, load_function_tool
from a2a.handlers.results import TaskFailed
from a2a.protocol.model import Message, Task

logger = logging.getLogger(__name__)

#: What OpenAI's function names and Anthropic's tool names may be.
NAME_LIMIT = 64
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")
#: Longer descriptions are cut: the model reads every tool's on every request.
DESCRIPTION_LIMIT = 1024
#: Seconds before an agent whose card could not be fetched is asked again.
RETRY_UNREACHABLE = 60.0
#: The one parameter of every tool.
PARAMETERS = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "What to ask the agent, in plain words."}},
    "required": ["request"],
}
#: The settings the tools are made from: a change of either forgets the cards.
SETTINGS = ("A2A_LLM_REMOTE_TOOLS", "A2A_REMOTE_AGENTS")


# --- From text to text ---------------------------------------------------------------------


def part_text(part: dict[str, Any]) -> str:
    """A part as the model reads it: text as it is, data as JSON, a file by its name and URI."""
    if isinstance(part.get("text"), str):
        return part["text"]
    if "data" in part:
        return "```json\n" + json.dumps(part["data"], indent=2, ensure_ascii=False, default=str) + "\n```"
    file = part.get("file")
    if isinstance(file, dict):
        bits = [file.get("name") or "unnamed", file.get("mimeType"), file.get("uri")]
        return "[file: " + ", ".join(str(b) for b in bits if b) + "]"
    return ""


def parts_text(parts: Any) -> str:
    """Parts as the model reads them, one after the other."""
    return "\n".join(t for t in (part_text(p) for p in parts or () if isinstance(p, dict)) if t)


def task_turns(task: dict[str, Any]) -> list[dict[str, str]]:
    """A task as chat turns: its messages (user -> user, agent -> assistant), then its
    artifacts as the assistant's answer."""
    turns = []
    for message in task.get("history") or ():
        text = parts_text(message.get("parts"))
        if text:
            turns.append({"role": "assistant" if message.get("role") == "agent" else "user", "content": text})
    answer = "\n\n".join(t for t in (parts_text(a.get("parts")) for a in task.get("artifacts") or ()) if t)
    if answer:
        turns.append({"role": "assistant", "content": answer})
    return turns


# --- The tools -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoteTool:
    """One remote skill as a tool: ``name`` is what the model calls, ``skill`` the skill's
    id on ``agent`` (None: the agent as a whole)."""

    name: str
    agent: str
    skill: str | None
    description: str

    def spec(self, style: str) -> dict[str, Any]:
        """The tool as the request's ``tools`` lists it, in ``style``."""
        if style == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": PARAMETERS}
        function = {"name": self.name, "description": self.description, "parameters": PARAMETERS}
        return {"type": "function", "function": function}

    def message(self, text: str) -> Message:
        """The message a call sends the agent (targeting the skill)."""
        return user_message(text, metadata={"skill": self.skill} if self.skill else None)


def tool_name(text: str, taken: Iterable[str] = ()) -> str:
    """``text`` as a tool name the providers take (see the module's docstring), not in ``taken``."""
    name = _NOT_IN_NAME.sub("_", text) or "tool"
    if len(name) > NAME_LIMIT:
        name = name[: NAME_LIMIT - 9] + "_" + hashlib.sha256(text.encode()).hexdigest()[:8]
    taken = set(taken)
    unique, n = name, 1
    while unique in taken:
        n += 1
        suffix = f"_{n}"
        unique = name[: NAME_LIMIT - len(suffix)] + suffix
    return unique


def _describe(agent: str, card: dict[str, Any], skill: dict[str, Any] | None) -> str:
    who = f"the remote agent {agent!r}" + (f" ({card['name']})" if isinstance(card.get("name"), str) else "")
    if skill is None:
        text = f"Ask {who}: {card.get('description') or 'another A2A agent'}"
    else:
        title = skill.get("name") or skill["id"]
        text = f"{title}: {skill.get('description') or title} (skill {skill['id']!r} of {who})"
        examples = [e for e in skill.get("examples") or () if isinstance(e, str)]
        if examples:
            text += " Examples: " + "; ".join(examples[:3])
    return text[:DESCRIPTION_LIMIT]


def tools_of(cards: Iterable[tuple[str, dict[str, Any]]]) -> list[RemoteTool]:
    """The tools of ``(agent name, card)`` pairs, named uniquely in order."""
    tools: list[RemoteTool] = []
    for agent, card in cards:
        skills: list[dict[str, Any] | None] = [
            s for s in card.get("skills") or () if isinstance(s, dict) and isinstance(s.get("id"), str)
        ]
        for skill in skills or [None]:
            wanted = f"{agent}__{skill['id']}" if skill else agent
            name = tool_name(wanted, (t.name for t in tools))
            tools.append(RemoteTool(name, agent, skill["id"] if skill else None, _describe(agent, card, skill)))
    return tools


_lock = threading.Lock()
#: Agent name -> (when it was fetched, its card or None when it could not be).
_cards: dict[str, tuple[float, dict[str, Any] | None]] = {}


async def _card(name: str) -> dict[str, Any] | None:
    with _lock:
        known = _cards.get(name)
    if known is not None and (known[1] is not None or time.monotonic() - known[0] < RETRY_UNREACHABLE):
        return known[1]
    card: dict[str, Any] | None = None
    try:
        card = await async_remote_client(name).fetch_card()
    except (ClientError, ValueError) as exc:
        logger.warning(
            "remote agent %r cannot be reached, so the model is not offered its tools (asked again in %gs): %s",
            name,
            RETRY_UNREACHABLE,
            exc,
        )
    with _lock:
        _cards[name] = (time.monotonic(), card)
    return card


def function_tools(paths: list[str], taken: Iterable[str] = ()) -> list[FunctionTool]:
    """The tools of the project's functions ``paths`` (an agent's ``LLM_TOOLS``), named as
    the providers allow and apart from ``taken`` (the remote tools' names)."""
    found: list[FunctionTool] = []
    names = set(taken)
    for path in paths:
        tool = load_function_tool(path)
        name = tool_name(tool.name, names)
        names.add(name)
        found.append(replace(tool, name=name))
    return found


async def remote_tools(names: list[str]) -> list[RemoteTool]:
    """The tools of the remote agents ``names`` (an agent's ``LLM_REMOTE_TOOLS``: those
    that can be reached)."""
    names = [str(name) for name in names]
    cards = await asyncio.gather(*(_card(name) for name in names))
    return tools_of((name, card) for name, card in zip(names, cards, strict=True) if card is not None)


def reset() -> None:
    """Forget the cards (the next task fetches them again)."""
    with _lock:
        _cards.clear()


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in SETTINGS:
        reset()


setting_changed.connect(_on_setting_changed)


# --- One call ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A tool the model asked for: the call's id, the tool's name, its arguments (JSON
    text or an object, as the model wrote them)."""

    id: str
    name: str
    arguments: Any = None


@dataclass(frozen=True)
class ToolAnswer:
    """What the model reads back: the remote answer, or the error (``is_error``)."""

    text: str
    is_error: bool = False


#: A tool the model may call: a remote agent's skill, or one of the project's functions.
Tool = RemoteTool | FunctionTool

#: Runs a remote task: (agent name, message) -> the remote task as it ended.
Delegate = Callable[[str, Message], Awaitable[Task | Message]]


def answer_of(outcome: Task | Message) -> ToolAnswer:
    """A remote task (or the agent's direct message) as the model reads it: the text of its
    artifacts (else of its status message) when it completed, an error naming its state else."""
    if outcome.get("kind") == "message" or "status" not in outcome:
        return ToolAnswer(parts_text(outcome.get("parts")) or "(the agent answered with no text)")
    status = outcome.get("status") or {}
    said = parts_text((status.get("message") or {}).get("parts"))
    if status.get("state") != "completed":
        return ToolAnswer(f"The remote task ended {status.get('state')}" + (f": {said}" if said else "."), True)
    answer = "\n\n".join(t for t in (parts_text(a.get("parts")) for a in outcome.get("artifacts") or ()) if t)
    return ToolAnswer(answer or said or "(the agent answered with no text)")


async def run_call(call: ToolCall, tools: dict[str, Tool], delegate: Delegate) -> ToolAnswer:
    """Run one call: the project's function, or a task on its agent; or an error the
    model reads (an unknown tool, bad arguments, a function that raised, a remote agent
    that failed or could not be reached)."""
    tool = tools.get(call.name)
    if tool is None:
        return ToolAnswer(f"There is no tool {call.name!r}; the tools are: {', '.join(tools) or 'none'}.", True)
    if isinstance(tool, FunctionTool):
        return ToolAnswer(*await tool.call(call.arguments))
    text, problem = _request_text(call.name, call.arguments)
    if problem:
        return ToolAnswer(problem, True)
    try:
        return answer_of(await delegate(tool.agent, tool.message(text)))
    except (TaskFailed, ClientError) as exc:
        logger.info("tool %s (remote agent %r) failed: %s", call.name, tool.agent, exc)
        return ToolAnswer(str(exc) or type(exc).__name__, True)


def _request_text(name: str, arguments: Any) -> tuple[str, str]:
    """The text of a remote tool's call, whose arguments are ``{"request": text}`` (JSON
    text or an object); or what is wrong with them."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = None
    text = arguments.get("request") if isinstance(arguments, dict) else None
    if not isinstance(text, str):
        return "", f'The arguments of {name!r} must be {{"request": "<text>"}}, not {str(arguments)[:200]}.'
    return text, ""


# --- The two wire styles ---------------------------------------------------------------------


def calls_in(style: str, raw: dict[str, Any]) -> list[ToolCall]:
    """The tool calls of a model's answer (none: it answered)."""
    if style == "anthropic":
        blocks = [b for b in raw.get("content") or () if isinstance(b, dict) and b.get("type") == "tool_use"]
        return [ToolCall(str(b.get("id")), str(b.get("name")), b.get("input")) for b in blocks]
    try:
        calls = raw["choices"][0]["message"].get("tool_calls") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        return []
    found = []
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            found.append(ToolCall(str(call.get("id")), str(function.get("name")), function.get("arguments")))
    return found


def assistant_turn(style: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The model's answer (its tool calls) as the conversation's next turn."""
    if style == "anthropic":
        return {"role": "assistant", "content": raw.get("content")}
    message = raw["choices"][0]["message"]
    return {"role": "assistant", "content": message.get("content"), "tool_calls": message.get("tool_calls")}


def result_turns(style: str, calls: list[ToolCall], answers: list[ToolAnswer]) -> list[dict[str, Any]]:
    """The answers as the turns after the model's: one ``tool`` message each (OpenAI), one
    user turn of ``tool_result`` blocks (Anthropic)."""
    if style == "anthropic":
        blocks = []
        for call, answer in zip(calls, answers, strict=True):
            block = {"type": "tool_result", "tool_use_id": call.id, "content": answer.text}
            blocks.append({**block, "is_error": True} if answer.is_error else block)
        return [{"role": "user", "content": blocks}]
    return [
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": f"Error: {answer.text}" if answer.is_error else answer.text,
        }
        for call, answer in zip(calls, answers, strict=True)
    ]


# --- The loop ----------------------------------------------------------------------------------


class Answer(Protocol):
    """What one model request gives (:class:`a2a.handlers.llm.ChatResult`)."""

    text: str
    input_tokens: int
    output_tokens: int
    model: str
    raw: dict[str, Any]


#: One model request: (system prompt, messages, tool specs) -> its answer.
Chat = Callable[[str, list[dict[str, Any]], list[dict[str, Any]]], Awaitable[Answer]]


class RoundLimit(TaskFailed):
    """The model still called tools in the last round ``A2A_LLM_MAX_ROUNDS`` allows."""


class ApprovalNeeded(Exception):
    """The model called a function that needs a person's approval: the loop stops with the
    conversation so far (``messages``, the model's turn last), its ``calls``, and those
    that wait for the approval (``asking``)."""

    def __init__(self, messages: list[dict[str, Any]], calls: list[ToolCall], asking: list[ToolCall]) -> None:
        super().__init__(", ".join(call.name for call in asking))
        self.messages, self.calls, self.asking = messages, calls, asking


@dataclass(frozen=True)
class Pending:
    """The calls a paused loop goes on with, and whether the person approved them."""

    calls: list[ToolCall]
    approved: bool


#: What the model reads for a call the person denied.
DENIED = "The user denied this tool call."


@dataclass
class ToolLoop:
    """Ask the model, run the tools it calls, feed it their answers, ask again: at most
    ``max_rounds`` requests. ``rounds`` records each request's usage and tools."""

    style: str
    tools: list[Tool]
    delegate: Delegate
    max_rounds: int = 5
    rounds: list[dict[str, Any]] = field(default_factory=list)

    async def run(
        self, chat: Chat, system: str, messages: list[dict[str, Any]], pending: Pending | None = None
    ) -> Answer:
        """The model's final answer; :class:`RoundLimit` when it still calls tools at the
        limit; :class:`ApprovalNeeded` when it calls a function that needs a person's
        approval (``pending``: the calls it waited on, and the answer, to go on with)."""
        specs = [tool.spec(self.style) for tool in self.tools]
        by_name = {tool.name: tool for tool in self.tools}
        messages = list(messages)
        if pending is not None:
            messages += result_turns(self.style, pending.calls, await self.answers(pending.calls, pending.approved))
        for number in range(1, self.max_rounds + 1):
            answer = await chat(system, messages, specs)
            calls = calls_in(self.style, answer.raw) if specs else []
            self.rounds.append(
                {"inputTokens": answer.input_tokens, "outputTokens": answer.output_tokens}
                | ({"tools": [call.name for call in calls]} if calls else {})
            )
            if not calls:
                return answer
            if number == self.max_rounds:
                break
            messages.append(assistant_turn(self.style, answer.raw))
            asking = [call for call in calls if getattr(by_name.get(call.name), "approval", False)]
            if asking:
                raise ApprovalNeeded(messages, calls, asking)
            messages += result_turns(self.style, calls, await self.answers(calls, True))
        asked = ", ".join(self.rounds[-1]["tools"])  # (the limit)
        raise RoundLimit(
            f"The model was still calling tools after {self.max_rounds} rounds (A2A_LLM_MAX_ROUNDS); "
            f"the last ones it asked for ({asked}) were not run."
        )

    async def answers(self, calls: list[ToolCall], approved: bool) -> list[ToolAnswer]:
        """The answers of ``calls``, run at once; a call needing approval is denied unless ``approved``."""
        by_name: dict[str, Tool] = {tool.name: tool for tool in self.tools}

        async def answer(call: ToolCall) -> ToolAnswer:
            if not approved and getattr(by_name.get(call.name), "approval", False):
                return ToolAnswer(DENIED, True)
            return await run_call(call, by_name, self.delegate)

        return list(await asyncio.gather(*(answer(call) for call in calls)))
