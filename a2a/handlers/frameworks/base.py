"""The mapping every framework's adapter shares, written once: the message's parts in,
the model's tokens out as artifact chunks, tool calls as progress, the conversation of
the context, a paused run (a person's approval, a tool's result from outside) kept with
the task and resumed by the client's reply, token usage in the task's ``llm`` metadata,
and the framework's own errors as the failed task's message.

An adapter (:class:`FrameworkHandler`) is an :class:`~a2a.handlers.AgentHandler` whose
``async handle`` runs the framework's agent and calls these helpers; the runner cancels
it where it stands (``CancelledError``) when the client cancels the task."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn

import orjson

from a2a.core import lifecycle
from a2a.handlers.loading import AgentHandler
from a2a.handlers.request import HandlerRequest
from a2a.handlers.results import InputRequired, Result, TaskFailed, as_parts
from a2a.handlers.tools import RemoteTool, ToolCall, part_text, run_call, task_turns, tool_name
from a2a.protocol.model import Artifact, Message, Part, Task, new_id
from stores.base import TaskStore
from stores.fields import PAUSED

#: Progress notes and questions quote a tool's arguments up to this many characters.
MAX_QUOTE = 200


class FrameworkHandler(AgentHandler):
    """The adapter of one framework's agent: ``async handle(request)`` runs it, mapped
    as this module says. ``framework`` names it in the task's ``llm`` metadata."""

    framework: ClassVar[str] = ""

    async def handle(self, request: HandlerRequest) -> Any:  # pragma: no cover - every adapter overrides it
        raise NotImplementedError(f"{type(self).__name__}.handle")

    def describe(self) -> tuple[str, str, list[str]]:
        """The agent's name, description and tools' names, as the framework knows them."""
        return "agent", "", []

    def card_skills(self) -> list[dict[str, Any]]:
        """The card's skill for the agent (when the settings list none): its name, its
        description, its tools as the tags."""
        name, description, tools = self.describe()
        skill_id = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "agent"
        description = description or f"An agent built with {self.framework}."
        return [{"id": skill_id, "name": name, "description": description, "tags": tools or [self.framework]}]


def option(value: Any, request: HandlerRequest) -> Any:
    """An adapter's option: a value as it is, or a callable of the request (per task)."""
    return value(request) if callable(value) else value


# --- In: the message's parts -----------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """One part of the client's message, as a framework takes it: ``text`` (text, or a
    data part as JSON), or a file's ``content`` (bytes) or ``uri``, with its media type."""

    text: str | None = None
    content: bytes | None = None
    uri: str | None = None
    media_type: str = "application/octet-stream"
    name: str = ""


def pieces(parts: list[Part]) -> list[Piece]:
    """The parts of a message as :class:`Piece` s (a file part whose bytes are not base64
    becomes its description as text)."""
    found = []
    for part in parts:
        file = part.get("file")
        if not isinstance(file, dict):
            text = part_text(part)
            if text:
                found.append(Piece(text=text))
            continue
        media_type, name = str(file.get("mimeType") or "application/octet-stream"), str(file.get("name") or "")
        if isinstance(file.get("bytes"), str):
            try:
                content = base64.b64decode(file["bytes"], validate=True)
            except (binascii.Error, ValueError):
                found.append(Piece(text=part_text(part)))
                continue
            found.append(Piece(content=content, media_type=media_type, name=name))
        elif isinstance(file.get("uri"), str):
            found.append(Piece(uri=file["uri"], media_type=media_type, name=name))
    return found


async def earlier_turns(request: HandlerRequest) -> list[dict[str, str]]:
    """The conversation before this message, as ``{"role": "user" | "assistant",
    "content": ...}`` turns: the caller's own earlier tasks of the context
    (``A2A_LLM_CONTEXT_TASKS`` of them; another caller's never), then this task's
    messages before the current one."""
    turns: list[dict[str, str]] = []
    for task in await request.acontext_tasks(request.agent.settings.LLM_CONTEXT_TASKS):
        turns += task_turns(task)
    history = request.history
    before = history[:-1] if history and history[-1] is request.message else history
    return turns + task_turns({"history": before})


# --- Out: the answer as it grows, tools as progress ------------------------------------------


class AnswerStream:
    """The model's text as one artifact that grows: the tokens of each ``interval`` saved
    together as a chunk (``append``), the tokens that came during a save in the next one;
    :meth:`finish` replaces it with the whole text (``lastChunk``), so a streaming client
    and a polling one end with the same single-part artifact. An answer whole within the
    first interval is one save (the last chunk), not a chunk per token."""

    #: Seconds the tokens gather before a chunk is saved (each save is a store write and an event).
    interval: ClassVar[float] = 0.01

    def __init__(self, request: HandlerRequest, name: str = "answer") -> None:
        self.request = request
        self.name = name
        self.artifact_id = new_id()
        self.text = ""
        self._unsent: list[str] = []
        self._started = False
        self._replace = False  # the next chunk replaces what streamed (restart)
        self._flusher: asyncio.Future[None] | None = None
        self._saving = False  # the flusher is saving a chunk (not gathering tokens)

    def add(self, delta: str) -> None:
        """A piece of the answer, as the model produced it."""
        if not delta:
            return
        self.text += delta
        self._unsent.append(delta)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())

    def restart(self) -> None:
        """What was streamed was not the answer (the model went on to call a tool): the
        next token starts the answer again, replacing it."""
        self.text = ""
        self._unsent.clear()
        self._replace = True

    async def _flush(self) -> None:
        while self._unsent:
            await asyncio.sleep(self.interval)  # gather what comes meanwhile
            if not self._unsent:
                return  # a restart took them back
            chunk, append = "".join(self._unsent), self._started and not self._replace
            self._unsent.clear()
            self._replace = False
            self._saving = True
            try:
                await self.request.aartifact(chunk, artifact_id=self.artifact_id, name=self.name, append=append)
            finally:
                self._saving = False
            self._started = True

    async def finish(self, content: str | list[Part] | None = None) -> list[Artifact]:
        """The answer is complete: the artifact becomes ``content`` (text, or the parts of
        a structured output; default: the text streamed), as its last chunk; nothing when
        the answer is empty and nothing was streamed. When no chunk was saved yet, the
        artifact is returned for the task's completion to carry rather than saved here:
        one save fewer, and a streaming client reads the same last chunk (the completion's
        new artifact comes whole, with ``lastChunk``, before the final status)."""
        if self._flusher is not None and not self._saving:
            self._flusher.cancel()  # only gathering: the last chunk carries those tokens too
            self._flusher = None
        await self.settle()
        content = self.text if content is None else content
        if not self._started:
            return [{"artifactId": self.artifact_id, "name": self.name, "parts": as_parts(content)}] if content else []
        await self.request.aartifact(content or "", artifact_id=self.artifact_id, name=self.name, last_chunk=True)
        return []

    async def settle(self) -> None:
        """Wait for the chunk being saved (the stream pauses, or ends)."""
        if self._flusher is not None:
            await self._flusher

    def close(self) -> None:
        """Stop saving chunks (the run was canceled or failed)."""
        if self._flusher is not None:
            self._flusher.cancel()


def quoted(args: Any) -> str:
    """A tool call's arguments, short, for a person to read."""
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 1] + "…"


async def tool_called(request: HandlerRequest, tool: str) -> None:
    """A ``working`` status: the agent calls ``tool`` (its name only: arguments may hold secrets)."""
    await request.aprogress([_text(f"Calling {tool}"), _data({"tool": tool, "phase": "call"})])


async def tool_returned(request: HandlerRequest, tool: str, *, failed: bool = False) -> None:
    """A ``working`` status: ``tool`` answered (or failed, and the model is told)."""
    phase = "failed" if failed else "result"
    await request.aprogress([_text(f"{tool} {phase if failed else 'answered'}"), _data({"tool": tool, "phase": phase})])


def output_parts(output: Any) -> list[Part]:
    """A structured output as a data part (an object; anything else under ``"result"``)."""
    return [_data(output if isinstance(output, dict) else {"result": output})]


def jsonable(value: Any) -> Any:
    """A framework's value as plain JSON: a pydantic model dumped, a dataclass, a date
    or a UUID as orjson writes them, anything else JSON cannot hold as its text."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return orjson.loads(orjson.dumps(value, default=str))


def arguments(args: Any) -> dict[str, Any]:
    """A tool call's arguments as an object, whatever the framework gives: an object as
    it is, a JSON string of one parsed; anything else (no arguments, a string that is
    not an object's JSON) under ``"input"``, or none."""
    if isinstance(args, str):
        try:
            args = orjson.loads(args) if args.strip() else {}
        except orjson.JSONDecodeError:
            return {"input": args}
    if args is None or isinstance(args, dict):
        return jsonable(args or {})
    return {"input": jsonable(args)}


def _text(text: str) -> Part:
    return {"kind": "text", "text": text}


def _data(data: Any) -> Part:
    return {"kind": "data", "data": data}


# --- A run that waits for a person -------------------------------------------------------------

#: The key of a graph's interrupt value that asks for a person's approval: the reply
#: resumes it with True or False only, and anything else asks again.
APPROVAL = "a2a.approval"
_YES = frozenset({"yes", "y", "approve", "approved", "ok", "okay"})
_NO = frozenset({"no", "n", "deny", "denied", "reject"})


@dataclass(frozen=True)
class Question:
    """What a paused run asks: the tools waiting for approval (``approvals``) and those
    whose result comes from outside (``calls``), each ``{"id", "tool", "args"}``; or
    the values a graph interrupted with (``interrupts``, each ``{"id", "value"}``)."""

    approvals: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    interrupts: list[dict[str, Any]] = field(default_factory=list)

    def parts(self) -> list[Part]:
        lines = [f"{c['tool']}({quoted(c['args'])}) needs your approval: reply yes or no." for c in self.approvals]
        lines += [f"{c['tool']}({quoted(c['args'])}) waits for its result: reply with it." for c in self.calls]
        lines += [interrupt_question(i["value"]) for i in self.interrupts]
        data = {"approvals": self.approvals, "calls": self.calls, "interrupts": self.interrupts}
        return [_text("\n".join(lines)), _data({"a2a.awaiting": data})]


def interrupt_question(value: Any) -> str:
    """What a graph's interrupt asks a person: an approval's question, a string as it is,
    anything else quoted."""
    if is_approval(value):
        return f"{value[APPROVAL]} Reply yes or no."
    return value if isinstance(value, str) else quoted(value)


def is_approval(value: Any) -> bool:
    """Whether an interrupt's value asks for an approval (``{APPROVAL: question}``)."""
    return isinstance(value, dict) and isinstance(value.get(APPROVAL), str)


async def pause(request: HandlerRequest, question: Question, state: Any, metadata: dict[str, Any]) -> NoReturn:
    """Keep ``state`` (JSON) with the task, then put the task in ``input-required`` with
    the question: the client's next message resumes the run (:func:`paused_state`), in
    this process or another, after a restart too on a durable store."""
    record = {
        "turn": request.turn,
        "state": state,
        "approvals": question.approvals,
        "calls": question.calls,
        "interrupts": question.interrupts,
    }

    def keep(task: Task) -> Task | None:
        if lifecycle.is_terminal(task):
            return None
        task[PAUSED] = record
        return task

    await lifecycle.transition(_store(request), request.task_id, keep, publish=False)
    raise InputRequired(question.parts(), metadata=metadata)


async def paused_state(request: HandlerRequest) -> dict[str, Any] | None:
    """The paused run this message answers (``state``, ``approvals``, ``calls``), or None."""
    if not request.is_continuation:
        return None
    task = await _store(request).aget(request.task_id)
    record = (task or {}).get(PAUSED)
    if isinstance(record, dict) and record.get("turn") == request.turn - 1:
        return record
    return None


def approval(request: HandlerRequest) -> bool | None:
    """The reply as an approval: a data part ``{"approved": true|false}``, or the text
    ``yes`` / ``approve`` (True), ``no`` / ``deny`` (False), in any case; else None."""
    for part in request.parts:
        data = part.get("data")
        if isinstance(data, dict) and isinstance(data.get("approved"), bool):
            return bool(data["approved"])
    word = re.sub(r"[^\w]+", " ", request.text).strip().lower()
    return True if word in _YES else False if word in _NO else None


def reply_value(request: HandlerRequest) -> Any:
    """The reply as a value for the run (a tool's result, a graph's resume value): the
    data of its data part, else its text."""
    for part in request.parts:
        if "data" in part:
            return part["data"]
    return request.text


async def unanswered(request: HandlerRequest, paused: dict[str, Any], metadata: dict[str, Any]) -> NoReturn:
    """The reply to an approval was neither yes nor no: ask again, the run still paused."""
    question = Question(paused.get("approvals") or [], paused.get("calls") or [], paused.get("interrupts") or [])
    await pause(request, question, paused.get("state"), metadata)


def _store(request: HandlerRequest) -> TaskStore:
    return request.store if request.store is not None else request.agent.store


# --- Remote A2A agents as the framework's tools ----------------------------------------------

_running: ContextVar[HandlerRequest | None] = ContextVar("a2a_framework_request", default=None)


@contextmanager
def running(request: HandlerRequest) -> Iterator[None]:
    """While the framework runs ``request``'s task: its remote agents' tools delegate from it."""
    token = _running.set(request)
    try:
        yield
    finally:
        _running.reset(token)


def remote_description(agent: str) -> str:
    return f"Ask the remote A2A agent {agent!r}; the argument is what to ask, in plain words."


def asker(agent: str) -> Callable[[str], Awaitable[str]]:
    """The function a framework calls as the tool of the remote agent ``agent`` (an entry
    of ``A2A_REMOTE_AGENTS``): a delegation from the running task, as the LLM handler's
    remote tools run (the remote task recorded on the local one, a cancel relayed); its
    answer, or the error the model reads."""

    async def ask(request: str) -> str:
        """What to ask the agent, in plain words."""
        running_request = _running.get()
        if running_request is None:
            return "Error: a remote agent's tool runs only in a task this project serves."

        async def delegate(name: str, message: Message) -> Task:
            return await running_request.adelegate(name, message, surface=False, artifacts=False)

        remote = RemoteTool(agent, agent, None, remote_description(agent))
        answer = await run_call(ToolCall("", agent, {"request": request}), {agent: remote}, delegate)
        return f"Error: {answer.text}" if answer.is_error else answer.text

    ask.__name__ = tool_name(agent)
    return ask


# --- Usage and errors --------------------------------------------------------------------------


def usage_metadata(
    request: HandlerRequest, framework: str, model: str, input_tokens: int, output_tokens: int
) -> dict[str, Any]:
    """The task's ``llm`` metadata, as the built-in handler keeps it: the tokens summed
    over the task's turns, the model (an earlier turn's when this one names none: an
    approval asked again) and the framework."""
    earlier = request.metadata.get("llm") or {}
    spent = earlier.get("usage") or {}
    model = model or str(earlier.get("model") or "")
    tokens_in = int(spent.get("inputTokens") or 0) + int(input_tokens or 0)
    tokens_out = int(spent.get("outputTokens") or 0) + int(output_tokens or 0)
    usage = {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out}
    return {"llm": {"model": model, "framework": framework, "usage": usage}}


def failed(framework: str, exc: BaseException, metadata: dict[str, Any] | None = None) -> TaskFailed:
    """The framework's own error as the failed task's message (the framework words it
    for the developer; a tool's own exception is not this, and stays hidden)."""
    return TaskFailed(f"{framework}: {exc}"[:500], metadata=metadata)


async def completed(stream: AnswerStream, output: Any, metadata: dict[str, Any]) -> Result:
    """The run's output as the task's answer: text (the whole text as the last chunk of
    what streamed), anything else as a data part, replacing what streamed (a structured
    output's JSON)."""
    answer = await stream.finish(output if output is None or isinstance(output, str) else output_parts(output))
    return Result(answer or None, metadata=metadata)
