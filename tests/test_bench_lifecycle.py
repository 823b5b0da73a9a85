"""``python -m bench.lifecycle --counts``: one task's life and one ``GetTask``, counted in
process (queries, thread jobs), on the default path. The counts are the machine-independent
figures docs/stores.md quotes for the ORM store; these tests pin them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _counts(store: str) -> dict:
    command = [sys.executable, "-m", "bench.lifecycle", "--counts", "--store", store, "--path", "default"]
    done = subprocess.run(
        [*command, "--tasks", "5", "--gets", "5"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_memory_task_makes_no_query_and_its_get_no_thread_job():
    found = _counts("memory")
    assert not any(name.startswith("query") for name in found["per_task"])
    assert found["per_get"].get("job to a thread pool", 0) == 0
    assert found["cpu_ms_per_task"] > 0


@pytest.mark.skipif(not os.environ.get("A2A_TEST_POSTGRES_URL"), reason="A2A_TEST_POSTGRES_URL is not set")
def test_an_orm_task_is_six_queries_and_its_get_one_query_on_one_thread_job():
    found = _counts("orm")
    queries = {name: n for name, n in found["per_task"].items() if name.startswith("query")}
    assert queries == {"query INSERT": 1, "query SELECT": 3, "query UPDATE": 2}
    # the create, the GetTask, and the runner's working save, handler and outcome's save
    # together on the handler's thread: one hop each (no BEGIN, no SAVEPOINT)
    assert found["per_task"]["job to a thread pool"] == 3
    assert found["per_get"]["query SELECT"] == 1
    assert found["per_get"]["job to a thread pool"] == 1
