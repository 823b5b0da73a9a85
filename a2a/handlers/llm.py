"""A handler that answers with a language model, shaped by skills.

Set ``A2A_HANDLER = "a2a.handlers.llm.handle"`` and point it at a model::

    A2A_LLM_BASE_URL = "https://api.openai.com/v1"  # any OpenAI-compatible server
    A2A_LLM_MODEL = "gpt-4o-mini"
    A2A_LLM_API_KEY = env("A2A_LLM_API_KEY")          # or just the environment variable

``A2A_LLM_STYLE = "anthropic"`` speaks Anthropic's Messages API instead
(``https://api.anthropic.com/v1``). Local servers that speak the OpenAI format
(Ollama, vLLM, llama.cpp, LM Studio) work with ``"openai"`` and their ``/v1`` URL.

Each Task is one chat completion: a system prompt (``A2A_LLM_SYSTEM_PROMPT``, or one
made from the agent's name and description), the skill the message targets (its
``SKILL.md`` instructions, see :mod:`a2a.handlers.skills`), the earlier tasks of the same
context (``A2A_LLM_CONTEXT_TASKS`` of them, the caller's own only: another caller's
tasks in that ``contextId`` are never seen) and this task's messages. The answer is
the task's text artifact; token usage goes into the task's metadata under ``"llm"``
(summed over the task's turns). Requests time out after ``A2A_LLM_TIMEOUT`` seconds;
connection errors, 408, 429 and 5xx are retried ``A2A_LLM_MAX_RETRIES`` times with
exponential backoff (honouring ``Retry-After``); any other error fails the task with
the provider's own error text as the status message.

``A2A_LLM_TOOLS`` offers the project's own Python functions as tools the model calls
(:mod:`a2a.handlers.functions`), ``A2A_LLM_REMOTE_TOOLS`` the skills of other A2A agents
(:mod:`a2a.handlers.tools`): a task is then up to ``A2A_LLM_MAX_ROUNDS`` requests, and
the metadata lists each one's usage under ``"rounds"``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import httpx

from a2a.agents import DEFAULT_AGENT
from a2a.conf import SETTINGS, a2a_settings
from a2a.core import metrics, retry
from a2a.handlers import HandlerRequest, Result, TaskFailed, llm_stream
from a2a.handlers.frameworks.answer import AnswerStream, completed
from a2a.handlers.frameworks.awaiting import Question, answered, pause, paused_state
from a2a.handlers.skills import Skill, get_skill, get_skills, requested_skill
from a2a.handlers.tools import (
    ApprovalNeeded,
    Pending,
    RoundLimit,
    Tool,
    ToolCall,
    ToolLoop,
    function_tools,
    remote_tools,
    task_turns,
)
from a2a.protocol.model import Message, Task

logger = logging.getLogger(__name__)

STYLES = SETTINGS["A2A_LLM_STYLE"].choices
ANTHROPIC_VERSION = "2023-06-01"
#: Anthropic requires max_tokens; used when A2A_LLM_MAX_TOKENS is 0.
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
MAX_BACKOFF = 30.0
MAX_ERROR_TEXT = 500


class LLMError(TaskFailed):
    """The model endpoint could not answer; the text is the task's status message."""


@dataclass
class ChatResult:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class LLMClient:
    """One chat completion over HTTP, OpenAI- or Anthropic-style, with retries."""

    base_url: str
    model: str
    api_key: str = ""
    style: str = "openai"
    timeout: float = 60.0
    max_retries: int = 2
    backoff: float = 1.0
    max_tokens: int = 0
    transport: httpx.AsyncBaseTransport | None = None
    #: The agent asking (its name labels the model metrics).
    agent: str = DEFAULT_AGENT

    @classmethod
    def from_settings(cls, conf: Any = a2a_settings) -> LLMClient:
        """The client of the ``A2A_LLM_*`` settings of ``conf`` (an agent's, else the project's)."""
        if not conf.LLM_BASE_URL or not conf.LLM_MODEL:
            raise LLMError(
                "The model is not configured: set A2A_LLM_BASE_URL and A2A_LLM_MODEL "
                "(and A2A_LLM_API_KEY if the endpoint needs one)."
            )
        return cls(
            base_url=conf.LLM_BASE_URL,
            model=conf.LLM_MODEL,
            api_key=conf.LLM_API_KEY,
            style=conf.LLM_STYLE,
            timeout=conf.LLM_TIMEOUT,
            max_retries=conf.LLM_MAX_RETRIES,
            backoff=conf.LLM_RETRY_BACKOFF,
            max_tokens=conf.LLM_MAX_TOKENS,
        )

    # --- The two wire styles --------------------------------------------------------

    def endpoint(self) -> str:
        base = self.base_url.rstrip("/")
        suffix = "/messages" if self.style == "anthropic" else "/chat/completions"
        return base if base.endswith(suffix) else base + suffix

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.style == "anthropic":
            headers["anthropic-version"] = ANTHROPIC_VERSION
            if self.api_key:
                headers["x-api-key"] = self.api_key
        elif self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def body(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The request's JSON body; ``tools`` (their specs, in this style) when offered."""
        body = self._body(system, messages)
        if tools:
            body["tools"] = tools
        return body

    def _body(self, system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if self.style == "anthropic":
            body: dict[str, Any] = {
                "model": self.model,
                "max_tokens": self.max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
                "messages": _alternating(messages),
            }
            if system:
                body["system"] = system
            return body
        body = {"model": self.model, "messages": ([{"role": "system", "content": system}] if system else []) + messages}
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        return body

    def parse(self, data: Any) -> ChatResult:
        if not isinstance(data, dict):
            raise LLMError(f"The model endpoint answered with something that is not a JSON object: {str(data)[:200]}")
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        if self.style == "anthropic":
            blocks = data.get("content")
            if not isinstance(blocks, list):
                raise LLMError(f"The model endpoint's answer has no 'content': {_short(data)}")
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        else:
            try:
                content = data["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                raise LLMError(f"The model endpoint's answer has no choices[0].message: {_short(data)}") from None
            if isinstance(content, list):  # content parts
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            text = content if isinstance(content, str) else ""
            tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return ChatResult(
            text=text,
            input_tokens=tokens_in if isinstance(tokens_in, int) else 0,
            output_tokens=tokens_out if isinstance(tokens_out, int) else 0,
            model=str(data.get("model") or self.model),
            raw=data,
        )

    # --- The call ---------------------------------------------------------------------

    async def chat(
        self,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        stream: Streamed | None = None,
    ) -> ChatResult:
        """One completion (offering ``tools``); retried on connection errors, 408, 429 and 5xx.
        With ``stream``, the answer is asked for streamed and each piece of its text told
        to ``stream.add`` as it arrives (``stream.restart`` before each attempt)."""
        url, body = self.endpoint(), self.body(system, messages, tools)
        if stream is not None:
            body |= {"stream": True} | (
                {} if self.style == "anthropic" else {"stream_options": {"include_usage": True}}
            )
        policy = self.retry_policy()

        async def attempt() -> httpx.Response:
            started = time.perf_counter()
            response = await self._post(client, url, body, stream)
            metrics.LLM_SECONDS.labels(self.agent).observe(time.perf_counter() - started)
            return response

        def retrying(wait: retry.Sleep) -> None:
            metrics.LLM_REQUESTS.labels("retry", self.agent).inc()
            cause = wait.cause
            error = self._error(cause) if isinstance(cause, httpx.Response) else self._failure(cause, url, wait.attempt)
            logger.info(
                "model request failed (%s); retry %d/%d in %.2fs",
                error,
                wait.attempt,
                policy.attempts - 1,
                wait.seconds,
            )

        async with httpx.AsyncClient(timeout=self.timeout, transport=self.transport) as client:
            try:
                response = await retry.arun(attempt, policy, on_retry=retrying)
            except httpx.TransportError as exc:
                metrics.LLM_REQUESTS.labels("error", self.agent).inc()
                raise self._failure(exc, url, policy.attempts) from None
        if not response.is_success:
            metrics.LLM_REQUESTS.labels("error", self.agent).inc()
            raise self._error(response)
        try:
            result = self.parse(response.json())
        except ValueError:
            metrics.LLM_REQUESTS.labels("error", self.agent).inc()
            raise LLMError(
                f"The model endpoint answered HTTP {response.status_code} with something that is "
                f"not JSON: {response.text[:200]}"
            ) from None
        metrics.LLM_REQUESTS.labels("ok", self.agent).inc()
        metrics.LLM_TOKENS.labels("input", self.agent).inc(result.input_tokens)
        metrics.LLM_TOKENS.labels("output", self.agent).inc(result.output_tokens)
        return result

    def retry_policy(self) -> retry.RetryPolicy:
        """The model requests' retries: connection errors, timeouts and
        :data:`RETRY_STATUSES`, ``max_retries`` more times, a ``Retry-After`` honoured up
        to :data:`MAX_BACKOFF`."""
        return retry.RetryPolicy.repeatable(
            attempts=self.max_retries + 1, backoff=self.backoff, cap=MAX_BACKOFF, statuses=RETRY_STATUSES
        )

    def _failure(self, exc: BaseException | None, url: str, attempts: int) -> LLMError:
        """The error of a request that got no answer."""
        if isinstance(exc, httpx.TimeoutException):
            return LLMError(f"The model endpoint did not answer within {self.timeout:g}s ({attempts} attempt(s)).")
        return LLMError(f"Cannot reach the model endpoint {url}: {exc or type(exc).__name__}")

    @staticmethod
    def _error(response: httpx.Response) -> LLMError:
        """The error of an answer that is not a completion."""
        return LLMError(f"The model endpoint answered HTTP {response.status_code}: {provider_error(response)}")

    async def _post(
        self, client: httpx.AsyncClient, url: str, body: dict[str, Any], stream: Streamed | None
    ) -> httpx.Response:
        """The answer to ``body``: a streamed one (server-sent events) read as it comes,
        each piece told to ``stream``, and returned as the whole answer's JSON (as an
        unstreamed answer reads); any other answer as it is."""
        request = client.build_request("POST", url, json=body, headers=self.headers())
        response = await client.send(request, stream=True)
        try:
            if stream is None or not response.is_success or not _is_event_stream(response):
                await response.aread()
                return response
            stream.restart()  # a retried attempt starts the answer again
            assemble = llm_stream.anthropic_answer if self.style == "anthropic" else llm_stream.openai_answer
            try:
                whole = await assemble(response.aiter_lines(), stream.add, self.model)
            except llm_stream.StreamError as exc:
                metrics.LLM_REQUESTS.labels("error", self.agent).inc()
                raise LLMError(f"The model endpoint's streamed answer failed: {exc}") from None
            return httpx.Response(response.status_code, json=whole, request=request)
        finally:
            await response.aclose()


class Streamed(Protocol):
    """Where a streamed answer's text goes (:class:`a2a.handlers.frameworks.answer.AnswerStream`)."""

    def add(self, delta: str) -> None: ...

    def restart(self) -> None: ...


def _is_event_stream(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").split(";")[0].strip() == "text/event-stream"


def provider_error(response: httpx.Response) -> str:
    """The provider's own error text: ``error.message`` of an OpenAI or Anthropic error
    body, else the body itself (shortened)."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            kind = error.get("type") or error.get("code")
            return f"{error['message']} ({kind})" if isinstance(kind, str) and kind else error["message"]
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return data["message"]
    text = response.text.strip() or response.reason_phrase
    return text[:MAX_ERROR_TEXT] + ("…" if len(text) > MAX_ERROR_TEXT else "")


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` in seconds or an HTTP date), if any."""
    return retry.retry_after(response.headers.get("retry-after"))


def _short(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str)
    return text[:200] + ("…" if len(text) > 200 else "")


def _alternating(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic wants user/assistant turns alternating, starting with the user: merge
    neighbours of one role (text turns; a tool exchange alternates already) and open with
    a user turn."""
    out: list[dict[str, Any]] = []
    for message in messages:
        texts = out and isinstance(out[-1]["content"], str) and isinstance(message["content"], str)
        if texts and out[-1]["role"] == message["role"]:
            out[-1] = {"role": message["role"], "content": f"{out[-1]['content']}\n\n{message['content']}"}
        else:
            out.append(dict(message))
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": "(continuing our conversation)"})
    return out


class LLMHandler:
    """The handler (``a2a.handlers.llm.handle`` is an instance). Subclass it to change
    the prompt (:meth:`system_prompt`) or the conversation (:meth:`conversation`)."""

    def client(self, conf: Any = a2a_settings) -> LLMClient:
        """The model client of ``conf``: the agent's settings (the project's by default)."""
        return LLMClient.from_settings(conf)

    def skill_for(self, request: HandlerRequest) -> Skill | None:
        """The skill the message targets; LLMError naming the known ones if it is unknown."""
        skill_id = requested_skill(request.message, request.metadata)
        if skill_id is None:
            return None
        conf = request.agent.settings
        skill = get_skill(skill_id, conf)
        if skill is None:
            known = ", ".join(s.id for s in get_skills(conf)) or "none"
            raise LLMError(f"Unknown skill {skill_id!r}; this agent's skills: {known}.")
        return skill

    def system_prompt(self, skill: Skill | None, conf: Any = a2a_settings) -> str:
        """The system prompt of the agent whose settings are ``conf``, with ``skill``'s instructions."""
        base = conf.LLM_SYSTEM_PROMPT or (
            f"You are {conf.AGENT_NAME}, an agent that other agents and people reach over the A2A "
            f"protocol. {conf.AGENT_DESCRIPTION}"
        )
        if skill is not None:
            instructions = skill.instructions or skill.description
            return f"{base}\n\n# Skill: {skill.title or skill.id}\n{skill.description}\n\n{instructions}".rstrip()
        skills = get_skills(conf)
        if skills:
            listing = "\n".join(f"- {s.id}: {s.description}" for s in skills)
            return f"{base}\n\nYour skills:\n{listing}"
        return base

    async def conversation(self, request: HandlerRequest) -> list[dict[str, str]]:
        """The earlier tasks of this context (oldest first; the task owner's own: a context
        is per owner), then this task's messages."""
        turns: list[dict[str, str]] = []
        limit = request.agent.settings.LLM_CONTEXT_TASKS
        for task in await request.acontext_tasks(limit):  # the owner's own tasks only
            turns += task_turns(task)
        turns += task_turns({"history": request.history or [request.message]})
        if not turns or turns[-1]["role"] != "user":
            turns.append({"role": "user", "content": request.text or "(no text)"})
        return turns

    async def delegate(self, request: HandlerRequest, agent: str, message: Message) -> Task:
        """Run a tool's call on the remote agent ``agent``: a delegation from this task, the
        remote task as it ended. Its artifacts are the model's to read, not the task's, and
        a remote task that waits for its client or is canceled comes back as it is (the
        model reads it as an error) rather than pausing this task mid-conversation."""
        return await request.adelegate(agent, message, surface=False, artifacts=False)

    async def __call__(self, request: HandlerRequest) -> Result:
        conf = request.agent.settings
        client = replace(self.client(conf), agent=request.agent.name)
        skill = self.skill_for(request)
        remote = await remote_tools(conf.LLM_REMOTE_TOOLS) if conf.LLM_REMOTE_TOOLS else []
        tools: list[Tool] = [*function_tools(conf.LLM_TOOLS, (t.name for t in remote)), *remote]
        loop = ToolLoop(
            client.style,
            tools,
            lambda agent, message: self.delegate(request, agent, message),
            conf.LLM_MAX_ROUNDS,
        )
        paused = await paused_state(request)
        pending = await self.pending(request, paused, client.style) if paused else None
        messages = paused["state"]["messages"] if paused else await self.conversation(request)
        stream = AnswerStream(request)  # each round's text streams; a tool call's round restarts it

        async def chat(system: str, turns: list[dict[str, Any]], specs: list[dict[str, Any]]) -> ChatResult:
            return await client.chat(system, turns, specs, stream)

        try:
            result = await loop.run(chat, self.system_prompt(skill, conf), messages, pending)
        except (LLMError, RoundLimit) as exc:  # the tokens spent before stay on the task
            stream.close()
            if loop.rounds:
                exc.metadata = {"llm": self.usage(request, client.style, client.model, skill, loop)}
            raise
        except ApprovalNeeded as asked:  # a person approves first: the loop waits, kept on the task
            stream.close()  # text before the call is not the answer: the resumed turn streams that
            metadata = {"llm": self.usage(request, client.style, client.model, skill, loop)}
            calls = [[c.id, c.name, c.arguments] for c in asked.calls]
            question = Question([{"id": c.id, "tool": c.name, "args": c.arguments} for c in asked.asking], [])
            await pause(request, question, {"messages": asked.messages, "calls": calls}, metadata)
        except BaseException:  # canceled where it stands
            stream.close()
            raise
        metadata = {"llm": self.usage(request, client.style, result.model, skill, loop)}
        return await completed(stream, result.text, metadata)

    async def pending(self, request: HandlerRequest, paused: dict[str, Any], style: str) -> Pending:
        """The calls the paused loop waits on, and the client's answer (asked again when
        it is neither yes nor no)."""
        before = request.metadata.get("llm")
        approved = await answered(request, paused, {"llm": before} if before else {})
        return Pending([ToolCall(*call) for call in paused["state"]["calls"]], bool(approved))

    def usage(
        self, request: HandlerRequest, style: str, model: str, skill: Skill | None, loop: ToolLoop
    ) -> dict[str, Any]:
        """The task's ``llm`` metadata: the token usage summed over the task's turns and,
        with tools offered, each round's (``rounds``: turn, round, tokens, tools called)."""
        before = request.metadata.get("llm") or {}
        spent = before.get("usage") or {}
        tokens_in = int(spent.get("inputTokens") or 0) + sum(r["inputTokens"] for r in loop.rounds)
        tokens_out = int(spent.get("outputTokens") or 0) + sum(r["outputTokens"] for r in loop.rounds)
        llm: dict[str, Any] = {
            "model": model,
            "style": style,
            "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out},
        }
        if skill is not None:
            llm["skill"] = skill.id
        if loop.tools:
            rounds = [{"turn": request.turn, "round": n, **r} for n, r in enumerate(loop.rounds, 1)]
            llm["rounds"] = list(before.get("rounds") or []) + rounds
        return llm


handle = LLMHandler()
