"""The answer every adapter gives: the model's tokens as one artifact that grows
(:class:`AnswerStream`), and the run's output as the task's answer (:func:`completed`)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import orjson

from a2a.handlers.request import HandlerRequest
from a2a.handlers.results import Result, as_parts
from a2a.protocol.model import Artifact, Part, data_part, new_id


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


async def completed(stream: AnswerStream, output: Any, metadata: dict[str, Any]) -> Result:
    """The run's output as the task's answer: text (the whole text as the last chunk of
    what streamed), anything else as a data part, replacing what streamed (a structured
    output's JSON)."""
    answer = await stream.finish(output if output is None or isinstance(output, str) else output_parts(output))
    return Result(answer or None, metadata=metadata)


def output_parts(output: Any) -> list[Part]:
    """A structured output as a data part (an object; anything else under ``"result"``)."""
    return [data_part(output if isinstance(output, dict) else {"result": output})]


def jsonable(value: Any) -> Any:
    """A framework's value as plain JSON: a pydantic model dumped, a dataclass, a date
    or a UUID as orjson writes them, anything else JSON cannot hold as its text."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return orjson.loads(orjson.dumps(value, default=str))
