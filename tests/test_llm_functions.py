"""The project's own functions as the model's tools (a2a/handlers/functions.py): the LLM
handler against the test kit's fake model, in both wire styles: the schema from the type
hints and the docstring, a call and its answer, a sync function off the event loop, an
async one, a function that raises, bad arguments, names beside remote tools, the check."""

from __future__ import annotations

import json
import threading
from typing import Any, Literal

import pytest
from django.core.checks import run_checks

from a2a.handlers.functions import function_tool, requires_approval, schema_of
from a2a.testing.fake_model import anthropic_reply, anthropic_tool_use, openai_reply, openai_tool_call
from tests.conftest import ALL_DATABASES, make_store
from tests.frameworks.support import DURABLE, restart
from tests.helpers import send_direct

HERE = __name__
THREADS: list[str] = []
REFUNDED: list[str] = []


def order_status(order: str, verbose: bool = False) -> str:
    """The status of an order, by its number.

    (Not read by the model: only the first paragraph is the description.)"""
    THREADS.append(threading.current_thread().name)
    return f"order {order}: shipped" + (" on Monday" if verbose else "")


async def totals(orders: list[str], currency: Literal["EUR", "USD"] = "EUR") -> dict[str, Any]:
    """The total of some orders."""
    return {"orders": orders, "total": 42, "currency": currency}


@requires_approval
def refund(order: str) -> str:
    """Refund an order (a person approves first)."""
    REFUNDED.append(order)
    return f"refunded {order}"


def broken(order: str) -> str:
    """Always fails."""
    raise KeyError(order)


@pytest.fixture(params=["openai", "anthropic"])
def style(request, settings, fake_model) -> str:
    settings.A2A_LLM_STYLE = request.param
    settings.A2A_HANDLER = "a2a.handlers.llm.handle"
    settings.A2A_LLM_TOOLS = [f"{HERE}.order_status", f"{HERE}.totals", f"{HERE}.broken", f"{HERE}.refund"]
    REFUNDED.clear()
    return request.param


def tool_call(style: str, tool: str, arguments: dict[str, Any]):
    if style == "anthropic":
        return anthropic_tool_use(tool, arguments, use_id="call_1")
    return openai_tool_call(tool, arguments, call_id="call_1")


def reply(style: str, text: str):
    return anthropic_reply(text) if style == "anthropic" else openai_reply(text)


def tool_result(style: str, body: dict[str, Any]) -> tuple[str, bool]:
    last = body["messages"][-1]
    if style == "anthropic":
        block = last["content"][0]
        return block["content"], bool(block.get("is_error"))
    return last["content"], last["content"].startswith("Error:")


def test_the_schema_comes_from_the_hints_and_the_docstring():
    tool = function_tool(order_status)
    assert tool.description == "The status of an order, by its number."
    assert tool.parameters == {
        "type": "object",
        "properties": {"order": {"type": "string"}, "verbose": {"type": "boolean"}},
        "required": ["order"],
    }
    assert function_tool(totals).parameters["properties"] == {
        "orders": {"type": "array", "items": {"type": "string"}},
        "currency": {"enum": ["EUR", "USD"]},
    }
    assert schema_of(int | None) == {"type": "integer"} and schema_of(dict[str, int]) == {"type": "object"}


def test_the_model_calls_a_function_and_reads_its_answer(style, fake_model):
    THREADS.clear()
    fake_model.queue(
        tool_call(style, "order_status", {"order": "A1", "verbose": True}), reply(style, "It shipped Monday.")
    )
    task = send_direct("Where is A1?")
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == "It shipped Monday."
    assert tool_result(style, fake_model.requests[1].body) == ("order A1: shipped on Monday", False)
    assert THREADS and THREADS[0] != "MainThread" and "a2a-handler" not in THREADS[0]  # off the loop, on a worker
    offered = fake_model.requests[0].body["tools"]
    names = [t["name"] if style == "anthropic" else t["function"]["name"] for t in offered]
    assert names == ["order_status", "totals", "broken", "refund"]
    assert [r.get("tools") for r in task["metadata"]["llm"]["rounds"]] == [["order_status"], None]


def test_an_async_function_and_a_result_that_is_not_text(style, fake_model):
    fake_model.queue(tool_call(style, "totals", {"orders": ["A1", "A2"]}), reply(style, "42 EUR"))
    assert send_direct("Total?")["status"]["state"] == "completed"
    content, is_error = tool_result(style, fake_model.requests[1].body)
    assert not is_error and json.loads(content) == {"orders": ["A1", "A2"], "total": 42, "currency": "EUR"}


def test_a_function_that_raises_is_an_error_the_model_reads(style, fake_model):
    fake_model.queue(tool_call(style, "broken", {"order": "A1"}), reply(style, "Sorry."))
    task = send_direct("Break it")
    assert task["status"]["state"] == "completed"
    content, is_error = tool_result(style, fake_model.requests[1].body)
    assert is_error and "KeyError: 'A1'" in content


@pytest.mark.parametrize(
    ("arguments", "said"),
    [({"orders": "x", "nope": 1}, "unknown: nope"), ({}, "missing: order"), ("{not json", "must be a JSON object")],
)
def test_bad_arguments_are_an_error_the_model_reads(style, fake_model, arguments, said):
    tool = "totals" if "nope" in arguments else "order_status"
    fake_model.queue(tool_call(style, tool, arguments), reply(style, "ok"))
    assert send_direct("try")["status"]["state"] == "completed"
    content, is_error = tool_result(style, fake_model.requests[1].body)
    assert is_error and said in content


def test_the_check_refuses_a_path_that_is_not_a_function(settings):
    settings.A2A_LLM_TOOLS = ["tests.test_llm_functions.nowhere"]
    errors = [e for e in run_checks() if e.id == "a2a.E015"]
    assert errors and "tests.test_llm_functions.nowhere" in errors[0].msg
    settings.A2A_LLM_TOOLS = [f"{HERE}.order_status"]
    assert not [e for e in run_checks() if e.id == "a2a.E015"]


def status_text(task: dict) -> str:
    return "\n".join(p["text"] for p in task["status"]["message"]["parts"] if "text" in p)


@pytest.mark.parametrize(("answer", "refunded", "result"), [("Yes", ["A1"], "refunded A1"), ("deny", [], "denied")])
def test_a_function_needing_approval_waits_for_a_person(style, fake_model, answer, refunded, result):
    fake_model.queue(tool_call(style, "refund", {"order": "A1"}), reply(style, "Done."))
    asked = send_direct("Refund A1")
    assert asked["status"]["state"] == "input-required" and REFUNDED == []
    assert status_text(asked) == 'refund({"order": "A1"}) needs your approval: reply yes or no.'
    assert asked["metadata"]["llm"]["rounds"][0]["tools"] == ["refund"]
    again = send_direct("what?", taskId=asked["id"])  # neither yes nor no: asked again, the model not asked
    assert again["status"]["state"] == "input-required" and len(fake_model.requests) == 1
    done = send_direct(answer, taskId=asked["id"])
    assert done["status"]["state"] == "completed" and refunded == REFUNDED
    content, is_error = tool_result(style, fake_model.requests[1].body)
    assert result in content and is_error == (not refunded)
    assert len(done["metadata"]["llm"]["rounds"]) == 2  # both turns' rounds


@ALL_DATABASES
@pytest.mark.parametrize("kind", DURABLE)
def test_the_approval_resumes_after_a_restart(style, fake_model, settings, tmp_path, kind):
    settings.TASK_STORE = make_store(kind, tmp_path)
    fake_model.queue(tool_call(style, "refund", {"order": "A1"}), reply(style, "Done."))
    asked = send_direct("Refund A1")
    restart(settings, kind, tmp_path)
    assert send_direct("approve", taskId=asked["id"])["status"]["state"] == "completed" and REFUNDED == ["A1"]
