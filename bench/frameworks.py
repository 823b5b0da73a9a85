"""What serving a framework's agent through its adapter costs: server CPU per task (a
blocking SendMessage through the service layer, memory store) for each framework, the
agent named as ``A2A_HANDLER`` (the adapter: streamed, tools, memory, usage) against the
same agent wrapped by hand in a plain handler (``return (await agent.run(text)).output``:
no stream, no memory, no usage), both on the same fake model answer (five words, no
delay), and a plain handler returning that answer (no framework at all).

    python -m bench.frameworks            # every framework, in turns, medians
    python -m bench.frameworks --one pydantic-ai:adapter

Each configuration runs in its own process, ``--rounds`` times in turns.
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
import time
from collections.abc import AsyncIterator
from typing import Any

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
        """The same answer every time, whole or streamed word by word."""

        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            self.messages = iter([AIMessage(ANSWER)])
            return super()._generate(*args, **kwargs)

        def _stream(self, *args: Any, **kwargs: Any) -> Any:
            self.messages = iter([AIMessage(ANSWER)])
            return super()._stream(*args, **kwargs)

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


def one(config: str, tasks: int) -> float:
    """µs of this process's CPU (all its threads) per blocking SendMessage, ``config``
    "plain" or "<framework>:adapter" / "<framework>:by-hand"."""
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
        module.served = agent if form == "adapter" else by_hand(framework, agent)  # type: ignore[attr-defined]
        settings.A2A_HANDLER = f"{__name__}.served"
        os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    from a2a.conf import a2a_settings
    from a2a.protocol.model import SendParams
    from a2a.service import operations

    a2a_settings.reload()

    async def run(n: int) -> float:
        cpu = time.process_time()
        for i in range(n):
            message = {
                "kind": "message",
                "messageId": f"m{i}",
                "role": "user",
                "parts": [{"kind": "text", "text": "q"}],
            }
            task = await operations.send_message(SendParams(message=message))
            assert task["status"]["state"] == "completed", task["status"]
        return (time.process_time() - cpu) / n * 1e6

    asyncio.run(run(30))  # warm up
    return asyncio.run(run(tasks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one")
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frameworks", nargs="*", default=list(FRAMEWORKS))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.tasks)))
        return
    configs = ["plain"] + [f"{f}:{form}" for f in args.frameworks for form in ("by-hand", "adapter")]
    runs: dict[str, list[float]] = {c: [] for c in configs}
    for _ in range(args.rounds):
        for config in configs:
            command = [sys.executable, "-m", "bench.frameworks", "--one", config, "--tasks", str(args.tasks)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            runs[config].append(json.loads(done.stdout.strip().splitlines()[-1]))
    median = {c: statistics.median(v) for c, v in runs.items()}
    print(f"{'configuration':<28}{'CPU µs/task':>12}{'÷ by hand':>11}{'÷ plain':>9}")
    for config in configs:
        hand = median.get(config.replace(":adapter", ":by-hand"), median[config])
        print(
            f"{config:<28}{median[config]:>12.0f}{median[config] / hand:>11.2f}{median[config] / median['plain']:>9.2f}"
        )


if __name__ == "__main__":
    main()
