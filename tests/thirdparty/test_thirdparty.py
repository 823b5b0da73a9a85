"""Our wheel in a brand-new Django project, set up as the README says (run.py), on this
Python and this Django: the default combination under ``make test``, each
combination of the matrix under ``nox -s tests``. ``nox -s thirdparty`` runs run.py
itself on every combination (``make matrix``, CI)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import django
import pytest

from tests.thirdparty import run


def test_the_readme_section_gives_every_step():
    steps = run.readme_steps(run.README.read_text())
    assert steps.install_name == run.distribution_name()
    assert set(steps.files) == {"settings.py", "urls.py", "asgi.py"}
    assert f"{run.PROJECT}/agent.py" in steps.new_files  # the handler A2A_HANDLER names
    assert f'"{run.PROJECT}.agent.handle"' in steps.files["settings.py"]
    assert steps.whole_files == {"asgi.py"}  # pasted as the whole file, it must run alone


def test_the_readme_asgi_py_works_as_the_whole_file():
    """The README's asgi.py, alone, names its settings module: uvicorn imports it with no
    DJANGO_SETTINGS_MODULE in the environment."""
    code = run.readme_steps(run.README.read_text()).files["asgi.py"]
    tree = ast.parse(code)
    calls = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert f"os.environ.setdefault('DJANGO_SETTINGS_MODULE', '{run.PROJECT}.settings')" in calls
    assert calls.index(f"os.environ.setdefault('DJANGO_SETTINGS_MODULE', '{run.PROJECT}.settings')") < calls.index(
        "get_asgi_application()"
    )


def test_the_readme_settings_take_a2a_settings_from_the_environment():
    code = run.readme_steps(run.README.read_text()).files["settings.py"]
    assert "from a2a.conf import from_environment" in code
    assert code.rstrip().splitlines()[-1].startswith("globals().update(from_environment())")  # last, so it wins


def test_merge_extends_lists_replaces_imports_and_assignments_and_appends_the_rest():
    generated = textwrap.dedent(
        """\
        import os
        from django.urls import path
        from django.core.asgi import get_asgi_application

        APPS = ["a", "b"]
        os.environ.setdefault("X", "1")
        application = get_asgi_application()
        """
    )
    snippet = textwrap.dedent(
        """\
        APPS = [..., "c"]  # more apps
        from django.urls import include, path
        from a2a.asgi import get_asgi_application

        application = get_asgi_application()
        NEW = 1
        """
    )
    merged = run.merge(generated, snippet)
    assert merged == textwrap.dedent(
        """\
        import os
        from django.urls import include, path
        from a2a.asgi import get_asgi_application

        APPS = [
            "a",
            "b",
            "c",
        ]  # more apps
        os.environ.setdefault("X", "1")
        application = get_asgi_application()

        NEW = 1
        """
    )


def test_a_readme_without_the_include_import_leaves_urls_py_broken():
    """What the test is for: a README step that is missing shows up as a broken file."""
    generated = "from django.urls import path\n\nurlpatterns = [path('x/', view)]\n"
    tree = ast.parse(run.merge(generated, 'urlpatterns = [..., path("", include("a2a.urls"))]\n'))
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    bound = {n.id for n in names if isinstance(n.ctx, ast.Store)} | imported
    assert {n.id for n in names if isinstance(n.ctx, ast.Load)} - bound == {"include", "view"}


def test_the_readme_shows_a_second_agent():
    """ "A second agent": a settings entry and an include (merged as the Quickstart's) and its
    handler; the agent run.py then reaches, with the answer it checks."""
    steps = run.second_agent_steps(run.README.read_text())
    assert set(steps.files) == {"settings.py", "urls.py"}
    assert set(steps.new_files) == {f"{run.PROJECT}/billing.py"}
    assert f'"{run.SECOND_AGENT}"' in steps.files["settings.py"]
    assert 'include("a2a.urls.agents")' in steps.files["urls.py"]
    assert run.SECOND_ANSWER.split("{")[0] in steps.new_files[f"{run.PROJECT}/billing.py"]


def test_the_second_agents_settings_go_above_the_from_environment_line():
    """As the README says: A2A_AGENTS with the other A2A settings, from_environment() last
    (so an A2A_AGENTS in the environment still wins)."""
    readme = run.README.read_text()
    generated = 'DEBUG = True\nINSTALLED_APPS = ["django.contrib.admin"]\n'
    settings = run.merge(generated, run.readme_steps(readme).files["settings.py"])
    settings = run.merge(settings, run.second_agent_steps(readme).files["settings.py"])
    statements = [ast.unparse(node) for node in ast.parse(settings).body]
    assert statements[-1] == "globals().update(from_environment())"
    assert any(statement.startswith("A2A_AGENTS = ") for statement in statements)


def test_absolute_file_stores_move_under_the_work_directory(tmp_path):
    code = 'TASK_STORE = "file:/var/lib/myagent/tasks"  # or "orm"\n'
    assert (
        run.rebase_file_stores(code, tmp_path) == f'TASK_STORE = "file:{tmp_path}/var/lib/myagent/tasks"  # or "orm"\n'
    )


@pytest.mark.slow
@pytest.mark.thirdparty
def test_a_new_project_with_our_wheel_works_as_the_readme_says(tmp_path):
    wheel = run.built_dist().wheel
    done = subprocess.run(
        [
            sys.executable,
            str(run.ROOT / "tests" / "thirdparty" / "run.py"),
            "--wheel",
            str(wheel),
            "--django",
            f"Django=={django.get_version()}",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "[thirdparty] passed" in done.stdout
