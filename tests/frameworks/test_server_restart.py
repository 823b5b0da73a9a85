"""A framework's agent pauses for a person and resumes after a real restart: the site
under uvicorn with the agent as ``A2A_HANDLER``, a question that needs an approval
(``input-required``), the server stopped and started again on the same store (file,
ORM on PostgreSQL), then the client's "yes": the run goes on where it stood."""

from __future__ import annotations

import importlib

import pytest
from django.conf import settings

from a2a.testing import WireClient
from tests.frameworks.support import message, state, status_text
from tests.frameworks.test_common import FRAMEWORKS
from tests.server import manage, postgres_database, running_server, site_env

pytestmark = pytest.mark.slow


@pytest.fixture(params=["file", "orm-postgres"])
def store_env(request, tmp_path):
    """The site's environment on the store, whose data outlives one server."""
    if request.param == "file":
        yield {"TASK_STORE": f"file:{tmp_path / 'tasks'}", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
        return
    if "postgres" not in settings.DATABASES:
        pytest.skip("A2A_TEST_POSTGRES_URL is not set")
    with postgres_database(settings.POSTGRES_URL, "a2a_frameworks") as url:
        env = site_env(TASK_STORE="orm", DATABASE_URL=url)
        manage("migrate", "--noinput", env=env)
        yield {"TASK_STORE": "orm", "DATABASE_URL": url}


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_the_approval_resumes_after_the_server_restarts(framework, store_env, tmp_path):
    agent = importlib.import_module(f"tests.frameworks.{FRAMEWORKS[framework]}")
    env = site_env(A2A_HANDLER=agent.HANDLER, **store_env)
    with running_server(env, log=tmp_path / "server.log") as base:
        asked = WireClient(base_url=base, timeout=20).send(message(agent.APPROVAL))["task"]
        assert state(asked) == "input-required" and status_text(asked) == agent.QUESTION
    with running_server(env, log=tmp_path / "server.log") as base:  # a new process: nothing but the store
        client = WireClient(base_url=base, timeout=20)
        done = client.send(message("yes", task_id=asked["id"], context_id=asked["contextId"]))["task"]
        assert state(done) == "completed", (done["status"], (tmp_path / "server.log").read_text()[-2000:])
        assert [[p["text"].strip() for p in a["parts"]] for a in done["artifacts"]] == [[agent.ANSWERS["yes"]]]
