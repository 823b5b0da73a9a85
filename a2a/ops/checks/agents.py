"""The check of ``A2A_AGENTS`` (``a2a.E110``, ``W110``): the setting's shape, then each agent's
settings checked as the project's are, and each agent's own task store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning
from django.core.exceptions import ImproperlyConfigured
from django.urls import NoReverseMatch

from a2a.agents import DEFAULT_AGENT, Agent, agents, get_agent
from a2a.agents import problems as agent_problems
from a2a.ops.checks import auth, card, handler, llm, signing, skills
from a2a.ops.checks.registry import BODIES, Messages, concern
from a2a.setting import SettingError
from stores.backends import get_task_store, own_check

#: The checks of the settings an agent may set for itself (a2a.agents.PER_AGENT): each body takes the agent.
_PER_AGENT_CHECKS = (
    handler.check_handler,
    card.check_card,
    auth.check_authentication,
    llm.check_llm,
    skills.check_skills,
    signing.check_card_signing,
)


@concern("A2A_AGENTS")
def check_agents() -> Messages:
    """``a2a.E110``: ``A2A_AGENTS`` is not a dict of agent name -> options, a name is not a
    URL segment, an option is unknown or does not fit its setting's declaration; then each
    agent's settings checked as the project's are. Every message names its agent."""
    if not isinstance(getattr(settings, "A2A_AGENTS", None) or {}, dict):
        return []  # the declaration's own message says so
    found = agent_problems()
    if found:
        return [Error(str(problem), id=problem.check_id) for problem in found]
    bodies = [BODIES[check.__name__] for check in _PER_AGENT_CHECKS]
    project = {message.msg for body in bodies for message in _quietly(body)}
    messages: Messages = []
    for agent in agents().values():
        for body in bodies:
            messages += [_naming(m, agent) for m in _quietly(body, agent) if m.msg not in project]
    return messages + agent_stores() + _unrouted()


def agent_stores(**kwargs: Any) -> Messages:
    """``a2a.E110``: an agent's own ``TASK_STORE`` cannot be built; then what each distinct
    store of the agents reports of itself (its ``check(**kwargs)``), naming the first agent
    that uses it. The project's store is ``stores.E001``'s (and start-up's)."""
    try:
        checked = [get_task_store()]
    except ImproperlyConfigured:
        checked = []
    messages: Messages = []
    for agent in agents().values():
        if agent.task_store is None:
            continue
        try:
            store = agent.store
        except ImproperlyConfigured as exc:
            messages.append(Error(f"A2A_AGENTS[{agent.name!r}]['TASK_STORE']: {exc}", id="a2a.E110"))
            continue
        if all(store is not other for other in checked):
            checked.append(store)
            messages += [_naming(m, agent) for m in own_check(store, **kwargs)]
    return messages


def _unrouted() -> Messages:
    """``a2a.W110``: agents that no route serves (``a2a.urls.agents`` is not included)."""
    names = [name for name in agents() if name != DEFAULT_AGENT]
    try:
        if names:
            get_agent(names[0]).path("jsonrpc")
    except NoReverseMatch:
        return [
            Warning(
                f"A2A_AGENTS names {', '.join(map(repr, names))}, but no URL pattern serves them (only gRPC does).",
                hint='Add path("agents/", include("a2a.urls.agents")) to the root URLconf.',
                id="a2a.W110",
            )
        ]
    return []


def _quietly(body: Callable[..., Messages], agent: Agent | None = None) -> Messages:
    """``body``'s messages; none when a setting it reads is of the wrong type (its own check says so)."""
    try:
        return body(agent)
    except SettingError:
        return []


def _naming(message: CheckMessage, agent: Agent) -> CheckMessage:
    """``message`` about one agent's settings, saying which agent."""
    return CheckMessage(message.level, f"A2A_AGENTS[{agent.name!r}]: {message.msg}", hint=message.hint, id=message.id)
