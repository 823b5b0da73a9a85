"""System checks for the A2A settings: caught by ``manage.py check`` and at start-up.

One module per concern, each check declared with :func:`~a2a.ops.checks.registry.concern`
(registry.py, the one place checks are registered) beside the settings it reports on; this
package imports every one of them (a2a/apps.py imports the package), so a check module
missing here is a check that never runs. A new setting is named in its feature's check;
a new concern gets a module of its own, imported here. :mod:`a2a.ops.checks.startup` is
the gate a server starts through."""

from __future__ import annotations

from a2a.ops.checks.agents import agent_stores, check_agents
from a2a.ops.checks.auth import check_authentication, check_catalogs
from a2a.ops.checks.card import check_card
from a2a.ops.checks.events import check_events
from a2a.ops.checks.files import check_files
from a2a.ops.checks.grpc import GRPC_MODULES, check_grpc
from a2a.ops.checks.handler import check_handler
from a2a.ops.checks.limits import check_limits
from a2a.ops.checks.llm import check_llm
from a2a.ops.checks.long_poll import check_long_poll
from a2a.ops.checks.mcp import check_mcp
from a2a.ops.checks.push import check_push
from a2a.ops.checks.registry import BODIES, OWNERS, Messages, concern
from a2a.ops.checks.remote import check_remote_agents
from a2a.ops.checks.retention import check_retention
from a2a.ops.checks.signing import check_card_signing
from a2a.ops.checks.skills import check_skills
from a2a.ops.checks.startup import describe, startup_errors
from a2a.ops.checks.workers import check_deployment, check_executor

__all__ = [
    "BODIES",
    "GRPC_MODULES",
    "OWNERS",
    "Messages",
    "agent_stores",
    "check_agents",
    "check_authentication",
    "check_card",
    "check_card_signing",
    "check_catalogs",
    "check_deployment",
    "check_events",
    "check_executor",
    "check_files",
    "check_grpc",
    "check_handler",
    "check_limits",
    "check_llm",
    "check_long_poll",
    "check_mcp",
    "check_push",
    "check_remote_agents",
    "check_retention",
    "check_skills",
    "concern",
    "describe",
    "startup_errors",
]
