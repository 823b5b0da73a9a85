"""OpenAI Agents SDK agents on the SDK's own OpenAI models (``OpenAIResponsesModel``,
``OpenAIChatCompletionsModel``), talking HTTP to the test kit's fake model server on
loopback: the SDK's own conversion of the input items runs, as with a real provider.
:func:`use` points an agent at the server; :func:`answer` is the scripted model."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from a2a.testing.fake_model import FakeModel, Reply, openai_reply, openai_tool_call
from a2a.testing.loopback import Seen

set_tracing_disabled(True)  # no trace export (it would want an API key)
DELETED: list[str] = []


@function_tool(needs_approval=True)
def delete(path: str) -> str:
    """Delete a file (a person approves first)."""
    DELETED.append(path)
    return f"deleted {path}"


responses = Agent(name="responses", instructions="Help.", tools=[delete])
chat = Agent(name="chat", instructions="Help.", tools=[delete])
AGENTS = {"responses": responses, "chat": chat}


def use(kind: str, server: FakeModel) -> str:
    """Point the agent ``kind`` ("responses" or "chat") at ``server``, answering as
    :func:`answer`; its dotted path for ``A2A_HANDLER``."""
    client = AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0)
    model_class = OpenAIResponsesModel if kind == "responses" else OpenAIChatCompletionsModel
    AGENTS[kind].model = model_class(model="fake-model", openai_client=client)
    server.responder = answer
    DELETED.clear()
    return f"{__name__}.{kind}"


def answer(seen: Seen) -> Reply:
    """The model, in either API: what the tool returned, else a call of ``delete`` when
    the last message says "delete", else a greeting."""
    body = seen.body if isinstance(seen.body, dict) else {}
    items = body.get("input") if "input" in body else body.get("messages") or []
    last = items[-1] if isinstance(items, list) and items else {}
    if last.get("type") == "function_call_output" or last.get("role") == "tool":
        text = f"The tool said: {last.get('output', last.get('content'))}"
        return responses_reply(text) if "input" in body else openai_reply(text)
    if last.get("content") == "delete":
        if "input" in body:
            return responses_call("delete", {"path": "/tmp/x"}, call_id="call-delete")
        return openai_tool_call("delete", {"path": "/tmp/x"}, call_id="call-delete")
    return responses_reply("Hello there") if "input" in body else openai_reply("Hello there")


def responses_reply(text: str) -> Reply:
    """A streamed Responses API answer with ``text``."""
    content = [{"type": "output_text", "text": text, "annotations": []}]
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": content}
    deltas = [
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0}
        | {"delta": word, "logprobs": []}
        for word in text.split(" ")
    ]
    return _streamed([*deltas, _completed([item])])


def responses_call(name: str, arguments: dict[str, Any], *, call_id: str) -> Reply:
    """A streamed Responses API answer calling the function ``name``."""
    item = {"type": "function_call", "id": "fc_1", "call_id": call_id, "name": name}
    return _streamed([_completed([item | {"arguments": json.dumps(arguments), "status": "completed"}])])


def _completed(output: list[dict[str, Any]]) -> dict[str, Any]:
    usage = {
        "input_tokens": 7,
        "output_tokens": 5,
        "total_tokens": 12,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    response = {"id": "resp_1", "object": "response", "created_at": 0, "model": "fake-model", "status": "completed"}
    response |= {"output": output, "parallel_tool_calls": False, "tool_choice": "auto", "tools": [], "usage": usage}
    return {"type": "response.completed", "response": response}


def _streamed(events: list[dict[str, Any]]) -> Reply:
    """``events`` as the server-sent events of a Responses stream."""
    text = "".join(
        f"event: {e['type']}\ndata: {json.dumps(e | {'sequence_number': n})}\n\n" for n, e in enumerate(events)
    )
    return Reply(body=text, headers={"Content-Type": "text/event-stream"})
