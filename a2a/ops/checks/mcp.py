"""The check of the MCP endpoint's settings (``a2a.E140``)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.checks import Error

from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern


def _not_urls(values: list[object]) -> list[object]:
    return [v for v in values if not isinstance(v, str) or urlsplit(v).scheme not in ("http", "https")]


@concern("A2A_MCP", "A2A_MCP_ALLOWED_ORIGINS", "A2A_MCP_AUTHORIZATION_SERVERS", "A2A_MCP_STATE_MAX_AGE")
def check_mcp() -> Messages:
    """``a2a.E140``: an allowed origin or an authorization server that is not an http(s) URL
    (every request from such an origin would be refused; no client could find the server)."""
    found: Messages = []
    for name in ("MCP_ALLOWED_ORIGINS", "MCP_AUTHORIZATION_SERVERS"):
        bad = _not_urls(list(getattr(a2a_settings, name)))
        if bad:
            found.append(
                Error(
                    f"A2A_{name} holds {bad!r}, which are not http(s) URLs.",
                    hint="e.g. https://example.com",
                    id="a2a.E140",
                )
            )
    return found
