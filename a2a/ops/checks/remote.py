"""The check of ``A2A_REMOTE_AGENTS`` (``a2a.E100``)."""

from __future__ import annotations

from django.core.checks import Error

from a2a.client import remote
from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern


@concern("A2A_REMOTE_AGENTS")
def check_remote_agents() -> Messages:
    """``a2a.E100``: an ``A2A_REMOTE_AGENTS`` entry of the wrong shape (a URL that is not
    absolute http(s), an unknown key or credential type, a signature required without keys)."""
    return [
        Error(problem, hint="See docs/client.md for the keys of an entry.", id="a2a.E100")
        for problem in remote.check_setting(a2a_settings.REMOTE_AGENTS)
    ]
