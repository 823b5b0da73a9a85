"""The third-party project test: our wheel in a brand-new Django project, set up by
following the README's Quickstart ("Add it to your project", "Write a handler") literally.

    python tests/thirdparty/run.py [--python PY | --venv DIR] [--django SPEC] [--wheel WHL] [--workdir DIR]

1. Build the wheel (and sdist) with ``python -m build`` and no C compiler (``CC=false``),
   unless ``--wheel`` names one: one pure-Python ``py3-none-any`` wheel.
2. Make a virtualenv (``--python``'s; or use ``--venv``, e.g. a nox session's) and
   install the wheel, ``--django`` (e.g. ``Django~=6.1.0``) and uvicorn into it, with no
   C compiler either: not the source tree, which is never on that Python's path.
3. ``django-admin startproject myproject`` (the README's examples name it so).
4. Apply the README: its ``pip install`` names our distribution; each ``# <file>.py``
   part of its Python block is merged into the generated file, statement by statement
   (a ``NAME = [..., x]`` extends the generated list, an import replaces the one that
   bound the same name, an assignment replaces the generated one or is appended, above
   the ``from_environment()`` line the README keeps last), or,
   when its header says ``(the whole file)`` (``asgi.py``), replaces the file; the
   handler file the README's "Write a handler" section shows is written as shown. The
   one liberty taken: an absolute ``file:`` TASK_STORE directory is put under the
   work directory instead of the machine's root. A README step that is wrong or
   missing (an import, an app, the ASGI line) breaks one of the next steps.
5. ``manage.py check`` says nothing but which system calls the file store makes
   (``stores.I001``: Python, no companion installed); ``A2A_AGENT_NAME`` in the
   environment reaches the settings (the README's ``from_environment()`` line);
   ``migrate``, ``createsuperuser``; uvicorn with an unimportable ``A2A_HANDLER`` exits
   non-zero with the system check's message; then serve ``myproject.asgi`` with
   uvicorn on a free loopback port.
6. Over HTTP: the agent card, named after the project, with no skills; ``SendMessage``
   (non-blocking), answered through the project's MIDDLEWARE (startproject's
   ``SecurityMiddleware`` header) → poll ``GetTask`` → completed, with the handler's
   answer; the admin: log in, the index and its stylesheets (served under uvicorn with
   DEBUG on), the task list (the task is there), the task's page.
7. Stop the server (SIGTERM) and check its log holds no traceback.

Standard library only, so any Python 3.11+ can drive it. Exits non-zero, saying which
step failed and why, on any failure.
"""

from __future__ import annotations

import argparse
import functools
import http.cookiejar
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

if not __package__:  # run as a script: the repository's root, for its sibling module
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.ports import free_port
from tests.thirdparty.readme import (
    ReadmeSteps,
    StepFailed,
    merge,
    readme_steps,
    rebase_file_stores,
    second_agent_steps,
)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The README's examples call the user's project "myproject" (``myproject.agent.handle``).
PROJECT = "myproject"
ADMIN_USER, ADMIN_PASSWORD = "admin", "a-long-test-password-2718"


def log(message: str) -> None:
    print(f"[thirdparty] {message}", flush=True)


# --- Building --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


#: No C compiler: the package builds and installs without one (``CC=false`` fails any compile).
NO_COMPILER = {"CC": "false", "CXX": "false"}


def build_dist(outdir: Path, python: str = sys.executable) -> Dist:
    """Build the sdist, then the wheel from it (``python -m build``, isolated), into
    ``outdir``, with no C compiler: a pure-Python wheel (StepFailed otherwise)."""
    outdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = subprocess.run(
        [python, "-m", "build", "--outdir", str(outdir), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **NO_COMPILER},
    )
    if done.returncode:
        raise StepFailed(f"python -m build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    wheels, sdists = sorted(outdir.glob("*.whl")), sorted(outdir.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise StepFailed(f"expected one wheel and one sdist in {outdir}, found {wheels + sdists}")
    if not wheels[0].name.endswith("-py3-none-any.whl"):
        raise StepFailed(f"{wheels[0].name} is not a pure-Python (py3-none-any) wheel")
    log(f"built {wheels[0].name} and {sdists[0].name} in {time.monotonic() - started:.1f}s")
    return Dist(wheels[0], sdists[0])


@functools.cache
def built_dist() -> Dist:
    """The wheel and sdist of the current tree, built once per process (for the tests)."""
    outdir = Path(tempfile.mkdtemp(prefix="a2a-dist-"))
    return build_dist(outdir)


def distribution_name() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]


# --- Processes and HTTP ----------------------------------------------------------------------


def clean_env(venv: Path) -> dict[str, str]:
    """The environment of the new project's commands: nothing of this repository's."""
    drop = ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV", "PYTHONHOME", "TASK_STORE", "DATABASE_URL")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("A2A_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    return {**env, **NO_COMPILER}


def run(
    command: list[str], *, cwd: Path, env: dict[str, str], what: str, timeout: float = 600, stderr: bool = False
) -> str:
    """``command``'s output (with ``stderr``: its standard error after it); StepFailed when it fails."""
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode:
        raise StepFailed(f"{what} failed ({' '.join(command)}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    log(f"{what}: ok ({time.monotonic() - started:.1f}s)")
    return done.stdout + done.stderr if stderr else done.stdout


class Client:
    """A real HTTP client (urllib) with a cookie jar, for the agent and the admin."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.headers: dict[str, str] = {}  # the last answer's
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def request(
        self, path: str, *, data: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str, str]:
        """(status, final URL, body) of a GET (or POST with ``data``); redirects followed."""
        request = urllib.request.Request(self.base + path, data=data, headers=headers or {})
        try:
            with self.opener.open(request, timeout=30) as response:
                self.headers = dict(response.headers.items())
                return response.status, response.url, response.read().decode()
        except urllib.error.HTTPError as exc:
            self.headers = dict(exc.headers.items())
            return exc.code, exc.url, exc.read().decode(errors="replace")

    def rpc(self, method: str, params: dict, endpoint: str = "/a2a/") -> dict:
        """A v1.0 JSON-RPC call's result; an error answer is an error (:meth:`rpc_answer` returns it)."""
        answer = self.rpc_answer(method, params, endpoint)
        if "error" in answer:
            raise StepFailed(f"{method}: {answer['error']}")
        return answer["result"]

    def rpc_answer(self, method: str, params: dict, endpoint: str = "/a2a/") -> dict:
        body = json.dumps({"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params})
        headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        status, _, text = self.request(endpoint, data=body.encode(), headers=headers)
        if status != 200:
            raise StepFailed(f"{method}: HTTP {status}: {text[:2000]}")
        return json.loads(text)


def wait_until_serving(proc: subprocess.Popen, client: Client, log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise StepFailed(f"uvicorn exited with {proc.returncode}:\n{log_path.read_text()[-4000:]}")
        try:
            if client.request("/.well-known/agent-card.json")[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise StepFailed(f"uvicorn did not answer within 60s:\n{log_path.read_text()[-4000:]}")
        time.sleep(0.1)


# --- The test --------------------------------------------------------------------------------


def exercise(client: Client) -> None:
    """The agent over HTTP: card; SendMessage (non-blocking) -> GetTask until completed; the admin."""
    check_card(client)
    task_id, said = send_and_poll(client)
    check_admin(client, task_id, said)
    check_second_agent(client, task_id)


#: The README's second agent ("A second agent"): its name, and what its handler answers.
SECOND_AGENT, SECOND_ANSWER = "billing", "Billing got {!r}"


def check_second_agent(client: Client, first_task: str) -> None:
    """The README's second agent: its own card (its name and skills) at its own URL, its
    own handler answering at its own endpoint; each agent's task unknown to the other."""
    card_path = f"/agents/{SECOND_AGENT}/.well-known/agent-card.json"
    status, _, text = client.request(card_path, headers={"A2A-Version": "1.0"})
    card = json.loads(text) if status == 200 else {}
    endpoint = f"/agents/{SECOND_AGENT}/a2a/"
    if not card.get("skills") or not any(i["url"].endswith(endpoint) for i in card.get("supportedInterfaces", [])):
        raise StepFailed(f"the second agent's card at {card_path}: HTTP {status}: {text[:2000]}")
    task_id, said = send_and_poll(client, endpoint, SECOND_ANSWER)
    for other, unknown in ((endpoint, first_task), ("/a2a/", task_id)):
        error = client.rpc_answer("GetTask", {"id": unknown}, other).get("error") or {}
        if error.get("code") != -32001:
            raise StepFailed(f"GetTask {unknown} at {other} (another agent's task) answered {error or 'the task'}")
    log(f"second agent: card {card['name']!r} with skills {[s['id'] for s in card['skills']]}; answered {said!r}")


def check_card(client: Client) -> None:
    """The agent card is served, named after the project, with its interfaces."""
    status, _, text = client.request("/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
    card = json.loads(text)
    if status != 200 or not card.get("supportedInterfaces"):
        raise StepFailed(f"agent card: HTTP {status}: {text[:2000]}")
    log(f"agent card: {card['name']!r}, {[i['url'] for i in card['supportedInterfaces']]}")
    # Named after the project (A2A_AGENT_NAME unset), with no skill the project did not give it.
    if card["name"] != PROJECT or card.get("skills"):
        raise StepFailed(f"the agent card is not {PROJECT!r}'s own: name {card['name']!r}, skills {card.get('skills')}")


def send_and_poll(client: Client, endpoint: str = "/a2a/", answers: str = "{}") -> tuple[str, str]:
    """A non-blocking SendMessage to ``endpoint``, then GetTask until it completes, its
    artifacts holding ``answers`` (formatted with what was said): the task's id and what was said."""
    started = time.monotonic()
    said = f"hello from a new project {uuid.uuid4().hex[:8]}"
    message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": said}]}
    sent = client.rpc("SendMessage", {"message": message, "configuration": {"returnImmediately": True}}, endpoint)
    # The project's MIDDLEWARE applies to the A2A routes: startproject's SecurityMiddleware's header.
    if client.headers.get("X-Content-Type-Options") != "nosniff":
        raise StepFailed(f"the project's SecurityMiddleware did not see POST /a2a/: headers {client.headers}")
    task = sent["task"]
    task_id, first_state = task["id"], task["status"]["state"]
    if first_state not in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"):
        raise StepFailed(f"a non-blocking SendMessage answered {first_state}, not submitted: {task}")
    states = [first_state]
    deadline = time.monotonic() + 30
    while task["status"]["state"] != "TASK_STATE_COMPLETED":
        if task["status"]["state"] in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"):
            raise StepFailed(f"the task ended {task['status']['state']}: {task}")
        if time.monotonic() > deadline:
            raise StepFailed(f"the task did not complete within 30s: {task}")
        time.sleep(0.05)
        task = client.rpc("GetTask", {"id": task_id}, endpoint)
        if task["status"]["state"] != states[-1]:
            states.append(task["status"]["state"])
    answer = " ".join(p.get("text", "") for a in task.get("artifacts", []) for p in a.get("parts", []))
    expected = answers.format(said)
    if expected not in answer:
        raise StepFailed(f"the completed task's artifacts do not answer {expected!r}: {task.get('artifacts')}")
    log(f"SendMessage -> GetTask: {' -> '.join(states)} ({time.monotonic() - started:.2f}s); answer {answer!r}")
    return task_id, said


def check_admin(client: Client, task_id: str, said: str) -> None:
    """The admin, as a person: log in, the index (styled), the task list, the task."""
    status, url, page = client.request("/admin/login/?next=/admin/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if status != 200 or not token:
        raise StepFailed(f"admin login page: HTTP {status} at {url}: {page[:2000]}")
    form = {"csrfmiddlewaretoken": token.group(1), "username": ADMIN_USER, "password": ADMIN_PASSWORD}
    form["next"] = "/admin/"
    status, url, page = client.request(
        "/admin/login/?next=/admin/",
        data=urllib.parse.urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Referer": client.base + "/admin/login/"},
    )
    if status != 200 or not url.endswith("/admin/") or "Site administration" not in page:
        raise StepFailed(f"admin login: HTTP {status} at {url}: {page[:2000]}")
    # Styled: its stylesheets are served under uvicorn (DEBUG, as runserver serves them).
    stylesheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
    if not stylesheets:
        raise StepFailed(f"the admin index links no stylesheet: {page[:2000]}")
    for href in stylesheets:
        status, _, _ = client.request(href)
        if status != 200 or not client.headers.get("Content-Type", "").startswith("text/css"):
            raise StepFailed(f"the admin's stylesheet {href}: HTTP {status}, {client.headers.get('Content-Type')}")
    log(f"admin: its {len(stylesheets)} stylesheets are served ({', '.join(stylesheets)})")
    check_admin_task(client, page, task_id, said)


def check_admin_task(client: Client, page: str, task_id: str, said: str) -> None:
    """The admin index links a task list that lists the task, whose page shows the conversation."""
    task_lists = sorted(set(re.findall(r'href="(/admin/stores/[a-z]+/)"', page)))
    if not task_lists:
        raise StepFailed(f"the admin index has no link to the stores' task list: {page[:4000]}")
    status, _, page = client.request(task_lists[0])
    if status != 200 or task_id not in page:
        raise StepFailed(f"admin task list {task_lists[0]}: HTTP {status}, task {task_id} listed: {task_id in page}")
    detail = re.search(rf'href="({re.escape(task_lists[0])}[^"]*{re.escape(task_id)}[^"]*)"', page)
    if not detail:
        raise StepFailed(f"the admin task list has no link to task {task_id}")
    status, _, page = client.request(detail.group(1).replace("&amp;", "&"))
    if status != 200 or said not in page:
        raise StepFailed(f"admin task page {detail.group(1)}: HTTP {status}; shows the message: {said in page}")
    log(f"admin: logged in; {task_lists[0]} lists the task; its page shows the conversation")


def third_party_project(workdir: Path, venv: Path, wheel: Path, django: str, python: str) -> None:
    """The README followed in a brand-new project: install, configure, check, migrate, serve, use."""
    workdir.mkdir(parents=True, exist_ok=True)
    steps = readme_steps(README.read_text())
    if steps.install_name != distribution_name():
        raise StepFailed(f"the README says `pip install {steps.install_name}`; the wheel is {distribution_name()!r}")
    py, env = install(workdir, venv, wheel, django, python)
    project = start_project(workdir, venv, env, steps)
    apply_steps(project, second_agent_steps(README.read_text()), workdir, "the README's second agent")
    manage_steps(py, project, env)
    refuses_a_broken_handler(py, project, env)
    serve_and_exercise(py, project, env, workdir)


def install(workdir: Path, venv: Path, wheel: Path, django: str, python: str) -> tuple[str, dict[str, str]]:
    """The wheel, Django and uvicorn in ``venv``: its python and the environment to run it in."""
    py = str(venv / "bin" / "python")
    if not Path(py).exists():
        # Without pip (ensurepip is the slow part): this Python's pip installs into it.
        run([python, "-m", "venv", "--without-pip", str(venv)], cwd=workdir, env=dict(os.environ), what="virtualenv")
    env = clean_env(venv)
    pip = [sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-compile", "--disable-pip-version-check"]
    run(
        [*pip, str(wheel), django, "uvicorn"], cwd=workdir, env=env, what=f"pip install {wheel.name} {django!r} uvicorn"
    )
    versions = run(
        [
            py,
            "-c",
            "import sys, django, a2a, stores; "
            "print(sys.version.split()[0], django.get_version(), a2a.__version__, a2a.__file__, stores.__file__)",
        ],
        cwd=workdir,
        env=env,
        what="import the installed apps",
    ).split()
    log(f"Python {versions[0]}, Django {versions[1]}, django-a2a-agent {versions[2]}")
    for module_file in versions[3:]:
        if not Path(module_file).is_relative_to(venv) or "site-packages" not in Path(module_file).parts:
            raise StepFailed(f"{module_file} is not the installed wheel's (the source tree leaked in)")
    return py, env


def start_project(workdir: Path, venv: Path, env: dict[str, str], steps: ReadmeSteps) -> Path:
    """``django-admin startproject``, then the README's settings and files applied to it."""
    project = workdir / PROJECT
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir()
    run(
        [str(venv / "bin" / "django-admin"), "startproject", PROJECT, str(project)],
        cwd=workdir,
        env=env,
        what="startproject",
    )
    apply_steps(project, steps, workdir, "README")
    return project


def apply_steps(project: Path, steps: ReadmeSteps, workdir: Path, what: str) -> None:
    """The files of ``steps`` merged into (or written as) the project's, the new ones written."""
    package = project / PROJECT
    for name, code in steps.files.items():
        path = package / name
        if name in steps.whole_files:  # pasted as the whole file, as the README says
            path.write_text(rebase_file_stores(code, workdir))
            log(f"{what}: {PROJECT}/{name} written as the whole file")
            continue
        path.write_text(merge(path.read_text(), rebase_file_stores(code, workdir)))
        log(f"{what} applied to {PROJECT}/{name}")
    for name, code in steps.new_files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
        log(f"{what}: {name} written")


def manage_steps(py: str, project: Path, env: dict[str, str]) -> None:
    """check (clean), settings from the environment, migrate, createsuperuser."""
    manage = [py, "manage.py"]
    # Not a warning (a2a.W040 was one): the first check of a new project says only which
    # system calls its file store makes (from Python: the C companion is not installed).
    checked = run(
        [*manage, "check", "--fail-level", "WARNING"], cwd=project, env=env, what="manage.py check", stderr=True
    )
    said = "?: (stores.I001) file store system calls: Python\n"
    if (
        checked
        != f"System check identified some issues:\n\nINFOS:\n{said}\nSystem check identified 1 issue (0 silenced).\n"
    ):
        raise StepFailed(f"manage.py check of the new project says more than {said!r}:\n{checked}")
    log(f"manage.py check says: {checked.strip()}")
    # Settings from the environment (the README's from_environment() line).
    named = run(
        [*manage, "shell", "-c", "from a2a.conf import a2a_settings; print(a2a_settings.AGENT_NAME)"],
        cwd=project,
        env={**env, "A2A_AGENT_NAME": "named-by-env"},
        what="manage.py shell with A2A_AGENT_NAME in the environment",
    )
    named = named.strip().splitlines()[-1] if named.strip() else ""  # after Django 5.2's "N objects imported"
    if named != "named-by-env":
        raise StepFailed(f"A2A_AGENT_NAME=named-by-env in the environment gave the agent the name {named!r}")
    run([*manage, "migrate", "--noinput"], cwd=project, env=env, what="manage.py migrate")
    admin_env = {
        **env,
        "DJANGO_SUPERUSER_USERNAME": ADMIN_USER,
        "DJANGO_SUPERUSER_PASSWORD": ADMIN_PASSWORD,
        "DJANGO_SUPERUSER_EMAIL": "admin@example.com",
    }
    run([*manage, "createsuperuser", "--noinput"], cwd=project, env=admin_env, what="manage.py createsuperuser")


def refuses_a_broken_handler(py: str, project: Path, env: dict[str, str]) -> None:
    """A configuration error (here an unimportable handler, from the environment) stops
    uvicorn at start-up with the system check's message; it never serves -32603."""
    command = [py, "-m", "uvicorn", f"{PROJECT}.asgi:application", "--host", "127.0.0.1", "--port", str(free_port())]
    broken = subprocess.run(
        command,
        cwd=project,
        env={**env, "A2A_HANDLER": f"{PROJECT}.missing.handle"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    said = broken.stdout + broken.stderr
    if broken.returncode == 0 or f"(a2a.E001) A2A_HANDLER '{PROJECT}.missing.handle' cannot be used" not in said:
        raise StepFailed(f"uvicorn with an unimportable A2A_HANDLER exited with {broken.returncode}:\n{said[-4000:]}")
    log(f"uvicorn with an unimportable A2A_HANDLER: exit {broken.returncode}, with the check's message")


def serve_and_exercise(py: str, project: Path, env: dict[str, str], workdir: Path) -> None:
    """uvicorn serves the project; :func:`exercise` uses it; it stops cleanly."""
    port = free_port()
    server_log = workdir / "uvicorn.log"
    command = [py, "-m", "uvicorn", f"{PROJECT}.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    with open(server_log, "wb") as out:
        proc = subprocess.Popen(command, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        client = Client(f"http://127.0.0.1:{port}")
        started = time.monotonic()
        wait_until_serving(proc, client, server_log)
        log(f"uvicorn serves {PROJECT}.asgi:application on port {port} ({time.monotonic() - started:.1f}s)")
        exercise(client)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    output = server_log.read_text(errors="replace")
    # uvicorn re-raises the SIGTERM it handled once it has shut down: -15 is a clean exit.
    clean = proc.returncode in (0, -signal.SIGTERM) and "Application shutdown complete." in output
    if not clean or "Traceback" in output:
        raise StepFailed(f"the server exited with {proc.returncode} or logged a traceback:\n{output[-4000:]}")
    log("uvicorn stopped cleanly")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter of a new virtualenv (default: this one)")
    parser.add_argument("--venv", type=Path, help="install into this virtualenv (made with --python if missing)")
    parser.add_argument("--django", default="Django~=5.2.0", help="the Django requirement (default: %(default)s)")
    parser.add_argument("--wheel", type=Path, help="the wheel to install (default: build one)")
    parser.add_argument("--workdir", type=Path, help="where the project lives (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="a2a-thirdparty-"))
    started = time.monotonic()
    try:
        wheel = args.wheel or build_dist(workdir / "dist").wheel
        third_party_project(
            workdir.resolve(), (args.venv or workdir / "venv").resolve(), wheel.resolve(), args.django, args.python
        )
    except StepFailed as exc:
        log(f"FAILED: {exc}")
        return 1
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    log(f"passed in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
