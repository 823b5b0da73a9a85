"""How the project finds a framework's agent: the object named in the settings is
recognised and served by its framework's adapter; a framework that is not installed is
a check error naming the extra; and nothing installed shadows this project's ``a2a``."""

from __future__ import annotations

import importlib.metadata
import sys
import tomllib
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

import a2a
from a2a.handlers import loading
from a2a.handlers.frameworks import FRAMEWORKS, as_handler, framework_of, missing_framework
from a2a.handlers.frameworks.langgraph import LangGraphHandler
from a2a.handlers.frameworks.openai_agents import OpenAIAgentsHandler
from a2a.handlers.frameworks.pydantic_ai import PydanticAIHandler
from tests.server import ROOT

MODULES = {
    "pydantic-ai": ("tests.frameworks.needs_pydantic_ai", "agent", "pydantic_ai", PydanticAIHandler),
    "langgraph": ("tests.frameworks.needs_langgraph", "graph", "langgraph", LangGraphHandler),
    "openai-agents": ("tests.frameworks.needs_openai_agents", "agent", "agents", OpenAIAgentsHandler),
}


@pytest.fixture(autouse=True)
def fresh_loader():
    loading.load_handler.cache_clear()
    yield
    loading.load_handler.cache_clear()


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.extra)
def test_each_framework_s_agent_is_served_by_its_adapter(framework):
    module, name, _, adapter = MODULES[framework.extra]
    handler = loading.load_handler(f"{module}.{name}")
    assert isinstance(handler, adapter) and framework_of(getattr(handler, "agent", None) or handler.graph)


def test_anything_else_is_left_as_it_is():
    assert as_handler(len) is len
    assert framework_of(object()) is None


def test_a_project_module_named_like_a_framework_is_not_taken_for_it(monkeypatch):
    class Agent:  # a project's own `agents.Agent`
        __module__ = "agents"

    monkeypatch.setitem(sys.modules, "a2a.handlers.frameworks.openai_agents", None)  # its adapter cannot load
    thing = Agent()
    assert as_handler(thing) is thing


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.extra)
def test_a_missing_framework_is_a_check_error_naming_the_extra(settings, monkeypatch, framework):
    module, name, top, _ = MODULES[framework.extra]
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.delitem(sys.modules, module, raising=False)
    settings.A2A_HANDLER = f"{module}.{name}"
    with pytest.raises(SystemCheckError) as raised:
        call_command("check", databases=[])
    assert f"needs {framework.name}, which is not installed" in str(raised.value)
    # The package is on no index: the hint installs the extra's requirements, pyproject.toml's.
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    install = "pip install " + " ".join(f'"{requirement}"' for requirement in extras[framework.extra])
    assert install in str(raised.value) and f"the {framework.extra} extra" in str(raised.value)
    assert "django-a2a-agent[" not in str(raised.value)


def test_an_agent_in_a2a_agents_is_checked_the_same_way(settings, monkeypatch):
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "tests.frameworks.needs_pydantic_ai", raising=False)
    settings.A2A_AGENTS = {"helper": {"HANDLER": "tests.frameworks.needs_pydantic_ai.agent"}}
    with pytest.raises(SystemCheckError, match=r"A2A_AGENTS\['helper'\].*needs PydanticAI"):
        call_command("check", databases=[])


def test_another_missing_module_is_not_blamed_on_a_framework():
    assert missing_framework(ModuleNotFoundError("No module named 'nowhere'", name="nowhere")) is None
    assert missing_framework(ValueError("x")) is None
    # A project whose own package is named `agents` (and is missing): not the OpenAI Agents SDK.
    assert missing_framework(ModuleNotFoundError(name="agents"), "agents.support.handle") is None
    assert missing_framework(ModuleNotFoundError(name="agents"), "myproject.support") is FRAMEWORKS[2]


def test_nothing_installed_shadows_this_project_s_a2a():
    """The official SDK's distribution (a2a-sdk) has a top-level ``a2a`` too: no extra may bring it in."""
    assert Path(a2a.__file__).parent.parent == Path(__file__).resolve().parents[2]
    names = {(d.metadata["Name"] or "").lower() for d in importlib.metadata.distributions()}
    assert "a2a-sdk" not in names
