"""A burst right after a server starts, on every store, over several cold starts: no
task waits longer than its handler takes. The first tasks of a fresh process used to
sit ``submitted`` until their lease ran out, leased under an owner name a racing
thread had minted (a2a.core.leases)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from a2a.testing.client import rpc_body
from tests.conftest import STORE_KINDS
from tests.server import manage, postgres_database, running_server, site_env

pytestmark = pytest.mark.slow

COLD_STARTS = 3
BURST = 12
#: The lease a stuck task would wait out before it ran.
LEASE_SECONDS = 60
#: What each blocking call may take: its handler sleeps 0.2 s; a loaded machine gets a
#: lot more, and still far less than the lease a stuck task waits out.
BOUND = LEASE_SECONDS / 3


@contextlib.contextmanager
def site_database(kind: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The TASK_STORE and DATABASE_URL of a site on store ``kind``."""
    sqlite = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    if kind == "orm-postgres":
        with postgres_database(settings.POSTGRES_URL, "a2a_cold_start") as url:
            yield "orm", url
        return
    yield {"memory": "memory", "file": f"file:{tmp_path / 'tasks'}", "orm-sqlite": "orm"}[kind], sqlite


def blocking_send(endpoint: str, text: str) -> tuple[float, str]:
    """SendMessage (blocking): how long it took, and the state it answered."""
    message = {"role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": text}]}
    params = {"message": message, "configuration": {"blocking": True}}
    body = rpc_body("message/send", params)
    began = time.monotonic()
    answer = httpx.post(endpoint, json=body, timeout=3 * LEASE_SECONDS).json()
    return time.monotonic() - began, answer["result"]["status"]["state"]


def burst(endpoint: str) -> list[tuple[float, str]]:
    """:data:`BURST` blocking calls released at once, each a task whose handler sleeps 0.2 s."""
    barrier = threading.Barrier(BURST)

    def send(n: int) -> tuple[float, str]:
        barrier.wait()
        return blocking_send(endpoint, f"sleep:0.2;n{n}")

    with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
        return list(pool.map(send, range(BURST)))


#: The site's file store takes its backend as a new project's does ("auto": the C
#: companion where installed): one file kind, not one per backend.
SITE_KINDS = [kind for kind in STORE_KINDS if kind != "file-c"]


@pytest.mark.parametrize("kind", SITE_KINDS)
def test_a_burst_right_after_start_waits_for_no_lease(kind, tmp_path):
    with site_database(kind, tmp_path) as (store, database_url):
        env = site_env(
            TASK_STORE=store,
            DATABASE_URL=database_url,
            A2A_HANDLER="tests.handlers.scripted",
            A2A_LEASE_SECONDS=str(LEASE_SECONDS),
        )
        if store == "orm":
            manage("migrate", "--noinput", env=env)
        for start in range(COLD_STARTS):
            log = tmp_path / f"server-{start}.log"
            with running_server(env, log=log) as base:
                answers = burst(httpx.get(f"{base}/.well-known/agent-card.json", timeout=10).json()["url"])
            said = log.read_text()
            assert [state for _, state in answers] == ["completed"] * BURST, (start, answers)
            assert max(took for took, _ in answers) < BOUND, (start, answers)
            assert "lost its lease" not in said and "not started here" not in said, (start, said[-3000:])
