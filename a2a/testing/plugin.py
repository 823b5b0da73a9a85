"""The pytest plugin (entry point ``pytest11``): installed with the package, it only adds
fixtures, and each acts only when a test asks for it, so a project that does not use
them (or is not a Django project) sees nothing.

- ``a2a_client``: a :class:`~a2a.testing.client.WireClient` speaking v1.0 to the
  project's ASGI application in this process, its tasks in an in-memory store of the
  test's own (``a2a_stores``: never the project's real ``TASK_STORE``, unless the test
  set one or is marked ``a2a_project_store``). With pytest-django it makes the test
  transactional (as ``transactional_db`` does, even beside ``db``): the runner saves
  each transition from its own threads, which a ``db`` test's open transaction would
  hide from them, so this is what lets the test see its tasks on every store.
- ``fake_model``: a :class:`~a2a.testing.fake_model.FakeModel`, with ``A2A_LLM_BASE_URL``
  (and a model name and API key, when unset) pointed at it through pytest-django's
  ``settings``.
- ``fake_agent``: a :class:`~a2a.testing.fake_agent.FakeAgent` serving on loopback.
- ``a2a_agent``: serves a handler (a framework's agent by its dotted path) as the
  project's agent and returns an :class:`~a2a.testing.agent.AgentUnderTest` that asks it
  through ``a2a_client``, each turn read as a client reads it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator

import pytest
from django.conf import settings
from django.test import override_settings

from a2a.testing.agent import AgentUnderTest
from a2a.testing.client import WireClient
from a2a.testing.fake_agent import FakeAgent
from a2a.testing.fake_agent import fake_agent as serve_fake_agent
from a2a.testing.fake_model import FakeModel
from a2a.testing.fake_model import fake_model as serve_fake_model
from a2a.testing.isolation import PROJECT_STORE_MARKER, PROJECT_STORE_MARKER_DOC, own_stores

#: pytest-django is there (its ``settings`` and ``transactional_db`` fixtures).
WITH_PYTEST_DJANGO = importlib.util.find_spec("pytest_django") is not None


@pytest.fixture
def a2a_project() -> None:
    """Skip, saying why, when no Django settings are configured (``DJANGO_SETTINGS_MODULE``)."""
    if not (settings.configured or os.environ.get("DJANGO_SETTINGS_MODULE")):
        pytest.skip("a2a.testing needs a configured Django project (DJANGO_SETTINGS_MODULE)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", PROJECT_STORE_MARKER_DOC)


@pytest.fixture
def a2a_stores(request: pytest.FixtureRequest, a2a_project: None) -> Iterator[None]:
    """The test's own task stores (:mod:`a2a.testing.isolation`) for as long as it runs,
    unless it is marked ``a2a_project_store``."""
    if request.node.get_closest_marker(PROJECT_STORE_MARKER):
        yield
        return
    overrides = own_stores()
    if WITH_PYTEST_DJANGO and request.config.pluginmanager.hasplugin("django"):
        settings_fixture = request.getfixturevalue("settings")  # restores them with the test's own changes
        for name, value in overrides.items():
            setattr(settings_fixture, name, value)
        yield
        return
    with override_settings(**overrides):
        yield


if WITH_PYTEST_DJANGO:

    @pytest.fixture
    def a2a_client(a2a_stores: None, transactional_db: None) -> WireClient:
        """A v1.0 wire client to the project's ASGI application (``.with_(version="0.3")``),
        its tasks in a store of the test's own."""
        return WireClient(version="1.0")

else:

    @pytest.fixture
    def a2a_client(a2a_stores: None) -> WireClient:
        """A v1.0 wire client to the project's ASGI application (``.with_(version="0.3")``),
        its tasks in a store of the test's own."""
        return WireClient(version="1.0")


@pytest.fixture
def fake_model(request: pytest.FixtureRequest) -> Iterator[FakeModel]:
    """A fake OpenAI-compatible / Anthropic model on loopback; the LLM settings point at it."""
    with serve_fake_model() as model:
        if WITH_PYTEST_DJANGO and request.config.pluginmanager.hasplugin("django"):
            overrides = request.getfixturevalue("settings")
            overrides.A2A_LLM_BASE_URL = model.url
            overrides.A2A_LLM_MODEL = getattr(overrides, "A2A_LLM_MODEL", "") or "fake-model"
            overrides.A2A_LLM_API_KEY = getattr(overrides, "A2A_LLM_API_KEY", "") or "sk-fake"
            overrides.A2A_LLM_RETRY_BACKOFF = 0.01
        yield model


@pytest.fixture
def fake_agent() -> Iterator[FakeAgent]:
    """A scripted fake remote A2A agent on loopback (``fake_agent.card_url``)."""
    with serve_fake_agent() as agent:
        yield agent


@pytest.fixture
def a2a_agent(request: pytest.FixtureRequest, a2a_client: WireClient) -> Callable[[str], AgentUnderTest]:
    """``a2a_agent("myproject.agents.helper")``: that handler (a PydanticAI agent, a
    LangGraph graph, an OpenAI Agents SDK agent, any handler) served as the project's
    agent for the test (``A2A_HANDLER``), asked through ``a2a_client``."""

    def serve(handler: str) -> AgentUnderTest:
        overrides = override_settings(A2A_HANDLER=handler)
        overrides.enable()
        request.addfinalizer(overrides.disable)
        return AgentUnderTest(a2a_client)

    return serve
