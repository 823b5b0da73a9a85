"""Start the real site under a real ASGI server on a free loopback port (for the
end-to-end tests and the benchmarks)."""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests import server_logs
from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
#: Seconds a server may take to start. A server that cannot start exits (and says so at
#: once); the bound is for one that hangs, so it is generous for a loaded machine (a
#: framework agent's imports alone took 20 s with both cores busy elsewhere).
START_BOUND = 60


def site_env(**overrides: str) -> dict[str, str]:
    """The environment of a site process: this one's, with the site's settings. The
    site's framework agents are left out (``FRAMEWORK_AGENTS=false``, as ``make run``
    serves it) unless ``overrides`` asks for them: loading three frameworks made every
    server's start several times slower on a busy machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("A2A_", "TASK_STORE", "DATABASE_URL"))}
    env.update(DJANGO_SETTINGS_MODULE="toolnexus_site.settings", PYTHONPATH=str(ROOT), FRAMEWORK_AGENTS="false")
    env.update(overrides)
    return env


@contextlib.contextmanager
def scripted_site(tmp: Path, store: str = "memory", **settings: str) -> Iterator[ServerURL]:
    """The site under uvicorn with ``tests.handlers.scripted`` (a message's text scripts
    the task), on ``store``, its database and log in ``tmp``; ``settings`` more of its
    environment."""
    env = site_env(
        TASK_STORE=store,
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        A2A_HANDLER="tests.handlers.scripted",
        **settings,
    )
    with running_server(env, log=tmp / "server.log") as base:
        yield base


def manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env=env, check=True, cwd=ROOT, capture_output=True)


@contextlib.contextmanager
def command_process(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``manage.py`` with ``args`` on the test settings, unbuffered, its output piped as
    text; killed at the end if it still runs."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


class ServerURL(str):
    """The base URL of a running server; ``.pid`` is the server process (``.process``)."""

    pid: int
    process: subprocess.Popen


def uvicorn_command(port: int, *options: str) -> list[str]:
    """The command that serves the example site with uvicorn on 127.0.0.1:``port``
    (``options``: uvicorn's own)."""
    app = "toolnexus_site.asgi:application"
    return [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port), *options]


@contextlib.contextmanager
def running_server(
    env: dict[str, str],
    *,
    workers: int = 1,
    log: Path | None = None,
    nofile: tuple[int, int] | None = None,
    http: str = "a2a.http.protocol:HttpToolsProtocol",
    port: int | None = None,
) -> Iterator[ServerURL]:
    """Serve the site with uvicorn as ``make run`` does; yield its base URL; stop it
    with SIGTERM (graceful). ``nofile``: the (soft, hard) open-file limit it starts with;
    ``port``: the one to listen on (a restarted server's, that its clients reach again)."""
    port = port or free_port()
    command = uvicorn_command(port, "--workers", str(workers), "--no-access-log", "--loop", "uvloop", "--http", http)
    with running_process(command, port, env=env, cwd=ROOT, log=log, nofile=nofile) as base:
        yield base


@contextlib.contextmanager
def running_process(
    command: list[str],
    port: int,
    *,
    env: dict[str, str],
    cwd: Path,
    log: Path | None = None,
    ready_path: str = "/.well-known/agent-card.json",
    nofile: tuple[int, int] | None = None,
) -> Iterator[ServerURL]:
    """Start a server process listening on ``port``; yield its base URL once
    ``ready_path`` answers 200; stop it with SIGTERM (graceful). Its output goes to
    ``log`` (by default a temporary file), which a failed test's report shows
    (:mod:`tests.server_logs`)."""
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-server-"))) / "output.log"
        stack.callback(server_logs.stopped, server_logs.started(f"port {port} ({log})", log))
        out = stack.enter_context(open(log, "ab"))
        limit_files = functools.partial(resource.setrlimit, resource.RLIMIT_NOFILE, nofile) if nofile else None
        proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, preexec_fn=limit_files)
        stack.callback(_stop, proc)  # registered last: stopped before its output is closed and read
        base = ServerURL(f"http://127.0.0.1:{port}")
        base.pid, base.process = proc.pid, proc
        deadline = time.monotonic() + START_BOUND
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}:\n{server_logs.tail(log, 30)}")
            try:
                if httpx.get(f"{base}{ready_path}", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start within {START_BOUND}s")
            time.sleep(0.05)
        yield base


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (graceful), then SIGKILL after 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def postgres_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A database of its own on the PostgreSQL server of ``admin_url`` (named
    ``<prefix>_<random>``), dropped afterwards: the URL to reach it."""
    import uuid

    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        for attempt in (1, 2):  # a connection another test's clean-up terminated: once more
            try:
                with psycopg.connect(admin_url, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                break
            except psycopg.OperationalError:
                if attempt == 2:
                    raise
                time.sleep(0.5)
