"""The project's agents: the default one (today's single-agent settings) and each one
``A2A_AGENTS`` names, in the shape of ``CACHES``::

    A2A_AGENTS = {
        "billing": {
            "AGENT_NAME": "Billing",
            "HANDLER": "myproject.billing.handle",
            "SKILLS_DIR": "billing_skills",
            "LISTED": False,               # optional: left out of the catalogs
        },
    }

An agent's option keys are the per-agent settings' names without the ``A2A_`` prefix
(:data:`PER_AGENT`), converted with the same declaration as the project-wide setting;
an agent reads every setting it does not name from the project (:class:`AgentSettings`).
An agent's tasks live in its own ``TASK_STORE`` option (any form of the project's
setting, built once per distinct store: ``stores.backends.task_stores.shared``), else in
the project's ``TASK_STORE``, each agent's apart from the others' (its name is part of
their scope key, :func:`stores.scope.scope_key`). Whatever finds a task by its id finds
its store from its agent: :func:`store_of` the agent's name (which travels with the id:
the executor's dispatch, the queue's job, the runner) or the task's ``_agent``.
The registry is built once and forgotten when a test overrides a setting. The checks of
``A2A_AGENTS`` (a2a/ops/checks/agents.py) report :func:`problems`, each naming its agent.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.urls import reverse

from a2a.conf import SETTINGS, a2a_settings
from a2a.setting import Setting, SettingError
from stores.backends import get_task_store, task_stores
from stores.base import TaskStore
from stores.scope import (
    DEFAULT_AGENT,  # the name of the agent of the single-agent settings
    task_agent,
)

#: The URL namespace of the other agents' routes (``a2a.urls.agents``).
AGENTS_NAMESPACE = "a2a_agents"

#: The settings an agent may set for itself (``A2A_AGENTS`` option keys, ``A2A_`` dropped).
PER_AGENT: tuple[str, ...] = (
    "AGENT_NAME",
    "AGENT_DESCRIPTION",
    "AGENT_VERSION",
    "PROVIDER_ORGANIZATION",
    "PROVIDER_URL",
    "DOCUMENTATION_URL",
    "SKILLS",
    "SKILLS_DIR",
    "SKILLS_ENABLED",
    "INPUT_MODES",
    "OUTPUT_MODES",
    "HANDLER",
    "AUTHENTICATION_CLASSES",
    "EXTENDED_CARD",
    "CARD_SIGNING_KEY",
    "CARD_SIGNING_KID",
    "CARD_SIGNING_JKU",
    "CARD_SIGNING_PREVIOUS_KEYS",
    "LLM_BASE_URL",
    "LLM_MODEL",
    "LLM_API_KEY",
    "LLM_STYLE",
    "LLM_TIMEOUT",
    "LLM_MAX_RETRIES",
    "LLM_RETRY_BACKOFF",
    "LLM_MAX_TOKENS",
    "LLM_SYSTEM_PROMPT",
    "LLM_CONTEXT_TASKS",
    "LLM_TOOLS",
    "LLM_REMOTE_TOOLS",
    "LLM_MAX_ROUNDS",
    "MCP",
)

#: The options only an agent has (docs/agents.md): whether the discovery catalogs name the
#: agent, and where its tasks live (None: the project's TASK_STORE).
AGENT_ONLY: dict[str, Setting] = {
    "LISTED": Setting(bool, True, check_id="a2a.E110"),
    "TASK_STORE": Setting(object, None, check_id="a2a.E110"),
}

#: Every option key an ``A2A_AGENTS`` entry may have -> its declaration.
OPTIONS: dict[str, Setting] = {**{key: SETTINGS[f"A2A_{key}"] for key in PER_AGENT}, **AGENT_ONLY}

#: What an agent's name may be: it is a URL path segment and part of its tasks' scope key.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class UnknownAgent(LookupError):
    """No agent of this name is configured."""


class AgentSettings:
    """One agent's view of the settings: ``.HANDLER`` reads like ``a2a_settings.HANDLER``,
    the agent's own value when its ``A2A_AGENTS`` entry names one, else the project's.
    An agent other than the default one is named after its key unless it sets ``AGENT_NAME``."""

    def __init__(self, name: str, own: dict[str, Any]) -> None:
        self._name = name
        self._own = own

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        own = self._own.get(attr)
        if own is not None or (attr in self._own and attr != "AGENT_NAME"):  # AGENT_NAME None: the derived name
            return own
        if attr == "AGENT_NAME" and self._name != DEFAULT_AGENT:
            return self._name
        return getattr(a2a_settings, attr)

    def get(self, name: str) -> Any:
        """The value of the setting ``name`` (``"A2A_HANDLER"``) for this agent."""
        return getattr(self, name[4:] if name.startswith("A2A_") else name)

    def own(self, key: str) -> bool:
        """Whether the agent sets ``key`` (``"HANDLER"``) itself."""
        return key in self._own


@dataclass(frozen=True)
class Agent:
    """One agent of the project: its name (:data:`DEFAULT_AGENT` for the project's
    single-agent settings), its settings (:class:`AgentSettings`) and whether the
    catalogs list it."""

    name: str
    settings: Any
    listed: bool = True
    #: The agent's own ``TASK_STORE`` option (None: the project's store); a dict is not hashable.
    task_store: Any = field(default=None, hash=False, compare=False)

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_AGENT

    @property
    def scope(self) -> str:
        """What the stores' scope key carries for this agent: "" for the default agent
        (its tasks keep the key they had before agents existed), else its name."""
        return "" if self.is_default else self.name

    def path(self, route: str) -> str:
        """The path of one of the agent's routes (``"jsonrpc"``, ``"rest"``, ``"agent-card"``,
        ``"browse:stream"``...): ``a2a.urls``'s for the default agent, ``a2a.urls.agents``'s
        (``<prefix>/<name>/...``) for another."""
        if self.is_default:
            return reverse(f"a2a:{route}")
        return reverse(f"{AGENTS_NAMESPACE}:{route}", kwargs={"agent": self.name})

    @property
    def store(self) -> TaskStore:
        """Where the agent's tasks live: its own ``TASK_STORE`` option's store (built once
        for every agent naming it), else the project's ``TASK_STORE`` (each agent's tasks
        apart by their scope key)."""
        return get_task_store() if self.task_store is None else task_stores.shared(self.task_store)


def problems() -> list[SettingError]:
    """Why ``A2A_AGENTS`` cannot be read, each message naming its agent (and option):
    not a dict of dicts, a name that cannot be a URL segment, an unknown option, or an
    option's value that does not fit the project-wide setting's declaration."""
    configured = getattr(settings, "A2A_AGENTS", None) or {}
    if not isinstance(configured, dict):
        return [SettingError(f"A2A_AGENTS must be a dict of agent name -> options, not {configured!r}.", "a2a.E110")]
    found: list[SettingError] = []
    for name, options in configured.items():
        where = f"A2A_AGENTS[{name!r}]"
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            found.append(
                SettingError(
                    f"{where}: an agent's name must be 1 to 64 letters, digits, '_' or '-' (it is a URL segment).",
                    "a2a.E110",
                )
            )
            continue
        if not isinstance(options, dict):
            found.append(SettingError(f"{where} must be a dict of options, not {options!r}.", "a2a.E110"))
            continue
        for key, value in options.items():
            if key not in OPTIONS:
                found.append(
                    SettingError(f"{where}: unknown option {key!r} (known: {', '.join(sorted(OPTIONS))}).", "a2a.E110")
                )
                continue
            if key == "TASK_STORE" and name == DEFAULT_AGENT:
                found.append(SettingError(f"{where}: the default agent's tasks live in TASK_STORE itself.", "a2a.E110"))
                continue
            try:
                OPTIONS[key].validate(f"{where}[{key!r}]", value)
                if key == "TASK_STORE" and value is not None and not isinstance(value, TaskStore):
                    task_stores.parse(value)
            except SettingError as exc:
                found.append(exc)
            except ImproperlyConfigured as exc:  # a TASK_STORE in none of the setting's forms
                found.append(SettingError(f"{where}['TASK_STORE']: {exc}", "a2a.E110"))
    return found


def _build_agent(name: str, options: dict[str, Any]) -> Agent:
    where = f"A2A_AGENTS[{name!r}]"
    own = {key: OPTIONS[key].convert(f"{where}[{key!r}]", value) for key, value in options.items() if key in PER_AGENT}
    listed = AGENT_ONLY["LISTED"].convert(f"{where}['LISTED']", options.get("LISTED", True))
    return Agent(name, AgentSettings(name, own), listed=listed, task_store=options.get("TASK_STORE"))


class _Registry:
    """The agents, built once from the settings; forgotten when a setting changes."""

    def __init__(self) -> None:
        self._agents: dict[str, Agent] | None = None
        self._lock = threading.Lock()

    def agents(self) -> dict[str, Agent]:
        built = self._agents
        if built is None:
            with self._lock:
                if self._agents is None:
                    self._agents = self._build()
                built = self._agents
        return built

    def _build(self) -> dict[str, Agent]:
        found = problems()
        if found:
            raise found[0]
        configured: dict[str, dict[str, Any]] = dict(getattr(settings, "A2A_AGENTS", None) or {})
        built = {DEFAULT_AGENT: _build_agent(DEFAULT_AGENT, configured.pop(DEFAULT_AGENT, {}))}
        built.update({name: _build_agent(name, options) for name, options in configured.items()})
        return built

    def reset(self, *, setting: str = "", **kwargs: Any) -> None:
        if setting == "A2A_AGENTS":
            with self._lock:
                self._agents = None
            task_stores.forget_shared()  # the agents' own stores: the next use builds them again


_registry = _Registry()
setting_changed.connect(_registry.reset, weak=False)


def agents() -> dict[str, Agent]:
    """Every agent of the project, the default one first."""
    return _registry.agents()


def get_agent(name: str) -> Agent:
    """The agent named ``name``; :class:`UnknownAgent` when none is configured."""
    try:
        return agents()[name]
    except KeyError:
        raise UnknownAgent(f"No agent named {name!r} (A2A_AGENTS names: {', '.join(agents())}).") from None


def default_agent() -> Agent:
    """The agent of the project's single-agent settings."""
    return agents()[DEFAULT_AGENT]


def store_of(name: str | None) -> TaskStore:
    """The store of the tasks of the agent named ``name`` (None, "" or "default": the
    default agent, whose store is the project's, found without a look-up); the name a
    task id travels with, or a task's ``_agent``. :class:`UnknownAgent` when none is
    configured."""
    if not name or name == DEFAULT_AGENT:
        return get_task_store()
    return get_agent(name).store


def task_stores_in_use() -> list[TaskStore]:
    """Every distinct store the agents' tasks live in, the project's first (what the
    lease reaper scans)."""
    found = [get_task_store()]
    for agent in agents().values():
        if agent.task_store is not None and all(agent.store is not store for store in found):
            found.append(agent.store)
    return found


def agent_of(task: dict[str, Any]) -> Agent:
    """The agent that created ``task`` (its ``_agent``; none: the default agent);
    :class:`UnknownAgent` when that agent is no longer configured."""
    name = task_agent(task)
    return get_agent(name) if name else default_agent()
