"""A 50 MB file part in and out of a real server (uvicorn), its peak RSS measured: the
part is written to the storage and downloaded in chunks, so the server holds the JSON
body while it parses it, not the file again on the way out."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import httpx
import pytest

from a2a.testing.client import rpc_body
from tests.server import manage, running_server, site_env

pytestmark = pytest.mark.slow

PART = 50 * 1024 * 1024
MIB = 1024 * 1024


def peak_rss(pid: int) -> int:
    """The process's peak resident set size (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_a_50_mb_part_in_and_out_with_bounded_rss(tmp_path):
    env = site_env(
        TASK_STORE=f"file:{tmp_path / 'tasks'}",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        MEDIA_ROOT=str(tmp_path / "media"),
        A2A_HANDLER="tests.handlers.digest",
        A2A_INPUT_MODES="text/plain,application/octet-stream",
        A2A_MAX_BODY_BYTES=str(80 * MIB),
    )
    manage("migrate", "--noinput", env=env)
    content = os.urandom(PART)
    part = {"raw": base64.b64encode(content).decode(), "mediaType": "application/octet-stream", "filename": "big.bin"}
    message = {"messageId": "m-50mb", "role": "ROLE_USER", "parts": [part]}
    body = json.dumps(rpc_body("SendMessage", {"message": message})).encode()
    del part, message
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    with running_server(env, log=tmp_path / "server.log") as base, httpx.Client(timeout=120) as http:
        small = {"messageId": "m-small", "role": "ROLE_USER", "parts": [{"text": "warm up"}]}
        warm = rpc_body("SendMessage", {"message": small}, 0)
        assert "result" in http.post(f"{base}/a2a/", json=warm, headers=headers).json()
        idle = peak_rss(base.pid)
        answer = http.post(f"{base}/a2a/", content=body, headers=headers).json()
        task = answer["result"]["task"]
        url = task["history"][0]["parts"][0]["url"]
        assert url.startswith(f"{base}/a2a/files/{task['id']}/")
        done = http.post(f"{base}/a2a/", json={**warm, "method": "GetTask", "params": {"id": task["id"]}}).json()
        digest = hashlib.sha256(content).hexdigest()
        assert f"{digest} {PART}" in json.dumps(done["result"])  # the handler read it from the storage
        peak = peak_rss(base.pid)
    # A new server over the same tasks and files: the download alone, its RSS measured too.
    with running_server(env, log=tmp_path / "server.log") as base, httpx.Client(timeout=120) as http:
        url = url.replace(url.split("/a2a/")[0], str(base))
        assert http.get(url.replace("/files/", "/files/x")).status_code == 404
        idle_out = peak_rss(base.pid)
        assert download(http, url) == (digest, PART)
        peak_out = peak_rss(base.pid)
    print(f"in: idle peak RSS {idle / MIB:.0f} MiB, after the 50 MiB part {peak / MIB:.0f} MiB")
    print(f"out: idle peak RSS {idle_out / MIB:.0f} MiB, after downloading it {peak_out / MIB:.0f} MiB")
    # In: the JSON body (67 MiB of base64) is held while it is read and parsed (measured:
    # about 4 times the part over idle); out: the file never is (measured: about 1 MiB).
    assert peak - idle < 5 * PART
    assert peak_out - idle_out < 16 * MIB


def download(http: httpx.Client, url: str) -> tuple[str, int]:
    """The SHA-256 and size of the file at ``url``, streamed."""
    sha, size = hashlib.sha256(), 0
    with http.stream("GET", url) as response:
        assert response.status_code == 200, response.read()
        for chunk in response.iter_bytes():
            sha.update(chunk)
            size += len(chunk)
    assert response.headers["content-length"] == str(size)
    return sha.hexdigest(), size
