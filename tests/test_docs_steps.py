"""The docs' steps, followed as a new user follows them: each file a page shows is written
where the page says and used as the page says (tests/test_docs_testing.py runs the
testing page's and the README's curl lines; tests/thirdparty/ the README's Quickstart)."""

from __future__ import annotations

import base64
import json
import re
import shlex
import subprocess
import sys
import urllib.parse
from pathlib import Path
from types import ModuleType

from django.test import override_settings

from a2a.handlers.skills import get_skills
from a2a.ops.checks.agents import check_agents
from a2a.ops.checks.skills import check_skills
from tests.ports import free_port
from tests.server import ROOT
from tests.test_docs_testing import quickstart_project
from tests.thirdparty import run as thirdparty
from tests.thirdparty.readme import (
    ReadmeSteps,
    fenced_blocks,
    files_of,
    readme_section,
    second_agent_steps,
)

DOCS = ROOT / "docs"


def captioned_files(markdown: str) -> dict[str, str]:
    """The code blocks a page introduces by a file's path alone (a sentence or line ending
    in ``path``: right above the block): path -> the block's text."""
    found = re.finditer(r"`([\w./-]+\.\w+)`:\n\n```\w*\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    return {match.group(1): match.group(2) for match in found}


def code_steps(block: str) -> ReadmeSteps:
    """A page's ``# settings.py`` / ``# myproject/x.py`` block as steps: the project's files
    to merge into, and the new files (a path with a ``/``) to write."""
    parts = files_of(block)
    return ReadmeSteps(
        "", {n: c for n, c in parts.items() if "/" not in n}, {n: c for n, c in parts.items() if "/" in n}, set()
    )


def project_env(project: Path) -> dict[str, str]:
    """The environment of the project's commands: this checkout's apps importable."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(project)}
    return {**env, "DJANGO_SETTINGS_MODULE": f"{thirdparty.PROJECT}.settings"}


def manage(
    project: Path, *args: str, script: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``python manage.py ...`` (or ``script`` with the project's settings set up) in the project."""
    command = [sys.executable, "-c", script] if script else [sys.executable, "manage.py", *args]
    return subprocess.run(
        command, cwd=project, env={**project_env(project), **(env or {})}, capture_output=True, text=True, timeout=300
    )


#: Run in a project: what a GET of each path answers, as JSON (status, body).
GETS = """
import json, sys
import django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
answers = {path: Client().get(path) for path in sys.argv[1:]}
print(json.dumps({path: [a.status_code, a.content.decode()] for path, a in answers.items()}))
"""


def get(project: Path, *paths: str) -> dict[str, tuple[int, str]]:
    done = manage(project, script=GETS.replace("sys.argv[1:]", repr(list(paths))))
    assert done.returncode == 0, done.stdout + done.stderr
    return {path: (status, body) for path, (status, body) in json.loads(done.stdout.splitlines()[-1]).items()}


# --- docs/handlers.md ---------------------------------------------------------------------------


def test_the_handlers_pages_skill_file_copied_as_shown_loads(tmp_path, settings):
    """The SKILL.md example, written to the path it names: ``manage.py check`` finds nothing
    to say and the card lists the skill; the file starts with its front matter, as every
    reader of SKILL.md files (Anthropic's, toolnexus's) expects."""
    files = captioned_files((DOCS / "handlers.md").read_text())
    assert "skills/summarize/SKILL.md" in files
    text = files["skills/summarize/SKILL.md"]
    assert text.startswith("---\n")
    (tmp_path / "skills" / "summarize").mkdir(parents=True)
    (tmp_path / "skills" / "summarize" / "SKILL.md").write_text(text)
    settings.A2A_SKILLS_DIR = str(tmp_path / "skills")
    assert check_skills() == []
    (skill,) = get_skills()
    assert skill.card_entry()["name"] == "Summarize" and skill.instructions.startswith("Answer with at most")


# --- docs/agents.md ---------------------------------------------------------------------------

AGENTS_PAGE = DOCS / "agents.md"


def agents_page_block() -> str:
    return fenced_blocks(AGENTS_PAGE.read_text(), "python")[0]


def test_the_agents_page_followed_after_the_quickstart_serves_the_second_agent(tmp_path):
    """The page's first block and the skill file it names, applied to the Quickstart's
    project: a clean check, and the agent's card lists the folder's skill."""
    project = quickstart_project(tmp_path, second_agent=False)
    thirdparty.apply_steps(project, code_steps(agents_page_block()), tmp_path, "docs/agents.md")
    files = {path: text for path, text in captioned_files(AGENTS_PAGE.read_text()).items() if path.endswith("SKILL.md")}
    assert files, "docs/agents.md shows the second agent's skill file"
    for path, text in files.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)
    checked = manage(project, "check", "--fail-level", "WARNING")
    said = checked.stdout + checked.stderr
    assert checked.returncode == 0 and "WARNINGS:" not in said and "ERRORS:" not in said, said
    status, body = get(project, "/agents/billing/.well-known/agent-card.json")[
        "/agents/billing/.well-known/agent-card.json"
    ]
    assert status == 200 and [skill["id"] for skill in json.loads(body)["skills"]] == ["invoices"]


def test_the_readme_and_the_agents_page_show_one_layout():
    """The same second agent: its handler's dotted path and module file are the README's."""
    readme = second_agent_steps((ROOT / "README.md").read_text())
    page = code_steps(agents_page_block())
    handler = re.compile(r'"HANDLER": "([\w.]+)"')
    assert handler.findall(page.files["settings.py"]) == handler.findall(readme.files["settings.py"])
    assert set(page.new_files) == set(readme.new_files) == {"myproject/billing.py"}
    assert page.new_files == readme.new_files


def test_the_agents_pages_checks_name_the_ids_the_checks_report(tmp_path, settings):
    """Each mistake the Checks section names, made: the ids reported are the ones it names."""
    broken = tmp_path / "broken"
    (broken / "x").mkdir(parents=True)
    (broken / "x" / "SKILL.md").write_text("no front matter")
    mistakes = [
        {"bad name": {}},
        {"billing": {"HANDLERS": "x"}},
        {"billing": {"TASK_STORE": "nosuch"}},
        {"billing": {"HANDLER": "nowhere.handle"}},
        {"billing": {"SKILLS_DIR": str(tmp_path / "nowhere")}},
        {"billing": {"SKILLS_DIR": str(broken)}},
    ]
    reported = set()
    for configured in mistakes:
        with override_settings(A2A_AGENTS=configured):
            reported |= {message.id for message in check_agents()}
    settings.ROOT_URLCONF = "a2a.urls"  # a2a.urls.agents not included
    settings.A2A_AGENTS = {"billing": {}}
    reported |= {message.id for message in check_agents()}
    section = readme_section(AGENTS_PAGE.read_text(), "## Checks")
    assert (
        set(re.findall(r"a2a\.[EW]\d{3}", section))
        == reported
        == {"a2a.E110", "a2a.E001", "a2a.E020", "a2a.E021", "a2a.W110"}
    )


# --- docs/files.md: a handler returning a file --------------------------------------------------


def test_the_files_pages_handler_returns_its_file(a2a_client, settings, tmp_path, monkeypatch):
    """The page's handler, as the project's: the client gets the file (v1.0 ``raw``, v0.3
    ``bytes``), and a ``url`` once the file is above A2A_FILES_OFFLOAD_BYTES."""
    block = next(b for b in fenced_blocks((DOCS / "files.md").read_text(), "python") if "# myproject/report.py" in b)
    module = ModuleType("docs_files_report")
    exec(files_of(block)["myproject/report.py"], module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    settings.A2A_HANDLER = "docs_files_report.handle"
    [part] = a2a_client.send("Paris")["task"]["artifacts"][0]["parts"]
    assert (part["mediaType"], part["filename"]) == ("text/csv", "report.csv")
    assert base64.b64decode(part["raw"]) == b"city,temp\nParis,21\n"
    [part] = a2a_client.with_(version="0.3").send("Oslo")["artifacts"][0]["parts"]  # v0.3: the task itself
    assert base64.b64decode(part["file"]["bytes"]) == b"city,temp\nOslo,21\n"
    settings.MEDIA_ROOT = str(tmp_path)
    settings.A2A_FILES_OFFLOAD_BYTES = 8
    [part] = a2a_client.send("Rome")["task"]["artifacts"][0]["parts"]
    assert "raw" not in part and "/a2a/files/" in part["url"] and part["filename"] == "report.csv"


# --- docs/protocol.md: a token for a caller -----------------------------------------------------

#: Run in a project: SendMessage to /a2a/ with the given headers: (status, the task's state or the body).
SEND = """
import json, sys
import django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}}}
headers = {"A2A-Version": "1.0", **HEADERS}
answer = Client().post("/a2a/", json.dumps(body), content_type="application/json", headers=headers)
print(json.dumps([answer.status_code, answer.content.decode()]))
"""


def test_the_protocol_pages_token_steps_give_alice_a_token_that_calls_the_agent(tmp_path):
    """The Quickstart's project with the page's settings, then its commands as written: the
    token ``drf_create_token`` prints gets Alice's task; no token is a 401."""
    section = readme_section((DOCS / "protocol.md").read_text(), "## Authentication and ownership")
    project = quickstart_project(tmp_path)
    settings_file = project / thirdparty.PROJECT / "settings.py"
    settings_code = fenced_blocks(section, "python")[0]
    merged = thirdparty.merge(settings_file.read_text(), settings_code)
    # The page lists "a2a" and "stores" the Quickstart added already: once each.
    settings_file.write_text(merged + "\nINSTALLED_APPS = list(dict.fromkeys(INSTALLED_APPS))\n")
    said = ""
    for line in fenced_blocks(section, "sh")[0].splitlines():
        command = shlex.split(line)
        assert command[:2] == ["python", "manage.py"], line
        done = manage(project, *command[2:])
        assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
        said = done.stdout
    token = re.fullmatch(r"Generated token (\w+) for user alice\s*", said)
    assert token, said
    for headers, expected in (({"Authorization": f"Bearer {token.group(1)}"}, 200), ({}, 401)):
        done = manage(project, script=SEND.replace("**HEADERS", f"**{headers!r}"))
        assert done.returncode == 0, done.stderr
        status, body = json.loads(done.stdout.splitlines()[-1])
        assert status == expected, body
        if status == 200:
            assert json.loads(body)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", body


# --- The README's "Serve it" and the front page ---------------------------------------------------

README = ROOT / "README.md"
ADMIN = {"username": "admin", "password": "a-long-test-password-2718"}


def serve_steps() -> list[list[str]]:
    """The README's "Serve it" commands, one per line."""
    [block] = fenced_blocks(readme_section(README.read_text(), "### Serve it"), "sh")
    return [shlex.split(line, comments=True) for line in block.splitlines()]


def front_page_line() -> str:
    """The ``path(...)`` the README has a project add for a front page."""
    found = re.search(
        r'`(path\("", include\("a2a\.urls\.home"\)\))`', readme_section(README.read_text(), "### Serve it")
    )
    assert found, "the README offers the front page as an include"
    return found.group(1)


def sign_in(client: thirdparty.Client, next_path: str) -> tuple[int, str, str]:
    """The admin's login form, filled as a person does: (status, final URL, page)."""
    status, _, page = client.request(f"/admin/login/?next={next_path}")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert status == 200 and token, page[:2000]
    form = {"csrfmiddlewaretoken": token.group(1), **ADMIN, "next": next_path}
    return client.request(
        f"/admin/login/?next={next_path}",
        data=urllib.parse.urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Referer": client.base + "/admin/login/"},
    )


def test_the_readme_serve_steps_give_a_staff_login_the_agent_page_and_a_front_page(tmp_path):
    """The Quickstart's project, the front page's line added, then "Serve it" as written
    (createsuperuser answered from the environment): uvicorn with the README's arguments
    serves the front page, and the agent page to the user createsuperuser made."""
    steps = serve_steps()
    assert [step[:3] for step in steps[:2]] == [
        ["python", "manage.py", "migrate"],
        ["python", "manage.py", "createsuperuser"],
    ]
    assert steps[2][:2] == ["uvicorn", f"{thirdparty.PROJECT}.asgi:application"] and "--http" in steps[2]
    project = quickstart_project(tmp_path)
    urls = project / thirdparty.PROJECT / "urls.py"
    urls.write_text(thirdparty.merge(urls.read_text(), f"urlpatterns = [..., {front_page_line()}]\n"))
    superuser = {f"DJANGO_SUPERUSER_{key.upper()}": value for key, value in ADMIN.items()}
    for step in steps[:2]:
        done = manage(
            project,
            *step[2:],
            *(["--noinput", "--email", "a@example.com"] if "createsuperuser" in step else []),
            env=superuser,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    port = free_port()
    command = [sys.executable, "-m", *steps[2], "--host", "127.0.0.1", "--port", str(port)]
    with open(tmp_path / "uvicorn.log", "wb") as log:
        server = subprocess.Popen(command, cwd=project, env=project_env(project), stdout=log, stderr=subprocess.STDOUT)
    try:
        client = thirdparty.Client(f"http://127.0.0.1:{port}")
        thirdparty.wait_until_serving(server, client, tmp_path / "uvicorn.log")
        status, _, page = client.request("/")
        assert status == 200, page[:2000]
        for link in ('href="/a2a/browse/"', 'href="/agents/billing/a2a/browse/"', 'href="/admin/"'):
            assert link in page, link
        status, url, page = sign_in(client, "/a2a/browse/")
        assert status == 200 and url.endswith("/a2a/browse/") and "<form" in page, (status, url, page[:2000])
    finally:
        server.terminate()
        server.wait(60)
