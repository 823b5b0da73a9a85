"""The model-backed handler and skills, against a stub model server on loopback (never
the internet): both wire styles, skills shaping the prompt, context, retries with
backoff, the provider's error text, timeouts, token usage, the card and the checks."""

from __future__ import annotations

import asyncio
import email.utils
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from django.core.checks import run_checks

from a2a.conf import DEFAULTS
from a2a.handlers import HandlerRequest, Result, to_artifacts
from a2a.handlers.llm import LLMClient, LLMHandler, provider_error, retry_after
from a2a.handlers.skills import SkillError, parse_skill, requested_skill, scan
from a2a.protocol.model import SendParams
from a2a.service import operations
from a2a.service.card import skills as card_skills
from a2a.service.context import CallContext
from a2a.testing.client import v03_message
from a2a.testing.fake_model import Reply, anthropic_reply, openai_reply
from a2a.testing.fake_model import fake_model as stub_model
from tests.conftest import ALL_DATABASES
from tests.helpers import metric_sample as counter
from tests.helpers import send_direct

pytestmark = ALL_DATABASES

LLM = "a2a.handlers.llm.handle"


def write_skill(root: Path, name: str, body: str = "", **front: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"name: {name}", *(f"{k}: {v}" for k, v in front.items())]
    if "description" not in front:
        lines.append(f"description: The {name} skill.")
    path = folder / "SKILL.md"
    path.write_text("---\n" + "\n".join(lines) + "\n---\n" + body, encoding="utf-8")
    return path


@pytest.fixture
def model(settings, use_store):
    """The LLM handler pointed at a stub model; fast retries."""
    with stub_model() as stub:
        settings.A2A_HANDLER = LLM
        settings.A2A_LLM_BASE_URL = stub.url
        settings.A2A_LLM_MODEL = "mock-model"
        settings.A2A_LLM_API_KEY = "sk-test"
        settings.A2A_LLM_RETRY_BACKOFF = 0.01
        settings.A2A_LLM_TIMEOUT = 5.0
        yield stub


@pytest.fixture
def skills_dir(tmp_path, settings) -> Path:
    root = tmp_path / "skills"
    write_skill(
        root,
        "summarize",
        "Answer with at most three sentences.\nNever add a title.",
        description="Summarizes a text.",
        title="Summarize",
        tags="[text, summary]",
        examples='["Summarize: ..."]',
    )
    write_skill(root, "translate", "Translate into French.", description="Translates text into French.")
    settings.A2A_SKILLS_DIR = str(root)
    return root


# --- OpenAI style ---------------------------------------------------------------------


def test_answers_with_the_model_and_records_usage(model):
    model.queue(openai_reply("Paris.", prompt_tokens=12, completion_tokens=2))
    task = send_direct("Capital of France?")
    assert task["status"]["state"] == "completed", task["status"]
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "Paris."}]
    assert task["metadata"]["llm"] == {
        "model": "mock",
        "style": "openai",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
    }
    [seen] = model.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.body["model"] == "mock-model"
    assert "max_tokens" not in seen.body
    system, user = seen.body["messages"]
    assert system["role"] == "system" and "toolnexus-agent" in system["content"]
    assert user == {"role": "user", "content": "Capital of France?"}


def test_the_targeted_skill_shapes_the_system_prompt(model, skills_dir):
    task = send_direct(v03_message("Long text ...", metadata={"skill": "summarize"}))
    assert task["status"]["state"] == "completed"
    assert task["metadata"]["llm"]["skill"] == "summarize"
    system = model.requests[0].body["messages"][0]["content"]
    assert "# Skill: Summarize" in system
    assert "Answer with at most three sentences.\nNever add a title." in system
    assert "Translate into French." not in system


def test_the_skill_may_be_named_in_the_request_metadata(model, skills_dir):
    task = send_direct("Bonjour", metadata={"skillId": "translate"})
    assert task["metadata"]["llm"]["skill"] == "translate"
    assert "Translate into French." in model.requests[0].body["messages"][0]["content"]


def test_without_a_target_the_prompt_lists_the_skills(model, skills_dir):
    send_direct("What can you do?")
    system = model.requests[0].body["messages"][0]["content"]
    assert "- summarize: Summarizes a text." in system
    assert "- translate: Translates text into French." in system
    assert "Answer with at most three sentences." not in system


def test_an_unknown_skill_fails_the_task_naming_the_known_ones(model, skills_dir):
    task = send_direct(v03_message("x", metadata={"skill": "juggle"}))
    assert task["status"]["state"] == "failed"
    text = task["status"]["message"]["parts"][0]["text"]
    assert "Unknown skill 'juggle'" in text and "summarize, translate" in text
    assert model.requests == []  # no model call for a request we cannot serve


def test_a_disabled_skill_cannot_be_targeted(model, skills_dir, settings):
    settings.A2A_SKILLS_ENABLED = ["translate"]
    assert send_direct(v03_message("x", metadata={"skill": "summarize"}))["status"]["state"] == "failed"
    assert send_direct(v03_message("y", metadata={"skill": "translate"}))["status"]["state"] == "completed"


def test_earlier_tasks_of_the_context_are_the_conversation(model, settings):
    model.queue(openai_reply("Hello Ada."), openai_reply("You are Ada."))
    send_direct("My name is Ada.", contextId="ctx-chat")
    send_direct("Unrelated.", contextId="ctx-other")
    send_direct("What is my name?", contextId="ctx-chat")
    messages = model.requests[-1].body["messages"][1:]
    assert messages == [
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "What is my name?"},
    ]
    settings.A2A_LLM_CONTEXT_TASKS = 0
    send_direct("Again?", contextId="ctx-chat")
    assert model.requests[-1].body["messages"][1:] == [{"role": "user", "content": "Again?"}]


def test_data_and_file_parts_reach_the_model_as_text(model, settings):
    settings.A2A_INPUT_MODES = ["*/*"]
    message_parts = [
        {"kind": "text", "text": "Look:"},
        {"kind": "data", "data": {"a": 1}},
        {"kind": "file", "file": {"uri": "https://example.com/r.pdf", "name": "r.pdf", "mimeType": "application/pdf"}},
    ]
    message = {"kind": "message", "messageId": "m1", "role": "user", "parts": message_parts}
    asyncio.run(operations.send_message(SendParams(message=message, blocking=True)))
    content = model.requests[0].body["messages"][-1]["content"]
    assert content.startswith('Look:\n```json\n{\n  "a": 1\n}\n```')
    assert "[file: r.pdf, application/pdf, https://example.com/r.pdf]" in content


# --- Retries, errors, timeouts ------------------------------------------------------------


def test_429_and_5xx_are_retried_with_backoff(model):
    retries = counter("a2a_llm_requests_total", outcome="retry")
    model.queue(
        Reply(429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}, {"Retry-After": "0"}),
        Reply(503, {"error": {"message": "overloaded"}}),
        openai_reply("finally"),
    )
    task = send_direct("try")
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == "finally"
    assert len(model.requests) == 3
    assert counter("a2a_llm_requests_total", outcome="retry") == retries + 2


def test_the_model_metrics_name_the_agent_asking(model, settings):
    settings.A2A_AGENTS = {"billing": {"AGENT_NAME": "Billing"}}
    before = {a: counter("a2a_llm_requests_total", outcome="ok", agent=a) for a in ("default", "billing")}
    tokens = counter("a2a_llm_tokens_total", kind="input", agent="billing")
    model.queue(openai_reply("one", prompt_tokens=5), openai_reply("two"))
    message = {"kind": "message", "messageId": "m-billing", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
    billing = CallContext(agent_name="billing")
    asyncio.run(operations.send_message(SendParams(message=message, blocking=True), billing))
    send_direct("hello")
    assert counter("a2a_llm_requests_total", outcome="ok", agent="billing") == before["billing"] + 1
    assert counter("a2a_llm_requests_total", outcome="ok", agent="default") == before["default"] + 1
    assert counter("a2a_llm_tokens_total", kind="input", agent="billing") == tokens + 5
    assert counter("a2a_llm_request_seconds_count", agent="billing") >= 1


def test_retries_run_out_and_the_provider_error_is_the_status_message(model, settings):
    settings.A2A_LLM_MAX_RETRIES = 2
    model.queue(Reply(503, {"error": {"message": "The engine is currently overloaded", "type": "server_error"}}))
    task = send_direct("try")
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["parts"][0]["text"] == (
        "The model endpoint answered HTTP 503: The engine is currently overloaded (server_error)"
    )
    assert len(model.requests) == 3


def test_a_client_error_is_not_retried(model):
    model.queue(Reply(404, {"error": {"message": "The model `mock-model` does not exist", "code": "model_not_found"}}))
    task = send_direct("try")
    assert task["status"]["state"] == "failed"
    assert "does not exist (model_not_found)" in task["status"]["message"]["parts"][0]["text"]
    assert len(model.requests) == 1


def test_a_slow_model_times_out(model, settings):
    settings.A2A_LLM_TIMEOUT = 0.2
    settings.A2A_LLM_MAX_RETRIES = 1
    model.queue(Reply(delay=2, body=openai_reply("late").body))
    task = send_direct("slow")
    assert task["status"]["state"] == "failed"
    assert (
        task["status"]["message"]["parts"][0]["text"] == "The model endpoint did not answer within 0.2s (2 attempt(s))."
    )
    assert len(model.requests) == 2


def test_an_unreachable_endpoint_fails_the_task(use_store, settings):
    with stub_model() as stub:
        url = stub.url  # a port nobody listens on once the stub stops
    settings.A2A_HANDLER = LLM
    settings.A2A_LLM_BASE_URL = url
    settings.A2A_LLM_MODEL = "m"
    settings.A2A_LLM_MAX_RETRIES = 0
    task = send_direct("x")
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["parts"][0]["text"].startswith(f"Cannot reach the model endpoint {url}")


def test_a_non_json_answer_fails_clearly(model):
    model.queue(Reply(200, "<html>proxy login</html>", {"Content-Type": "text/html"}))
    task = send_direct("x")
    assert task["status"]["state"] == "failed"
    assert "not JSON" in task["status"]["message"]["parts"][0]["text"]


def test_provider_error_and_retry_after_parsing():
    def response(status, **kw):
        return httpx.Response(status, request=httpx.Request("POST", "http://x"), **kw)

    anthropic = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert provider_error(response(529, json=anthropic)) == "Overloaded (overloaded_error)"
    assert provider_error(response(500, text="upstream crashed")) == "upstream crashed"
    assert provider_error(response(502, text="")) == "Bad Gateway"
    assert len(provider_error(response(500, text="x" * 2000))) == 501
    assert retry_after(response(429, headers={"Retry-After": "2"})) == 2.0
    assert retry_after(response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0  # past
    soon = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 58 <= retry_after(response(429, headers={"Retry-After": soon})) <= 60
    assert retry_after(response(429)) is None


# --- Anthropic style --------------------------------------------------------------------


def test_anthropic_style(model, settings, skills_dir):
    settings.A2A_LLM_STYLE = "anthropic"
    model.queue(anthropic_reply("Résumé.", input_tokens=20, output_tokens=4))
    task = send_direct(v03_message("Texte", metadata={"skill": "summarize"}))
    assert task["status"]["state"] == "completed", task["status"]
    assert task["artifacts"][0]["parts"][0]["text"] == "Résumé."
    assert task["metadata"]["llm"]["usage"] == {"inputTokens": 20, "outputTokens": 4, "totalTokens": 24}
    assert task["metadata"]["llm"]["style"] == "anthropic"
    [seen] = model.requests
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == "sk-test"
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in seen.headers
    assert seen.body["max_tokens"] == 4096
    assert "# Skill: Summarize" in seen.body["system"]
    assert seen.body["messages"] == [{"role": "user", "content": "Texte"}]


def test_anthropic_turns_alternate_and_start_with_the_user():
    client = LLMClient(base_url="http://x/v1", model="m", style="anthropic", max_tokens=50)
    body = client.body(
        "sys",
        [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}, {"role": "user", "content": "c"}],
    )
    assert body["max_tokens"] == 50
    assert body["messages"] == [
        {"role": "user", "content": "(continuing our conversation)"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b\n\nc"},
    ]
    assert LLMClient(base_url="http://x/v1/messages", model="m", style="anthropic").endpoint() == "http://x/v1/messages"


# --- Usage across turns, the result type -------------------------------------------------------


def test_usage_adds_up_over_the_turns_of_a_task(settings):
    with stub_model() as stub:
        settings.A2A_LLM_BASE_URL = stub.url
        settings.A2A_LLM_MODEL = "m"
        stub.queue(openai_reply("second answer", prompt_tokens=30, completion_tokens=5))
        request = HandlerRequest(
            message={"role": "user", "parts": [{"kind": "text", "text": "more"}]},
            task_id="t1",
            context_id="",
            metadata={"llm": {"usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}}},
        )
        result = asyncio.run(LLMHandler()(request))
    assert isinstance(result, Result)
    assert result.metadata["llm"]["usage"] == {"inputTokens": 40, "outputTokens": 7, "totalTokens": 47}
    # the answer, whole before its first chunk was saved, goes with the completion
    assert [(a["name"], a["parts"]) for a in to_artifacts(result)] == [
        ("answer", [{"kind": "text", "text": "second answer"}])
    ]


# --- No configuration, no network ------------------------------------------------------------


def test_the_default_needs_no_network(use_store, settings, monkeypatch):
    assert DEFAULTS["A2A_HANDLER"] == "a2a.handlers.echo"
    assert DEFAULTS["A2A_LLM_BASE_URL"] == ""

    async def no_network(*args, **kwargs):
        raise AssertionError("the network was used")

    monkeypatch.setattr(httpx.AsyncClient, "send", no_network)
    assert send_direct("hi")["artifacts"][0]["parts"][0]["text"] == "echo: hi"
    settings.A2A_HANDLER = LLM  # chosen but not configured: fails clearly, offline
    task = send_direct("hi")
    assert task["status"]["state"] == "failed"
    assert "set A2A_LLM_BASE_URL and A2A_LLM_MODEL" in task["status"]["message"]["parts"][0]["text"]


# --- Skills: parsing, the card ---------------------------------------------------------------


def test_parse_skill_front_matter_and_body(tmp_path):
    text = textwrap.dedent(
        """\
        ---
        name: pdf-tools
        description: >
          Reads PDFs
          and fills forms.
        tags: pdf, forms
        ---
        # PDF tools

        Use the text layer first.
        """
    )
    skill = parse_skill(text, tmp_path / "SKILL.md")
    assert skill.id == "pdf-tools"
    assert skill.description == "Reads PDFs and fills forms."
    assert skill.tags == ("pdf", "forms")
    assert skill.instructions == "# PDF tools\n\nUse the text layer first."
    assert skill.card_entry() == {
        "id": "pdf-tools",
        "name": "pdf-tools",
        "description": "Reads PDFs and fills forms.",
        "tags": ["pdf", "forms"],
    }


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("no front matter", "no front matter"),
        ("---\nname: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "key: value"),
        ("---\nname: has spaces\ndescription: d\n---\n", "'name' must be the skill's id"),
        ("---\nname: ok\n---\n", "'description' is required"),
        ("---\nname: ok\ndescription: d\ntags: {a: 1}\n---\n", "'tags' must be a list"),
    ],
)
def test_parse_skill_errors(tmp_path, text, error):
    with pytest.raises(SkillError, match=error):
        parse_skill(text, tmp_path / "SKILL.md")


def test_html_comments_and_blank_lines_may_come_before_the_front_matter(tmp_path):
    """A file that names its path in a comment first (as an example copied from a page
    does) loads; the comment is not part of the instructions, and a comment after the
    first line of text still leaves a file without front matter."""
    preamble = "\ufeff<!-- skills/summarize/SKILL.md -->\n\n<!-- (c) us -->\n"
    text = preamble + "---\nname: summarize\ndescription: d\n---\nShort.\n"
    skill = parse_skill(text, tmp_path / "SKILL.md")
    assert (skill.id, skill.instructions) == ("summarize", "Short.")
    with pytest.raises(SkillError, match="no front matter"):
        parse_skill("# Title\n<!-- x -->\n---\nname: s\ndescription: d\n---\n", tmp_path / "SKILL.md")
    with pytest.raises(SkillError, match="no front matter"):
        parse_skill("<!-- never closed\n---\nname: s\ndescription: d\n---\n", tmp_path / "SKILL.md")


def test_scan_reports_bad_and_duplicate_skills(tmp_path):
    write_skill(tmp_path, "good")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_text("nothing here")
    dup = write_skill(tmp_path, "zz-dup")
    dup.write_text(dup.read_text().replace("name: zz-dup", "name: good"))
    skills, problems = scan(tmp_path)
    assert [s.id for s in skills] == ["good"]
    assert len(problems) == 2
    assert "no front matter" in problems[0] and "already used" in problems[1]


def test_card_lists_setting_skills_then_directory_skills(skills_dir, settings, client):
    settings.A2A_SKILLS = [{"id": "echo", "name": "Echo", "description": "Echoes.", "tags": ["demo"]}]
    card = client.get("/.well-known/agent-card.json").json()
    assert [s["id"] for s in card["skills"]] == ["echo", "summarize", "translate"]
    assert card["skills"][1] == {
        "id": "summarize",
        "name": "Summarize",
        "description": "Summarizes a text.",
        "tags": ["text", "summary"],
        "examples": ["Summarize: ..."],
    }
    settings.A2A_SKILLS_ENABLED = "translate"  # as the environment variable gives it
    assert [s["id"] for s in card_skills()] == ["echo", "translate"]


def test_edited_skill_files_are_picked_up(skills_dir):
    assert "new-one" not in [s["id"] for s in card_skills()]
    write_skill(skills_dir, "new-one")
    assert "new-one" in [s["id"] for s in card_skills()]


def test_requested_skill():
    assert requested_skill({"metadata": {"skill": "a"}}, {"skill": "b"}) == "a"
    assert requested_skill({}, {"skillId": "b"}) == "b"
    assert requested_skill({"metadata": {"skill": ""}}, None) is None


# --- System checks ---------------------------------------------------------------------------


def check_ids() -> set[str]:
    return {message.id for message in run_checks()}


@pytest.mark.parametrize(
    ("name", "value", "code"),
    [
        ("A2A_LLM_STYLE", "cohere", "a2a.E010"),
        ("A2A_LLM_BASE_URL", "api.openai.com/v1", "a2a.E011"),
        ("A2A_LLM_MODEL", 42, "a2a.E013"),
        ("A2A_LLM_TIMEOUT", 0, "a2a.E002"),
        ("A2A_LLM_MAX_RETRIES", -1, "a2a.E002"),
        ("A2A_LLM_MAX_RETRIES", 1.5, "a2a.E002"),
        ("A2A_LLM_RETRY_BACKOFF", "fast", "a2a.E002"),
        ("A2A_LLM_MAX_TOKENS", -5, "a2a.E002"),
        ("A2A_LLM_CONTEXT_TASKS", None, "a2a.E002"),
        ("A2A_STALE_AFTER", 0, "a2a.E002"),
        ("A2A_HEALTH_TIMEOUT", "1s", "a2a.E002"),
        ("A2A_CARD_MAX_AGE", -1, "a2a.E002"),
        ("A2A_OUTPUT_MODES", [], "a2a.E030"),
        ("A2A_INPUT_MODES", ["text"], "a2a.E030"),
        ("A2A_AGENT_NAME", " ", "a2a.E031"),
        ("A2A_SKILLS_DIR", "/no/such/skills/dir", "a2a.E020"),
        ("A2A_SKILLS_DIR", 42, "a2a.E020"),
        ("A2A_SKILLS_ENABLED", 42, "a2a.E022"),
        ("A2A_SKILLS_ENABLED", ["x"], "a2a.E023"),
    ],
)
def test_checks_report_bad_settings(settings, name, value, code):
    assert code not in check_ids()
    setattr(settings, name, value)
    assert code in check_ids()


def test_checks_for_the_llm_handler(settings):
    settings.A2A_HANDLER = LLM
    assert "a2a.E012" in check_ids()
    settings.A2A_LLM_BASE_URL = "https://api.example.com/v1"
    settings.A2A_LLM_MODEL = "m"
    ids = check_ids()
    assert "a2a.E012" not in ids and "a2a.W010" in ids
    settings.A2A_LLM_BASE_URL = "http://127.0.0.1:11434/v1"  # a local server needs no key
    assert "a2a.W010" not in check_ids()


def test_checks_for_the_skills_directory(settings, tmp_path):
    settings.A2A_SKILLS_DIR = str(tmp_path)
    assert "a2a.W020" in check_ids()
    write_skill(tmp_path, "ok")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("---\nname: broken\n---\n")
    settings.A2A_SKILLS = [{"id": "ok", "name": "OK", "description": "", "tags": []}]
    messages = {m.id: m.msg for m in run_checks()}
    assert "'description' is required" in messages["a2a.E021"]
    assert "a2a.W021" in messages and "a2a.W020" not in messages
    settings.A2A_SKILLS_ENABLED = ["ok"]
    assert "a2a.E023" not in check_ids()
