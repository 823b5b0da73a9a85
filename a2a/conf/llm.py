"""The model-backed handler (a2a/handlers/llm.py): the model API, retries, prompts, tools."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = 'The model-backed handler (A2A_HANDLER = "a2a.handlers.llm.handle")'

DECLARED: dict[str, Setting] = {
    "A2A_LLM_BASE_URL": Setting(
        str,
        "",
        check_id="a2a.E013",
        doc='Base URL of the model API: an OpenAI-compatible one ("https://api.openai.com/v1", '
        '"http://127.0.0.1:11434/v1" for Ollama) or Anthropic\'s ("https://api.anthropic.com/v1"). Empty: '
        "the LLM handler is not configured (and nothing ever calls the network).",
    ),
    "A2A_LLM_MODEL": Setting(
        str,
        "",
        check_id="a2a.E013",
        doc='The model name the endpoint knows, e.g. "gpt-4o-mini" or "claude-sonnet-4-5".',
    ),
    "A2A_LLM_API_KEY": Setting(
        str,
        "",
        check_id="a2a.E013",
        secret=True,
        doc='The API key (sent as "Authorization: Bearer" or, Anthropic-style, "x-api-key"); from the '
        "environment variable of the same name. Empty sends none.",
    ),
    "A2A_LLM_STYLE": Setting(
        str,
        "openai",
        choices=("openai", "anthropic"),
        check_id="a2a.E010",
        doc='The wire format: "openai" (POST {base}/chat/completions) or "anthropic" (POST {base}/messages).',
    ),
    "A2A_LLM_TIMEOUT": Setting(float, 60.0, min=0.1, doc="Seconds one model request may take (connect, send, answer)."),
    "A2A_LLM_MAX_RETRIES": Setting(
        int, 2, min=0, doc="Retries after a connection error, a timeout, 408, 429 or 5xx (0: none)."
    ),
    "A2A_LLM_RETRY_BACKOFF": Setting(
        float,
        1.0,
        min=0,
        doc="Seconds before the first retry, doubled for each further one (with jitter, at most 30 s); a "
        "Retry-After header wins.",
    ),
    "A2A_LLM_MAX_TOKENS": Setting(
        int,
        0,
        min=0,
        doc="max_tokens of each answer; 0 sends none (OpenAI style) or 4096 (Anthropic requires one).",
    ),
    "A2A_LLM_SYSTEM_PROMPT": Setting(
        str,
        "",
        check_id="a2a.E013",
        doc="The system prompt; empty: one made from A2A_AGENT_NAME and A2A_AGENT_DESCRIPTION. The targeted "
        "skill's instructions are appended to it.",
    ),
    "A2A_LLM_CONTEXT_TASKS": Setting(
        int, 10, min=0, doc="How many earlier tasks of the same contextId the model sees as conversation (0: none)."
    ),
    "A2A_LLM_TOOLS": Setting(
        list,
        [],
        doc="Dotted paths of the project's Python functions the model may call as tools (the name, the "
        "docstring and the type hints make the schema; a sync function runs off the event loop; "
        "docs/handlers.md). Checked: a2a.E015 (every path names a function).",
    ),
    "A2A_LLM_REMOTE_TOOLS": Setting(
        list,
        [],
        doc="Names of A2A_REMOTE_AGENTS entries whose skills the model may call as tools (one tool per remote "
        "skill, run through delegation; docs/handlers.md). Empty: no tools. Checked: a2a.E014 (every name is an "
        "A2A_REMOTE_AGENTS entry).",
    ),
    "A2A_LLM_MAX_ROUNDS": Setting(
        int,
        5,
        min=1,
        doc="With tools, the most model requests one turn of a task makes (each may call tools, whose answers "
        "the next one reads); a model still calling tools in the last one fails the task.",
    ),
}
