"""docs/testing.md's "Testing your agent", run as written: a new ``startproject``
project with the README's Quickstart applied (its handler, its second agent, its file
store), the page's pytest configuration and test file added, and pytest run in it. The
test kit's tasks must not land in the project's task store, unless a test asks for it.
And the README's curl lines reach what they say."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from a2a.testing import assert_task_state
from tests.helpers import call
from tests.server import ROOT
from tests.thirdparty import run as thirdparty
from tests.thirdparty.readme import fenced_blocks, readme_section, readme_steps, second_agent_steps

TESTING_PAGE = ROOT / "docs" / "testing.md"
SECTION = "## Testing your agent"


def page_files(markdown: str, heading: str) -> dict[str, str]:
    """The section's code blocks that name a file on their first line (``# tests/x.py``,
    ``# pyproject.toml``): path -> the block without that line."""
    section = readme_section(markdown, heading)
    found: dict[str, str] = {}
    for block in fenced_blocks(section, r"\w+"):
        header = re.match(r"# (\S+\.(?:py|toml|ini|cfg))\n", block)
        if header:
            found[header.group(1)] = block[header.end() :]
    return found


def quickstart_project(workdir: Path, second_agent: bool = True) -> Path:
    """``startproject myproject`` with the README's Quickstart and second agent (unless
    ``second_agent`` is false) applied, this checkout's apps importable (the wheel's
    install is tests/thirdparty/'s)."""
    project = workdir / thirdparty.PROJECT
    project.mkdir()
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", thirdparty.PROJECT, str(project)],
        check=True,
        capture_output=True,
    )
    readme = thirdparty.README.read_text()
    thirdparty.apply_steps(project, readme_steps(readme), workdir, "README")
    if second_agent:
        thirdparty.apply_steps(project, second_agent_steps(readme), workdir, "the README's second agent")
    return project


def run_pytest(project: Path) -> subprocess.CompletedProcess:
    """pytest in the project, as its author runs it; ``-p a2a.testing.plugin`` stands for
    the entry point an installed package has (the checkout is on the path, not installed)."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(project)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "a2a.testing.plugin"]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)


def task_files(project: Path) -> list[Path]:
    """The task files of the project's file store (the README's ``TASK_STORE``, under BASE_DIR)."""
    store = re.search(r'TASK_STORE = "file:([^"]+)"', (project / thirdparty.PROJECT / "settings.py").read_text())
    assert store, "the README's Quickstart uses the file store"
    directory = project / store.group(1)
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def test_the_testing_page_shows_the_configuration_and_a_test_file():
    files = page_files(TESTING_PAGE.read_text(), SECTION)
    assert set(files) == {"pyproject.toml", "tests/test_agent.py"}
    assert 'DJANGO_SETTINGS_MODULE = "myproject.settings"' in files["pyproject.toml"]
    # Every assert_events(...) the page writes is one the test file runs against the Quickstart.
    calls = set(re.findall(r"assert_events\([^)]*\)", TESTING_PAGE.read_text()))
    assert calls and calls <= set(re.findall(r"assert_events\([^)]*\)", files["tests/test_agent.py"]))


@pytest.mark.slow
def test_the_testing_pages_examples_pass_and_leave_the_projects_store_alone(tmp_path):
    project = quickstart_project(tmp_path)
    for name, code in page_files(TESTING_PAGE.read_text(), SECTION).items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(code)
    for _ in range(2):  # the author runs them again and again: nothing piles up
        done = run_pytest(project)
        assert done.returncode == 0, done.stdout + done.stderr
        assert re.search(r"\b5 passed\b", done.stdout), done.stdout
        assert task_files(project) == [], "the test kit wrote into the project's task store"
    # A test that asks for the project's store gets it.
    (project / "tests" / "test_project_store.py").write_text(
        "import pytest\n\n\n"
        "@pytest.mark.a2a_project_store\n"
        "def test_kept(a2a_client):\n"
        '    assert a2a_client.send("kept")["task"]["status"]["state"] == "TASK_STATE_COMPLETED"\n'
    )
    done = run_pytest(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(task_files(project)) == 1


# --- The README's curl lines ---------------------------------------------------------------


def curl_commands(markdown: str) -> list[list[str]]:
    """Every ``curl`` command of the ``sh`` blocks, as its arguments."""
    commands: list[list[str]] = []
    for block in fenced_blocks(markdown, "sh"):
        for line in re.split(r"(?<!\\)\n(?!\s)", block):  # a command per line, its continuation lines with it
            words = shlex.split(line, comments=True)
            if words[:1] == ["curl"]:
                commands.append(words[1:])
    return commands


def test_every_readme_curl_line_reaches_what_it_says(settings):
    """The README's curl lines (the agent and its second agent) against the routes they
    name, the second agent's settings as the README has them (with a built-in handler)."""
    readme = (ROOT / "README.md").read_text()
    namespace: dict = {}
    exec(second_agent_steps(readme).files["settings.py"], namespace)  # the README's A2A_AGENTS
    agents = namespace["A2A_AGENTS"]
    settings.A2A_AGENTS = {name: {**options, "HANDLER": "a2a.handlers.echo"} for name, options in agents.items()}
    settings.ROOT_URLCONF = "tests.urls"  # the README's two includes: "" and "agents/"
    commands = curl_commands(readme)
    assert len(commands) == 4, commands
    for arguments in commands:
        url = next(word for word in arguments if word.startswith("localhost:8000/"))
        headers = dict(arguments[i + 1].split(": ", 1) for i, word in enumerate(arguments) if word == "-H")
        body = arguments[arguments.index("-d") + 1] if "-d" in arguments else None
        answer = call("POST" if body else "GET", url.removeprefix("localhost:8000"), content=body, headers=headers)
        assert answer.status_code == 200, (url, answer.text)
        if body:
            assert_task_state(answer.json()["result"]["task"], "completed")
        else:
            assert answer.json()["name"] in {"Billing", settings.A2A_AGENT_NAME}
