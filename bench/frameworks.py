"""What serving a framework's agent through its adapter costs: server CPU per task (a
blocking SendMessage through the service layer, memory store) for each framework, the
agent named as ``A2A_HANDLER`` (the adapter: streamed, tools, memory, usage) against the
same agent wrapped by hand in a plain handler (``return (await agent.run(text)).output``:
no stream, no memory, no usage), the same wrapped by hand but run streamed as the
adapter runs it (its text gathered, nothing saved: what the adapter adds beyond it is
its own), all on the same fake model answer (five words, no delay), and a plain handler
returning that answer (no framework at all).

    python -m bench.frameworks            # every framework, in turns, medians
    python -m bench.frameworks --one pydantic-ai:adapter
    python -m bench.frameworks --instructions 100   # needs valgrind

Each configuration runs in its own process, ``--rounds`` times in turns.

``--instructions N``: no clock; each configuration in its own process under valgrind's
callgrind, counting the instructions (every thread's) of N tasks after a warm-up, which
do not depend on what else runs on the machine. Under callgrind a run is tens of times
slower, so the answer's tokens would span many of ``AnswerStream.interval`` and be saved
as more chunks than they are natively; the interval is lengthened there so that the fake
answer is one save, as it is natively.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

from bench.callgrind import measure

ANSWER = "The answer is forty two"
FRAMEWORKS = ("pydantic-ai", "langgraph", "openai-agents")


def plain(request: Any) -> str:
    """No framework: the answer, returned."""
    return ANSWER


def _pydantic_ai() -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def whole(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(ANSWER)])

    async def words(messages: list[Any], info: AgentInfo) -> AsyncIterator[str]:
        for word in ANSWER.split(" "):
            yield word + " "

    return Agent(FunctionModel(whole, stream_function=words), name="bench")


def _langgraph() -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    class Model(GenericFakeChatModel):
        """The same answer every time, whole or streamed word by word; natively async, as
        the providers' chat models are (the base class would run the sync methods on a
        thread, a hop per token streamed)."""

        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            self.messages = iter([AIMessage(ANSWER)])
            return super()._generate(*args, **kwargs)

        def _stream(self, *args: Any, **kwargs: Any) -> Any:
            self.messages = iter([AIMessage(ANSWER)])
            return super()._stream(*args, **kwargs)

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            return self._generate(messages, stop=stop, **kwargs)

        async def _astream(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> AsyncIterator[Any]:
            for chunk in self._stream(messages, stop=stop, **kwargs):
                if run_manager is not None:
                    await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk

    model = Model(messages=iter(()))

    async def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("think", think)
    builder.add_edge(START, "think")
    return builder.compile()


def _openai_agents() -> Any:
    from agents import Agent, set_tracing_disabled

    from tests.frameworks.openai_agents_agent import FakeModel

    set_tracing_disabled(True)
    model = FakeModel()
    model.delay = 0.0  # the answer at once, as the other frameworks' fakes here give it
    return Agent(name="bench", model=model)


AGENTS = {"pydantic-ai": _pydantic_ai, "langgraph": _langgraph, "openai-agents": _openai_agents}


def by_hand(framework: str, agent: Any) -> Any:
    """The agent wrapped by hand in a plain handler, as the issue says teams do today."""

    async def handle(request: Any) -> str:
        if framework == "pydantic-ai":
            return str((await agent.run(request.text)).output)
        if framework == "langgraph":
            return str((await agent.ainvoke({"messages": [("user", request.text)]}))["messages"][-1].content)
        from agents import Runner

        return str((await Runner.run(agent, request.text)).final_output)

    return handle


def streamed(framework: str, agent: Any) -> Any:
    """The agent wrapped by hand in a plain handler that runs it streamed, as the adapter
    does (the framework's own streaming run, its text gathered), with nothing else of
    the adapter's (no chunks saved, no memory, no progress, no usage, no checkpoint):
    what the adapter costs beyond it is its own."""

    async def handle(request: Any) -> str:
        text: list[str] = []
        if framework == "pydantic-ai":
            from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta

            async def follow(ctx: Any, events: Any) -> None:
                async for event in events:
                    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                        text.append(event.part.content)
                    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                        text.append(event.delta.content_delta)

            await agent.run(request.text, event_stream_handler=follow)
        elif framework == "langgraph":
            async for message, _ in agent.astream({"messages": [("user", request.text)]}, stream_mode="messages"):
                text.append(message.text)
        else:
            from agents import Runner

            result = Runner.run_streamed(agent, request.text)
            async for event in result.stream_events():
                if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
                    text.append(event.data.delta)
        return "".join(text)

    return handle


FORMS = {"by-hand": by_hand, "streamed": streamed}


def prepared(config: str) -> Callable[[int], Coroutine[Any, Any, None]]:
    """This process set up to serve ``config`` ("plain" or "<framework>:adapter" /
    "<framework>:by-hand"); the coroutine function sending N blocking SendMessages."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django
    from django.conf import settings

    django.setup()
    logging.disable(logging.CRITICAL)
    settings.TASK_STORE = "memory"
    module = sys.modules[__name__]
    if config == "plain":
        settings.A2A_HANDLER = f"{__name__}.plain"
    else:
        framework, form = config.split(":")
        agent = AGENTS[framework]()
        module.served = agent if form == "adapter" else FORMS[form](framework, agent)  # type: ignore[attr-defined]
        settings.A2A_HANDLER = f"{__name__}.served"
        os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    from a2a.conf import a2a_settings
    from a2a.protocol.model import SendParams
    from a2a.service import operations

    a2a_settings.reload()

    async def run(n: int) -> None:
        for i in range(n):
            message = {
                "kind": "message",
                "messageId": f"m{i}",
                "role": "user",
                "parts": [{"kind": "text", "text": "q"}],
            }
            task = await operations.send_message(SendParams(message=message))
            assert task["status"]["state"] == "completed", task["status"]

    return run


def one(config: str, tasks: int) -> float:
    """µs of this process's CPU (all its threads) per blocking SendMessage of ``config``."""
    run = prepared(config)
    asyncio.run(run(30))  # warm up
    cpu = time.process_time()
    asyncio.run(run(tasks))
    return (time.process_time() - cpu) / tasks * 1e6


def counted(config: str, tasks: int) -> float:
    """In this process (under callgrind, instrumentation off): warm up, then ``tasks``
    tasks of ``config`` with instrumentation on; the instructions per task."""
    from a2a.handlers.frameworks.answer import AnswerStream

    AnswerStream.interval = 3600.0  # one save per answer, as natively (see the module's docstring)
    run = prepared(config)
    from django.conf import settings

    from a2a.conf import a2a_settings

    settings.A2A_BLOCKING_TIMEOUT = 3600.0  # a task under callgrind takes seconds
    a2a_settings.reload()
    loop = asyncio.new_event_loop()
    loop.run_until_complete(run(30))

    return measure({"tasks": lambda: loop.run_until_complete(run(tasks))})["tasks"] / tasks


def instructions(configs: list[str], tasks: int, keep: Path | None) -> dict[str, float]:
    """Each configuration under callgrind, in a process of its own: instructions per task
    (``keep``: a directory to keep the profiles in, for ``callgrind_annotate``)."""
    found = {}
    with tempfile.TemporaryDirectory(prefix="bench-frameworks-") as tmp:
        for config in configs:
            out = (keep or Path(tmp)) / f"{config.replace(':', '-')}.callgrind"
            command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
            command += [sys.executable, "-m", "bench.frameworks", "--count", config, "--tasks", str(tasks)]
            env = {**os.environ, "CALLGRIND_OUT": str(out)}
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            if done.returncode:
                sys.exit(done.stderr[-3000:])
            found[config] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def table(configs: list[str], values: dict[str, float], unit: str) -> None:
    """Each configuration's value, against the same agent wrapped by hand (run whole, and
    run streamed) and a plain handler."""
    print(f"{'configuration':<28}{unit:>14}{'÷ by hand':>11}{'÷ streamed':>12}{'÷ plain':>9}")
    for config in configs:
        value = values[config]
        framework = config.split(":")[0]
        ratios = [value / values.get(f"{framework}:{form}", value) for form in ("by-hand", "streamed")]
        ratios.append(value / values.get("plain", value))
        print(f"{config:<28}{value:>14,.0f}{ratios[0]:>11.2f}{ratios[1]:>12.2f}{ratios[2]:>9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one")
    parser.add_argument("--count", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frameworks", nargs="*", default=list(FRAMEWORKS))
    parser.add_argument("--instructions", type=int, metavar="N", help="count the instructions of N tasks each")
    parser.add_argument("--configs", nargs="*", help="only these configurations (e.g. langgraph:adapter)")
    parser.add_argument("--keep", type=Path, help="with --instructions: keep the callgrind profiles here")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.tasks)))
        return
    if args.count:
        print(json.dumps(counted(args.count, args.tasks)))
        return
    forms = ("by-hand", "streamed", "adapter")
    configs = args.configs or ["plain"] + [f"{f}:{form}" for f in args.frameworks for form in forms]
    if args.instructions:
        table(configs, instructions(configs, args.instructions, args.keep), "instructions")
        return
    runs: dict[str, list[float]] = {c: [] for c in configs}
    for _ in range(args.rounds):
        for config in configs:
            command = [sys.executable, "-m", "bench.frameworks", "--one", config, "--tasks", str(args.tasks)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            runs[config].append(json.loads(done.stdout.strip().splitlines()[-1]))
    table(configs, {c: statistics.median(v) for c, v in runs.items()}, "CPU µs/task")


if __name__ == "__main__":
    main()
