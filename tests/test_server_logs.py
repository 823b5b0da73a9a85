"""A failed test's report shows what the servers it started printed (tests.server_logs)."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from tests import server_logs
from tests.ports import free_port
from tests.server import ROOT, running_process

pytestmark = pytest.mark.slow


def http_server(port: int) -> list[str]:
    return [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]


def test_a_servers_output_is_shown_while_it_runs_and_kept_once_it_stopped_until_the_next_test(tmp_path):
    port = free_port()
    with running_process(http_server(port), port, env=dict(os.environ), cwd=tmp_path, ready_path="/") as base:
        assert httpx.get(f"{base}/no-such-file").status_code == 404
        assert any('"GET /no-such-file HTTP/1.1" 404' in text for _, text in server_logs.sections())
    assert any("/no-such-file" in text for _, text in server_logs.sections())  # stopped in this test
    server_logs.begin_test()
    assert not any("/no-such-file" in text for _, text in server_logs.sections())


def test_a_failed_tests_report_has_a_section_with_its_servers_output(tmp_path):
    (tmp_path / "test_failing.py").write_text(
        "import os, sys, httpx\n"
        "from tests.ports import free_port\n"
        "from tests.server import running_process\n"
        "def test_it(tmp_path):\n"
        "    port = free_port()\n"
        "    command = [sys.executable, '-m', 'http.server', str(port), '--bind', '127.0.0.1']\n"
        "    with running_process(command, port, env=dict(os.environ), cwd=tmp_path, ready_path='/') as base:\n"
        "        httpx.get(f'{base}/what-the-server-saw')\n"
        "        assert False, 'the test failed'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.server_logs", "-p", "no:django", "-p", "no:randomly",
         "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_failing.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "server output: port" in done.stdout
    assert '"GET /what-the-server-saw HTTP/1.1" 404' in done.stdout
