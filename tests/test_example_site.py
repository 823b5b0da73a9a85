"""The example site (toolnexus_site) as ``make run`` serves it: ``/`` answers with a page
linking what the site serves (the admin's "View site" leads there), and a run leaves
no untracked files in the checkout."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.frameworks.support import assert_streams, serve
from tests.server import ROOT, site_env
from toolnexus_site.framework_agents import FRAMEWORKS, offline_answer

#: Run with the site's own settings: its front page, as a browser gets it.
FRONT_PAGE = """
import json
import django
django.setup()
from django.contrib import admin
from django.test import Client
from django.test.utils import setup_test_environment
from django.urls import resolve

setup_test_environment()
answer = Client().get("/")
print(json.dumps({"status": answer.status_code, "page": answer.content.decode(),
                  "view_site": resolve(admin.site.site_url).url_name}))
"""


def test_the_front_page_links_each_agent_the_admin_and_the_catalog(tmp_path):
    env = site_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", FRAMEWORK_AGENTS="true")
    done = subprocess.run([sys.executable, "-c", FRONT_PAGE], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["status"] == 200 and answer["view_site"] == "home"
    page = answer["page"]
    for link in (
        'href="/admin/"',
        'href="/a2a/browse/"',
        'href="/.well-known/agent-card.json"',
        'href="/.well-known/ai-catalog.json"',
        'href="/agents/shout/a2a/browse/"',  # the site's second agent too
    ):
        assert link in page, link
    assert "http://testserver/a2a/" in page and "http://testserver/agents/shout/a2a/" in page
    for name, (package, _) in FRAMEWORKS.items():  # one agent per framework installed
        assert (f'href="/agents/{name}/a2a/browse/"' in page) == (importlib.util.find_spec(package) is not None)


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_each_framework_agent_of_the_site_streams_offline(name, settings):
    """Without a key, the site's agent of each installed framework answers on its
    deterministic model, streamed in chunks through the real A2A path."""
    package, handler = FRAMEWORKS[name]
    pytest.importorskip(package, reason=f"the {name} extra is not installed")
    serve(settings, type("Agent", (), {"HANDLER": handler, "DELETED": []}))
    framework = {"pydantic-ai": "PydanticAI", "langgraph": "LangGraph", "openai-agents": "OpenAI Agents SDK"}[name]
    assert_streams("hello there", offline_answer("hello there", framework))
    assert offline_answer("hello there", framework).startswith("You said: hello there.")


@pytest.mark.parametrize(
    "path",
    ["db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm", "db.sqlite3-journal", "staticfiles/admin/x.css", "tasks/t.json"],
)
def test_what_make_run_writes_is_ignored_by_git(path):
    """``make run`` migrates SQLite (WAL: its -wal and -shm files), collects the static
    files and keeps tasks in ./tasks: none shows as untracked."""
    done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, capture_output=True, check=False)
    if done.returncode == 128:  # git's "not a git repository": an sdist or an exported tree
        pytest.skip("not a git checkout")
    assert done.returncode == 0, f"{path} is not ignored by .gitignore"


def test_the_sites_start_up_objects_are_frozen_out_of_the_collectors_way(tmp_path):
    env = site_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    code = "import gc, toolnexus_site.asgi; print(gc.get_freeze_count(), len(gc.get_objects()))"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    frozen, tracked = map(int, done.stdout.split())
    assert frozen > 10_000 and tracked < frozen  # what a full collection scans: what came after
