"""One agent per framework the example site serves when that framework's extra is
installed (``settings.A2A_AGENTS``; :func:`installed` says which): a PydanticAI agent, a
LangGraph graph and an OpenAI Agents SDK agent. Without a key for a real model (the
setting each module names), each runs on a deterministic model that streams a short
answer word by word, so ``make run`` works offline."""

from __future__ import annotations

import importlib.util
from typing import Any

#: The site's framework agents: the name each is served under, the package its framework
#: is, and the agent object's dotted path.
FRAMEWORKS = {
    "pydantic-ai": ("pydantic_ai", "toolnexus_site.framework_agents.pydantic_ai.agent"),
    "langgraph": ("langgraph", "toolnexus_site.framework_agents.langgraph.graph"),
    "openai-agents": ("agents", "toolnexus_site.framework_agents.openai_agents.agent"),
}


#: Seconds between the words a deterministic model streams, as a real model's come.
WORD_DELAY = 0.02


def installed() -> dict[str, dict[str, Any]]:
    """The ``A2A_AGENTS`` entries of the frameworks whose package is installed (looked
    up, not imported: the settings stay cheap to load; the adapter imports it on the
    first task, and ``manage.py check`` reports a broken install naming the extra)."""
    return {
        name: {"AGENT_NAME": f"toolnexus-{name}", "HANDLER": handler}
        for name, (package, handler) in FRAMEWORKS.items()
        if importlib.util.find_spec(package) is not None
    }


def offline_answer(text: str, framework: str) -> str:
    """What a deterministic model answers: the message back, and how to use a real model."""
    said = " ".join(text.split())[:200] or "nothing"
    return f"You said: {said}. ({framework}, on a deterministic model: docs/frameworks.md says how to use a real one.)"
