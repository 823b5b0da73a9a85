"""The check of the model-backed handler's settings (``a2a.E011``, ``E012``, ``E014``, ``W010``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.checks import Error, Warning

from a2a.agents import Agent
from a2a.conf import a2a_settings
from a2a.handlers import load_handler
from a2a.handlers.functions import unusable_tools
from a2a.handlers.llm import LLMHandler
from a2a.ops.checks.registry import Messages, concern, settings_of


def _loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("localhost", "127.0.0.1", "::1")


def _uses_llm(conf: Any) -> bool:
    try:
        return isinstance(load_handler(conf.HANDLER), LLMHandler)
    except Exception:
        return False  # check_handler reports it


@concern(
    "A2A_LLM_BASE_URL",
    "A2A_LLM_MODEL",
    "A2A_LLM_API_KEY",
    "A2A_LLM_STYLE",
    "A2A_LLM_TIMEOUT",
    "A2A_LLM_MAX_RETRIES",
    "A2A_LLM_RETRY_BACKOFF",
    "A2A_LLM_MAX_TOKENS",
    "A2A_LLM_SYSTEM_PROMPT",
    "A2A_LLM_CONTEXT_TASKS",
    "A2A_LLM_TOOLS",
    "A2A_LLM_REMOTE_TOOLS",
    "A2A_LLM_MAX_ROUNDS",
)
def check_llm(agent: Agent | None = None) -> Messages:
    """The model-backed handler: an absolute base URL (``a2a.E011``), tools that name
    ``A2A_REMOTE_AGENTS`` entries (``a2a.E014``) or functions (``a2a.E015``), and when it is
    the handler, a base URL, a model (``a2a.E012``) and a key for a remote one (``a2a.W010``)."""
    conf = settings_of(agent)
    if problem := unusable_tools(conf.LLM_TOOLS):
        return [Error(problem, id="a2a.E015")]
    unknown = [str(n) for n in conf.LLM_REMOTE_TOOLS if n not in (a2a_settings.REMOTE_AGENTS or {})]
    if unknown:
        known = ", ".join(sorted(a2a_settings.REMOTE_AGENTS or {})) or "none"
        return [
            Error(
                f"A2A_LLM_REMOTE_TOOLS names {', '.join(map(repr, unknown))}, not in A2A_REMOTE_AGENTS "
                f"(configured: {known}).",
                hint="Each name must be an entry of A2A_REMOTE_AGENTS (docs/client.md).",
                id="a2a.E014",
            )
        ]
    base_url = conf.LLM_BASE_URL
    if base_url and not base_url.startswith(("http://", "https://")):
        return [Error(f"A2A_LLM_BASE_URL must be an absolute http(s) URL, not {base_url!r}.", id="a2a.E011")]
    if not _uses_llm(conf):
        return []
    missing = [n for n in ("A2A_LLM_BASE_URL", "A2A_LLM_MODEL") if not conf.get(n)]
    if missing:
        return [
            Error(
                f"A2A_HANDLER is the LLM handler but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not set.",
                hint='e.g. A2A_LLM_BASE_URL="https://api.openai.com/v1", A2A_LLM_MODEL="gpt-4o-mini".',
                id="a2a.E012",
            )
        ]
    if not conf.LLM_API_KEY and not _loopback(base_url):
        return [
            Warning(
                f"A2A_LLM_API_KEY is empty, so requests to {base_url} carry no key.",
                hint="Set the A2A_LLM_API_KEY environment variable (a local model server needs none).",
                id="a2a.W010",
            )
        ]
    return []
