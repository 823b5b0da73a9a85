"""kill -9 during large uploads (a real server, uvicorn): what the kills leave in the
storage, then ``manage.py a2a_repair`` leaves no file a task does not reference, and no
task references a partial file.

Each round starts the server, has clients send messages of several offloaded file parts
and kills the server (SIGKILL) at a random moment of the load. The storage is then
checked against the stored tasks, read straight from the store (the task files, the
PostgreSQL rows): a file is reachable when the task of its directory names its key.
The server's own orphan sweep is off, so the counts are the kills' and the repair's::

    A2A_FILES_CRASH_STORES=file,orm-postgres A2A_FILES_CRASH_ROUNDS=6 pytest tests/test_files_crash.py -s
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest

from a2a.testing.client import rpc_body
from tests.server import ROOT, manage, running_server, site_env

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("A2A_FILES_CRASH_SEED", "20261202"))
ROUNDS = int(os.environ.get("A2A_FILES_CRASH_ROUNDS", "4"))
STORES = os.environ.get("A2A_FILES_CRASH_STORES", "file,orm-postgres").split(",")
PART = 3 * 1024 * 1024  # over the 1 MiB offload size: each part is written to the storage
PARTS = 3
CLIENTS = 3
MIB = 1024 * 1024
PLACEHOLDER = b"MESSAGE-ID-PLACEHOLDER"


def bodies(rng: random.Random) -> list[bytes]:
    """A few SendMessage bodies of PARTS file parts each (the message id replaced per send)."""
    made = []
    for _ in range(2):
        parts = [
            {"raw": base64.b64encode(rng.randbytes(PART)).decode(), "filename": f"part{n}.bin"} for n in range(PARTS)
        ]
        message = {"messageId": PLACEHOLDER.decode(), "role": "ROLE_USER", "parts": parts}
        params = {"message": message, "configuration": {"blocking": False}}
        made.append(json.dumps(rpc_body("SendMessage", params)).encode())
    return made


class Uploads:
    """CLIENTS threads sending large messages until stopped (or the server dies)."""

    def __init__(self, base: str, templates: list[bytes]) -> None:
        self.endpoint, self.templates = f"{base}/a2a/", templates
        self.stop, self.answered = threading.Event(), []
        self.threads = [threading.Thread(target=self.client, args=(n,)) for n in range(CLIENTS)]

    def __enter__(self) -> Uploads:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)

    def client(self, n: int) -> None:
        headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        with httpx.Client(timeout=30) as http:
            while not self.stop.is_set():
                body = self.templates[n % len(self.templates)].replace(PLACEHOLDER, uuid.uuid4().hex.encode())
                try:
                    if "result" in http.post(self.endpoint, content=body, headers=headers).json():
                        self.answered.append(n)
                except httpx.HTTPError:
                    return  # killed


def site(store: str, tmp_path: Path, database_url: str) -> tuple[dict[str, str], object]:
    """The server's environment, and a reader of the stored tasks (id -> raw JSON)."""
    common = dict(
        MEDIA_ROOT=str(tmp_path / "media"),
        A2A_HANDLER="tests.handlers.digest",
        A2A_INPUT_MODES="text/plain,application/octet-stream",
        A2A_MAX_BODY_BYTES=str(64 * MIB),
        A2A_FILES_ORPHAN_INTERVAL="0",  # the repair's work, counted
        A2A_LOG_LEVEL="WARNING",
        A2A_SHUTDOWN_GRACE="0",
    )
    if store == "file":
        directory = tmp_path / "tasks"
        env = site_env(TASK_STORE=f"file:{directory}", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", **common)

        def tasks() -> dict[str, str]:
            found = {}
            for path in directory.glob("*.json"):
                text = path.read_text()
                found[json.loads(text)["id"]] = text
            return found

        return env, tasks
    env = site_env(TASK_STORE="orm", DATABASE_URL=database_url, **common)

    def rows() -> dict[str, str]:
        with psycopg.connect(database_url) as conn:
            return {i: json.dumps(t) for i, t in conn.execute("SELECT id, task FROM stores_taskrecord")}

    return env, rows


@pytest.fixture(params=STORES)
def store(request) -> str:
    return request.param


def unreachable(media: Path, tasks: dict[str, str]) -> tuple[list[Path], list[Path], int]:
    """The stored files no stored task names (orphans), those of them partial, and the
    files tasks name (each checked whole: a task never names a partial file)."""
    orphans, partial, reachable = [], [], 0
    for path in sorted(media.glob("a2a-files/*/*")):
        if path.name in tasks.get(path.parent.name, ""):
            assert path.stat().st_size == PART, f"a task references a partial file: {path}"
            reachable += 1
            continue
        orphans.append(path)
        if path.stat().st_size != PART:
            partial.append(path)
    return orphans, partial, reachable


def repair(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "a2a_repair", "--file-age", "0", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stderr


def test_kill_9_during_uploads_then_repair_leaves_no_unreachable_file(store, tmp_path, database_url):
    started = time.monotonic()
    rng = random.Random(SEED)
    env, stored_tasks = site(store, tmp_path, database_url)
    manage("migrate", "--noinput", env=env)
    templates = bodies(rng)
    media, sent, rounds = tmp_path / "media", 0, 0
    # ROUNDS kills, more (up to 3 times as many) until one lands between a write and its save
    while rounds < ROUNDS or (rounds < 3 * ROUNDS and not unreachable(media, stored_tasks())[0]):
        rounds += 1
        with running_server(env, log=tmp_path / "server.log") as base:
            httpx.post(f"{base}/a2a/", json=rpc_body("GetTask", {"id": "warm"}, 0))
            with Uploads(base, templates) as uploads:
                time.sleep(rng.uniform(1.0, 3.0))  # a kill at a random moment of the uploads
                os.kill(base.pid, signal.SIGKILL)
            sent += len(uploads.answered)
    orphans, partial, reachable = unreachable(media, stored_tasks())
    listed = repair(env, "--dry-run")
    assert f"Would remove {len(orphans)} stored file(s)" in listed, listed
    repaired = repair(env)
    after, _partial, still_reachable = unreachable(media, stored_tasks())
    print(
        f"\n{store}: {rounds} kill -9 rounds, {sent} uploads answered, {len(orphans)} orphans "
        f"({len(partial)} partial) and {reachable} reachable files before the repair; "
        f"{len(after)} orphans and {still_reachable} reachable after ({time.monotonic() - started:.1f} s)"
    )
    assert orphans, "no kill landed between a file's write and its task's save: nothing was tested"
    assert "Removed" in repaired and after == [] and still_reachable == reachable
    assert [d for d in (media / "a2a-files").iterdir() if not any(d.iterdir())] == []  # no empty directory
