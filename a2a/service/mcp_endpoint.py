"""Whether an agent serves MCP, and where (the endpoint itself is :mod:`a2a.mcp`): what
the discovery surfaces (the card, the catalogs, the agent page, ``a2a_agents``) name."""

from __future__ import annotations

from typing import Any

from a2a.agents import Agent
from a2a.conf import a2a_settings


def mcp_enabled(agent: Agent) -> bool:
    """``A2A_MCP``, or the agent's own ``"MCP"`` option of ``A2A_AGENTS``."""
    return bool(agent.settings.MCP)


def mcp_url(agent: Agent, request: Any = None) -> str | None:
    """The absolute URL of ``agent``'s MCP endpoint (``A2A_PUBLIC_URL``, else the request's
    scheme and host; the path alone with neither); None when the agent does not serve MCP."""
    if not mcp_enabled(agent):
        return None
    path = agent.path("mcp")
    if a2a_settings.PUBLIC_URL:
        return a2a_settings.PUBLIC_URL.rstrip("/") + path
    return request.build_absolute_uri(path) if request is not None else path
