"""An agent under test, through the real A2A path: a PydanticAI agent, a LangGraph graph,
an OpenAI Agents SDK agent (each on its framework's own test model) or any handler,
served as the project's agent, asked as a client asks it (``SendStreamingMessage`` over
the wire client), each turn read the way a client reads it: the answer as it streamed
and as a poll reads it, the tools' progress, the question of ``input-required``, the
token usage. The ``a2a_agent`` fixture (:mod:`a2a.testing.plugin`) makes one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from a2a.testing.assertions import short_state
from a2a.testing.client import WireClient


def _texts(parts: Sequence[Mapping[str, Any]]) -> str:
    return "".join(str(part["text"]) for part in parts if "text" in part)


@dataclass
class Turn:
    """One message and what came of it: ``events`` (every streamed event's result) and
    ``task`` (the task as ``GetTask`` reads it afterwards)."""

    events: list[dict[str, Any]]
    task: dict[str, Any]

    @property
    def state(self) -> str:
        """The task's state, short (``completed``, ``input-required``)."""
        return short_state(self.task["status"]["state"])

    @property
    def answer(self) -> str:
        """The text of the task's artifacts, as a polling client reads them."""
        return "\n".join(_texts(artifact.get("parts", ())) for artifact in self.task.get("artifacts", ()))

    @property
    def streamed(self) -> list[str]:
        """The answer as a streaming client rebuilt it, after each chunk (``append`` adds
        to it, any other chunk replaces it): its growth, the whole answer last."""
        growth, text = [], ""
        for event in self.events:
            update = event.get("artifactUpdate")
            if update is not None:
                piece = _texts(update["artifact"].get("parts", ()))
                text = text + piece if update.get("append") else piece
                growth.append(text)
        return growth

    @property
    def progress(self) -> list[str]:
        """The texts of the ``working`` status updates with a message (the tools' calls)."""
        found = []
        for event in self.events:
            status = event.get("statusUpdate", {}).get("status", {})
            if short_state(status.get("state", "")) == "working" and status.get("message"):
                found.append(_texts(status["message"].get("parts", ())))
        return found

    @property
    def question(self) -> str:
        """What the task asks when it waits for the client (its status message's text)."""
        return _texts((self.task["status"].get("message") or {}).get("parts", ()))

    @property
    def usage(self) -> dict[str, Any]:
        """The token usage in the task's ``llm`` metadata (empty when none is recorded)."""
        return dict(((self.task.get("metadata") or {}).get("llm") or {}).get("usage") or {})


@dataclass
class AgentUnderTest:
    """The project's agent (its handler set by the fixture), asked through ``client``."""

    client: WireClient
    turns: list[Turn] = field(default_factory=list)

    def ask(self, text: str, *, context_id: str | None = None, **params: Any) -> Turn:
        """Send ``text`` as a new task (in ``context_id``'s conversation when given)."""
        if context_id is not None:
            params["context_id"] = context_id
        events = self.client.send_stream(text, **params)
        task_id = next(event["task"]["id"] for event in events if "task" in event)
        turn = Turn(events, self.client.result("GetTask", {"id": task_id}))
        self.turns.append(turn)
        return turn

    def reply(self, turn: Turn, text: str, **params: Any) -> Turn:
        """Answer ``turn``'s question (``yes``, ``no``, a value): the same task goes on."""
        return self.ask(text, task_id=turn.task["id"], context_id=turn.task["contextId"], **params)
