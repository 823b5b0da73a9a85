"""The test kit's own task store: what ``a2a_client`` talks to never lands in the
project's real one (a file directory or a database an author also browses in the admin).

For the test, ``TASK_STORE`` becomes a fresh in-memory store, and so does every
agent's own ``TASK_STORE`` option in ``A2A_AGENTS``. A test that chose a store itself
(it set ``TASK_STORE`` or ``A2A_AGENTS`` before asking for the client) keeps its
choice, and one marked ``@pytest.mark.a2a_project_store`` talks to the project's.
"""

from __future__ import annotations

import copy
import os
from importlib import import_module
from typing import Any

from django.conf import ENVIRONMENT_VARIABLE, settings

from stores.memory import MemoryTaskStore

#: The marker of a test that wants the project's real stores.
PROJECT_STORE_MARKER = "a2a_project_store"
#: What the marker says (registered by the plugin).
PROJECT_STORE_MARKER_DOC = (
    f"{PROJECT_STORE_MARKER}: the a2a_client fixture talks to the project's own TASK_STORE "
    "(and agents' stores), not to a fresh in-memory store of the test's own."
)
_UNSET: Any = object()


def _from_settings_module(name: str) -> Any:
    """``name`` as the settings module left it (``_UNSET`` when it cannot be told: the
    settings were configured in code, not by ``DJANGO_SETTINGS_MODULE``)."""
    # Under override_settings, settings.SETTINGS_MODULE is None: the environment names it.
    module_name = getattr(settings, "SETTINGS_MODULE", None) or os.environ.get(ENVIRONMENT_VARIABLE)
    if not module_name:
        return _UNSET
    return getattr(import_module(module_name), name, None)


def _chosen_by_the_test(name: str) -> bool:
    """Whether the test set ``name`` itself (its value is not the settings module's)."""
    configured = _from_settings_module(name)
    if configured is _UNSET:
        return False
    current = getattr(settings, name, None)
    return not (current is configured or current == configured)


def own_stores() -> dict[str, Any]:
    """The settings that give this test stores of its own: ``TASK_STORE`` (a fresh
    :class:`~stores.memory.MemoryTaskStore`) and ``A2A_AGENTS`` with each agent's own
    ``TASK_STORE`` as ``"memory"``; none of those the test set itself."""
    overrides: dict[str, Any] = {}
    if not _chosen_by_the_test("TASK_STORE"):
        overrides["TASK_STORE"] = MemoryTaskStore()
    agents = getattr(settings, "A2A_AGENTS", None)
    if isinstance(agents, dict) and not _chosen_by_the_test("A2A_AGENTS"):
        own = {name for name, options in agents.items() if isinstance(options, dict) and options.get("TASK_STORE")}
        if own:
            agents = copy.copy(agents)
            for name in own:
                agents[name] = {**agents[name], "TASK_STORE": "memory"}
            overrides["A2A_AGENTS"] = agents
    return overrides
