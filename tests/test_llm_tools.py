"""Remote agents as the model's tools (a2a/handlers/tools.py): the LLM handler against
the test kit's fake model, calling a fake remote agent on loopback, in both wire styles:
one tool, two rounds, a tool that fails, the round limit, usage per round, unreachable
agents, the cards' cache, the tool names and the check."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from django.core.checks import run_checks

from a2a.handlers import tools
from a2a.handlers.tools import ToolLoop, tool_name, tools_of
from a2a.testing.fake_agent import artifact, completed, failed, input_required
from a2a.testing.fake_model import Reply, anthropic_reply, anthropic_tool_use, openai_reply, openai_tool_call
from tests.helpers import send_direct
from tests.ports import free_port

LLM = "a2a.handlers.llm.handle"
SKILLS = [
    {
        "id": "invoices",
        "name": "Invoices",
        "description": "Lists a customer's invoices.",
        "examples": ["What do I owe?"],
    },
    {"id": "refund.v2", "name": "Refund", "description": "Refunds an invoice."},
]


class Style:
    """One wire style: the fake model's replies and where a request carries tool results."""

    def __init__(self, name: str) -> None:
        self.name = name

    def reply(self, text: str) -> Reply:
        return anthropic_reply(text) if self.name == "anthropic" else openai_reply(text)

    def tool_call(self, tool: str, request: Any, call_id: str = "call_1") -> Reply:
        arguments = request if isinstance(request, dict) else {"request": request}
        if self.name == "anthropic":
            return anthropic_tool_use(tool, arguments, use_id=call_id)
        return openai_tool_call(tool, arguments, call_id=call_id)

    def tokens(self) -> tuple[int, int]:
        """The usage the kit's replies report (input, output)."""
        return (11, 5) if self.name == "anthropic" else (7, 3)

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        key = (lambda t: t["name"]) if self.name == "anthropic" else (lambda t: t["function"]["name"])
        return [key(t) for t in body.get("tools", [])]

    def results(self, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
        """(call id, content, is_error) of the tool results in a request's last turn(s)."""
        if self.name == "anthropic":
            last = body["messages"][-1]
            assert last["role"] == "user"
            return [(b["tool_use_id"], b["content"], b.get("is_error", False)) for b in last["content"]]
        found = []
        for message in reversed(body["messages"]):
            if message["role"] != "tool":
                break
            content = message["content"]
            found.insert(0, (message["tool_call_id"], content, content.startswith("Error:")))
        return found


@pytest.fixture(params=["openai", "anthropic"])
def style(request, settings) -> Style:
    settings.A2A_LLM_STYLE = request.param
    return Style(request.param)


@pytest.fixture
def agent(fake_agent, fake_model, settings):
    """The fake remote agent, as "billing", offered to the LLM handler as tools."""
    fake_agent.skills = [dict(s) for s in SKILLS]
    settings.A2A_HANDLER = LLM
    settings.A2A_REMOTE_AGENTS = {"billing": {"URL": fake_agent.url, "RETRIES": 1, "TIMEOUT": 5}}
    settings.A2A_LLM_REMOTE_TOOLS = ["billing"]
    settings.A2A_LLM_TIMEOUT = 5.0
    return fake_agent


def remote_messages(agent) -> list[dict]:
    """The messages the fake agent was sent."""
    return [r.body["params"]["message"] for r in agent.requests if isinstance(r.body, dict) and "params" in r.body]


# --- The loop, in both styles ------------------------------------------------------------------


def test_one_tool_two_rounds(agent, fake_model, style):
    agent.script([artifact("You owe 42 EUR."), completed()])
    fake_model.queue(style.tool_call("billing__invoices", "What does ACME owe?"), style.reply("ACME owes 42 EUR."))
    task = send_direct("How much does ACME owe?")
    assert task["status"]["state"] == "completed", task["status"]
    assert [a["parts"] for a in task["artifacts"]] == [[{"kind": "text", "text": "ACME owes 42 EUR."}]]
    [delegation] = task["metadata"]["a2a.delegations"]  # the remote task, kept on the local one
    assert (delegation["agent"], delegation["state"]) == ("billing", "completed")
    first, second = (r.body for r in fake_model.requests)
    assert style.tool_names(first) == ["billing__invoices", "billing__refund_v2"]
    spec = first["tools"][0]
    described = spec["description"] if style.name == "anthropic" else spec["function"]["description"]
    assert "Lists a customer's invoices." in described and "What do I owe?" in described
    [sent] = remote_messages(agent)
    assert sent["parts"][0]["text"] == "What does ACME owe?"
    assert sent["metadata"] == {"skill": "invoices"}
    assert style.results(second) == [("call_1", "You owe 42 EUR.", False)]
    tokens_in, tokens_out = style.tokens()
    llm = task["metadata"]["llm"]
    assert llm["rounds"] == [
        {"turn": 1, "round": 1, "inputTokens": tokens_in, "outputTokens": tokens_out, "tools": ["billing__invoices"]},
        {"turn": 1, "round": 2, "inputTokens": tokens_in, "outputTokens": tokens_out},
    ]
    total = 2 * (tokens_in + tokens_out)
    assert llm["usage"] == {"inputTokens": 2 * tokens_in, "outputTokens": 2 * tokens_out, "totalTokens": total}


def test_the_assistant_turn_is_sent_back_with_the_results(agent, fake_model, style):
    fake_model.queue(style.tool_call("billing__invoices", "owed?"), style.reply("done"))
    send_direct("owed?")
    second = fake_model.requests[1].body["messages"]
    if style.name == "anthropic":
        assistant = second[-2]
        assert assistant["role"] == "assistant" and assistant["content"][0]["type"] == "tool_use"
    else:
        assistant = second[-2]
        assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["id"] == "call_1"


def test_a_tool_that_fails_is_an_error_the_model_reads(agent, fake_model, style):
    agent.script([failed("card declined")])
    fake_model.queue(style.tool_call("billing__refund_v2", "Refund invoice 7"), style.reply("The refund failed."))
    task = send_direct("Refund invoice 7")
    assert task["status"]["state"] == "completed", task["status"]
    assert task["artifacts"][0]["parts"][0]["text"] == "The refund failed."
    [(call_id, content, is_error)] = style.results(fake_model.requests[1].body)
    assert call_id == "call_1" and is_error and "card declined" in content
    if style.name == "anthropic":
        assert fake_model.requests[1].body["messages"][-1]["content"][0]["is_error"] is True


def test_a_remote_question_is_an_error_the_model_reads(agent, fake_model, style):
    agent.script([input_required("Which invoice?")])
    fake_model.queue(style.tool_call("billing__refund_v2", "Refund it"), style.reply("Which invoice do you mean?"))
    task = send_direct("Refund it")
    assert task["status"]["state"] == "completed", task["status"]
    [(_, content, is_error)] = style.results(fake_model.requests[1].body)
    assert is_error and "input-required" in content and "Which invoice?" in content


def test_an_agent_down_at_call_time_is_an_error_the_model_reads(agent, fake_model, style):
    fake_model.queue(style.reply("warm up"))
    send_direct("warm up")  # the card is fetched and kept
    agent.fail_next(500, times=10)
    fake_model.queue(style.tool_call("billing__invoices", "owed?"), style.reply("Billing is down."))
    task = send_direct("owed?")
    assert task["status"]["state"] == "completed", task["status"]
    [(_, content, is_error)] = style.results(fake_model.requests[2].body)
    assert is_error and "billing" in content


def test_the_round_limit_fails_the_task_and_keeps_the_usage(agent, fake_model, style, settings):
    settings.A2A_LLM_MAX_ROUNDS = 3
    fake_model.queue(style.tool_call("billing__invoices", "again"))  # the last reply repeats
    task = send_direct("Loop forever")
    assert task["status"]["state"] == "failed"
    text = task["status"]["message"]["parts"][0]["text"]
    assert "still calling tools after 3 rounds (A2A_LLM_MAX_ROUNDS)" in text and "billing__invoices" in text
    assert len(fake_model.requests) == 3
    assert len(remote_messages(agent)) == 2  # the third round's call is not run
    rounds = task["metadata"]["llm"]["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3] and all(r["tools"] == ["billing__invoices"] for r in rounds)


def test_a_model_error_after_a_tool_round_keeps_the_usage(agent, fake_model, style):
    error = Reply(status=400, body={"error": {"message": "context too long", "type": "invalid_request_error"}})
    fake_model.queue(style.tool_call("billing__invoices", "owed?"), error)
    task = send_direct("owed?")
    assert task["status"]["state"] == "failed"
    assert "context too long" in task["status"]["message"]["parts"][0]["text"]
    [only] = task["metadata"]["llm"]["rounds"]
    assert only["tools"] == ["billing__invoices"]


def test_two_calls_in_one_answer_run_and_answer_in_order(agent, fake_model, style):
    agent.script([artifact("invoices: 7, 8"), completed()], [artifact("refunded"), completed()])
    one, two = (
        style.tool_call("billing__invoices", "list", "c1").body,
        style.tool_call("billing__refund_v2", "7", "c2").body,
    )
    if style.name == "anthropic":
        one["content"] += two["content"]
    else:
        one["choices"][0]["message"]["tool_calls"] += two["choices"][0]["message"]["tool_calls"]
    fake_model.queue(Reply(body=one), style.reply("ok"))
    assert send_direct("list and refund")["status"]["state"] == "completed"
    results = style.results(fake_model.requests[1].body)
    assert [r[0] for r in results] == ["c1", "c2"]
    assert {r[1] for r in results} == {"invoices: 7, 8", "refunded"}


# --- What the model may get wrong ----------------------------------------------------------------


def test_an_unknown_tool_and_bad_arguments_are_errors_the_model_reads(agent, fake_model, style):
    fake_model.queue(
        style.tool_call("billing__nope", "x"), style.tool_call("billing__invoices", {"query": "x"}), style.reply("ok")
    )
    task = send_direct("try")
    assert task["status"]["state"] == "completed"
    [(_, unknown, is_error)] = style.results(fake_model.requests[1].body)
    assert is_error and "no tool 'billing__nope'" in unknown and "billing__invoices" in unknown
    [(_, bad, is_error)] = style.results(fake_model.requests[2].body)
    assert is_error and '{"request": "<text>"}' in bad
    assert remote_messages(agent) == []


def test_arguments_that_are_not_json_are_an_error_the_model_reads(agent, fake_model, settings):
    body = openai_tool_call("billing__invoices", {}).body
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{not json"
    fake_model.queue(Reply(body=body), openai_reply("ok"))
    assert send_direct("try")["status"]["state"] == "completed"
    content = fake_model.requests[1].body["messages"][-1]["content"]
    assert content.startswith("Error:") and "must be" in content


# --- The tools offered ---------------------------------------------------------------------------


def test_an_unreachable_agent_has_no_tools_and_the_handler_answers(agent, fake_model, settings, caplog):
    settings.A2A_REMOTE_AGENTS = {
        **settings.A2A_REMOTE_AGENTS,
        "down": {"URL": f"http://127.0.0.1:{free_port()}", "RETRIES": 1, "TIMEOUT": 2},
    }
    settings.A2A_LLM_REMOTE_TOOLS = ["down", "billing"]
    fake_model.queue(openai_reply("Hello."))
    with caplog.at_level(logging.WARNING, logger="a2a.handlers.tools"):
        task = send_direct("hi")
    assert task["status"]["state"] == "completed"
    assert Style("openai").tool_names(fake_model.requests[0].body) == ["billing__invoices", "billing__refund_v2"]
    assert any("'down' cannot be reached" in r.getMessage() for r in caplog.records)


def test_an_unreachable_agent_is_asked_again_only_after_a_while(fake_model, settings, caplog):
    settings.A2A_HANDLER = LLM
    settings.A2A_REMOTE_AGENTS = {"down": {"URL": f"http://127.0.0.1:{free_port()}", "RETRIES": 1, "TIMEOUT": 2}}
    settings.A2A_LLM_REMOTE_TOOLS = ["down"]
    fake_model.queue(openai_reply("Hello."))
    with caplog.at_level(logging.WARNING, logger="a2a.handlers.tools"):
        assert send_direct("hi")["status"]["state"] == "completed"
        task = send_direct("again")
    assert "tools" not in fake_model.requests[0].body and "rounds" not in task["metadata"]["llm"]
    assert len([r for r in caplog.records if "cannot be reached" in r.getMessage()]) == 1


def test_the_cards_are_fetched_once_until_the_setting_changes(agent, fake_model, settings):
    fake_model.queue(openai_reply("ok"))
    send_direct("one")
    agent.skills = [{"id": "new", "name": "New", "description": "A new skill."}]
    send_direct("two")
    names = Style("openai").tool_names
    assert names(fake_model.requests[1].body) == ["billing__invoices", "billing__refund_v2"]
    settings.A2A_LLM_REMOTE_TOOLS = ["billing"]  # any change of the setting forgets the cards
    send_direct("three")
    assert names(fake_model.requests[2].body) == ["billing__new"]


def test_without_remote_tools_no_tools_and_no_rounds(fake_model, settings):
    settings.A2A_HANDLER = LLM
    fake_model.queue(openai_reply("plain"))
    task = send_direct("hi")
    assert "tools" not in fake_model.requests[0].body
    assert "rounds" not in task["metadata"]["llm"]


def test_tool_names_follow_the_providers_rules():
    assert tool_name("my agent__skill.v2") == "my_agent__skill_v2"
    assert tool_name("billing", ["billing", "billing_2"]) == "billing_3"
    long = tool_name("a" * 80)
    assert len(long) == 64 and long != tool_name("a" * 81)
    assert len(tool_name("a" * 80, [long])) == 64
    card = {"name": "Billing", "skills": [{"id": "x"}, {"id": "x"}, {"no": "id"}]}
    assert [t.name for t in tools_of([("b", card), ("b", {"skills": []})])] == ["b__x", "b__x_2", "b"]
    assert tools_of([("b", {"description": "Bills."})])[0].description == "Ask the remote agent 'b': Bills."


def test_the_loop_with_an_injected_delegate():
    """The loop alone: any delegate (here a stub) and any chat function."""
    tool = tools_of([("billing", {"skills": [{"id": "invoices"}]})])[0]
    answers = [openai_tool_call("billing__invoices", {"request": "owed?"}).body, openai_reply("42").body]
    seen = []

    class Answer:
        def __init__(self, raw: dict) -> None:
            self.raw, self.input_tokens, self.output_tokens, self.model = raw, 1, 2, "m"
            self.text = raw["choices"][0]["message"]["content"] or ""

    async def chat(system: str, messages: list, specs: list) -> Answer:
        return Answer(answers.pop(0))

    async def delegate(agent: str, message: dict) -> dict:
        seen.append((agent, message["parts"][0]["text"], message["metadata"]))
        return {"id": "t", "status": {"state": "completed"}, "artifacts": [{"parts": [{"kind": "text", "text": "42"}]}]}

    loop = ToolLoop("openai", [tool], delegate, max_rounds=2)
    assert asyncio.run(loop.run(chat, "", [{"role": "user", "content": "owed?"}])).text == "42"
    assert seen == [("billing", "owed?", {"skill": "invoices"})]
    assert [r.get("tools") for r in loop.rounds] == [["billing__invoices"], None]


def test_remote_answers_as_the_model_reads_them():
    working = {"id": "t", "status": {"state": "input-required", "message": {"parts": [{"text": "Which one?"}]}}}
    assert tools.answer_of(working) == tools.ToolAnswer("The remote task ended input-required: Which one?", True)
    assert tools.answer_of({"kind": "message", "parts": [{"text": "hi"}]}).text == "hi"
    empty = {"id": "t", "status": {"state": "completed"}, "artifacts": []}
    assert tools.answer_of(empty).text == "(the agent answered with no text)"
    assert json.loads(tools.part_text({"data": {"a": 1}}).strip("`json\n")) == {"a": 1}


# --- The check -------------------------------------------------------------------------------------


def test_the_check_refuses_a_name_not_in_remote_agents(settings):
    settings.A2A_REMOTE_AGENTS = {"billing": {"URL": "https://billing.example.com"}}
    settings.A2A_LLM_REMOTE_TOOLS = ["billing", "search"]
    [error] = [m for m in run_checks() if m.id == "a2a.E014"]
    assert "'search'" in error.msg and "configured: billing" in error.msg
    settings.A2A_LLM_REMOTE_TOOLS = ["billing"]
    assert "a2a.E014" not in {m.id for m in run_checks()}


def test_the_check_refuses_a_round_limit_below_one(settings):
    settings.A2A_LLM_MAX_ROUNDS = 0
    assert any(m.id == "a2a.E002" and "A2A_LLM_MAX_ROUNDS" in m.msg for m in run_checks())
