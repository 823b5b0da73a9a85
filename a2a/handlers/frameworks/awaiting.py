"""A run that waits for its client: a person's approval of a tool call, a tool's result
from outside, a graph's interrupt. :func:`pause` keeps the run's state with the task and
asks (``input-required``, the question's ``a2a.awaiting`` data); the client's next
message finds it (:func:`paused_state`) and answers it (:func:`answered`,
:func:`reply_value`), in this process or another, after a restart too on a durable store."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

import orjson

from a2a.core import lifecycle
from a2a.handlers.frameworks.answer import jsonable
from a2a.handlers.request import HandlerRequest
from a2a.handlers.results import InputRequired
from a2a.protocol.model import Part, Task, data_part, text_part
from stores.base import TaskStore
from stores.fields import PAUSED

#: Questions quote a tool's arguments up to this many characters.
MAX_QUOTE = 200
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
        return [text_part("\n".join(lines)), data_part({"a2a.awaiting": data})]


def quoted(args: Any) -> str:
    """A tool call's arguments, short, for a person to read."""
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 1] + "…"


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
    the question: the client's next message resumes the run (:func:`paused_state`)."""
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
    """The paused run this message answers (``state``, ``approvals``, ``calls``,
    ``interrupts``), or None."""
    if not request.is_continuation:
        return None
    task = await _store(request).aget(request.task_id)
    record = (task or {}).get(PAUSED)
    if isinstance(record, dict) and record.get("turn") == request.turn - 1:
        return record
    return None


async def answered(request: HandlerRequest, paused: dict[str, Any], metadata: dict[str, Any]) -> bool | None:
    """The reply as an approval (:func:`approval`). When the paused run waits on one and
    the reply is neither yes nor no, it asks again (the run still paused, ``metadata``
    on the task) rather than reading it as a no."""
    approved = approval(request)
    interrupts = paused.get("interrupts") or []
    if approved is None and (paused.get("approvals") or any(is_approval(i["value"]) for i in interrupts)):
        question = Question(paused.get("approvals") or [], paused.get("calls") or [], interrupts)
        await pause(request, question, paused.get("state"), metadata)
    return approved


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


def _store(request: HandlerRequest) -> TaskStore:
    return request.store if request.store is not None else request.agent.store
