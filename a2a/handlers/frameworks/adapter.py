"""The run every framework's adapter shares, written once: :class:`FrameworkHandler`
starts a run, or resumes the paused one the client's reply answers, and turns how it
ended into the task's outcome (completed, ``input-required``, failed), its usage in the
task's ``llm`` metadata. An adapter says only what is its framework's: how a run
starts and resumes (:meth:`FrameworkHandler.start`, :meth:`FrameworkHandler.resume`)
and, in its :class:`Run`, how the framework's events, usage and end state map.

The runner cancels a run where it stands (``CancelledError``) when the client cancels
the task."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from a2a.handlers.frameworks.answer import AnswerStream, completed, jsonable
from a2a.handlers.frameworks.awaiting import Question, answered, pause, paused_state
from a2a.handlers.frameworks.remote import running
from a2a.handlers.frameworks.usage import Usage, usage_metadata
from a2a.handlers.loading import AgentHandler
from a2a.handlers.request import HandlerRequest
from a2a.handlers.results import Result, TaskFailed


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its ``output`` (the answer: text, or a structured output), or
    the ``question`` it asks the client, with the ``state`` (JSON) that resumes it."""

    output: Any = None
    question: Question | None = None
    state: Any = None


class Run(ABC):
    """One run of a framework's agent, as :meth:`FrameworkHandler.handle` drives it."""

    @abstractmethod
    async def execute(self, stream: AnswerStream) -> None:
        """Run the agent to its end or its pause: the model's text to ``stream``, tool
        calls as progress (:mod:`~a2a.handlers.frameworks.progress`)."""

    @abstractmethod
    def usage(self) -> Usage:
        """What the run's model calls spent so far (a failed run's too)."""

    @abstractmethod
    def outcome(self) -> Outcome:
        """How the run ended (once :meth:`execute` returned)."""


class FrameworkHandler(AgentHandler, ABC):
    """The adapter of one framework's agent. ``framework`` names it in the task's ``llm``
    metadata, ``label`` in a failed task's message; ``errors`` are the framework's own
    errors, which fail the task with their text (the framework words them for the
    developer; a tool's own exception is not one, and stays hidden)."""

    framework: ClassVar[str] = ""
    label: ClassVar[str] = ""
    errors: ClassVar[tuple[type[BaseException], ...]] = ()

    @abstractmethod
    async def start(self, request: HandlerRequest) -> Run:
        """A run of the client's message, after the earlier turns of the conversation."""

    @abstractmethod
    async def resume(self, request: HandlerRequest, paused: dict[str, Any], approved: bool | None) -> Run:
        """The paused run (:func:`~a2a.handlers.frameworks.awaiting.paused_state`) going
        on with the client's reply: ``approved`` when the run waits on an approval (a
        reply that is neither yes nor no asked again already), else None."""

    async def handle(self, request: HandlerRequest) -> Result:
        paused = await paused_state(request)
        if paused is None:
            return await self.drive(request, await self.start(request))
        approved = await answered(request, paused, usage_metadata(request, self.framework, Usage()))
        return await self.drive(request, await self.resume(request, paused, approved))

    async def drive(self, request: HandlerRequest, run: Run) -> Result:
        """Execute ``run``, streamed; the task completes, pauses or fails with it."""
        stream = AnswerStream(request)
        try:
            with running(request):
                await run.execute(stream)
        except self.errors as exc:
            stream.close()
            metadata = usage_metadata(request, self.framework, run.usage())
            raise TaskFailed(f"{self.label}: {exc}"[:500], metadata=metadata) from exc
        except BaseException:
            stream.close()
            raise
        metadata = usage_metadata(request, self.framework, run.usage())
        outcome = run.outcome()
        if outcome.question is not None:
            await stream.settle()
            await pause(request, outcome.question, outcome.state, metadata)
        return await completed(stream, jsonable(outcome.output), metadata)

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


def options(values: dict[str, Any], request: HandlerRequest) -> dict[str, Any]:
    """An adapter's options for one task: those set, each :func:`option` 's value."""
    return {key: option(value, request) for key, value in values.items() if value is not None}
