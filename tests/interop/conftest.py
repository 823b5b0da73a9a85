"""The interop tests' fixtures: the clients' venvs, the webhook receiver, the site under uvicorn."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.interop.support import HERE, VENV, VENV03, Receiver, client_runner, server_env
from tests.ports import free_port
from tests.server import running_server

# --- the interop venv and the clients ---------------------------------------------------------


def built_venv(venv: Path, requirements: str | None = None) -> Path:
    """``venv``'s Python, the venv built (or brought up to date) first from
    ``requirements`` (tests/interop/requirements.txt by default): the setup script is
    idempotent and returns at once when the venv is current."""
    command = ["bash", str(HERE / "setup-venv.sh"), str(venv), *([str(HERE / requirements)] if requirements else [])]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=900)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"could not build {venv}:\n{exc.stdout}\n{exc.stderr}")
    return venv / "bin" / "python"


@pytest.fixture(scope="session")
def interop_python() -> Path:
    """The interop venv's Python (the official a2a-sdk, toolnexus)."""
    return built_venv(VENV)


@pytest.fixture(scope="session")
def interop03_python() -> Path:
    """.venv-interop03's Python (a2a-sdk 0.3)."""
    return built_venv(VENV03, "requirements-v03.txt")


@pytest.fixture(scope="session")
def node() -> Path:
    """Node.js, tests/interop/js's packages installed first (setup-node.sh: ``npm ci``,
    idempotent). The tests that need it skip only when the machine has no node or npm."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js (node and npm) is not installed: the JavaScript SDK's interop tests need it")
    try:
        subprocess.run(["bash", str(HERE / "setup-node.sh")], check=True, capture_output=True, text=True, timeout=900)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"could not install tests/interop/js:\n{exc.stdout}\n{exc.stderr}")
    return Path(node)


@pytest.fixture(scope="session")
def run_js(node):
    """Run tests/interop/js/client.mjs (the official A2A JavaScript SDK): ``run(base_url,
    scenario, *options)`` returns the JSON it printed; see :func:`client_runner`."""
    return client_runner(node, HERE / "js", script_dir=HERE / "js")  # cwd: its node_modules


@pytest.fixture(scope="session")
def run_client(interop_python, tmp_path_factory):
    """Run a client of .venv-interop (a2a-sdk 1.x, toolnexus): see :func:`client_runner`."""
    return client_runner(interop_python, tmp_path_factory.mktemp("clients"))  # no module of ours shadows theirs


@pytest.fixture(scope="session")
def run_client03(interop03_python, tmp_path_factory):
    """Run a client of .venv-interop03 (a2a-sdk 0.3): see :func:`client_runner`."""
    return client_runner(interop03_python, tmp_path_factory.mktemp("clients03"))


@pytest.fixture(scope="module")
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The site on the memory store, with the gRPC binding beside it in the same
    process (A2A_GRPC_IN_ASGI), advertised on the card (A2A_GRPC_URL)."""
    tmp = tmp_path_factory.mktemp("interop")
    grpc_address = f"127.0.0.1:{free_port()}"
    env = {
        **server_env(tmp, "memory"),
        "A2A_GRPC_IN_ASGI": "true",
        "A2A_GRPC_ADDRESS": grpc_address,
        "A2A_GRPC_URL": grpc_address,
    }
    with running_server(env, log=tmp / "server.log") as base:
        base.log = tmp / "server.log"
        yield base


@pytest.fixture(scope="module")
def file_server(tmp_path_factory):
    """The site on the file store: ``(base URL, tasks directory)``."""
    tmp = tmp_path_factory.mktemp("interop-file")
    tasks = tmp / "tasks"
    with running_server(server_env(tmp, f"file:{tasks}"), log=tmp / "server.log") as base:
        base.log = tmp / "server.log"
        yield base, tasks
