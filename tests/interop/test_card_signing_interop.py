"""Signed Agent Cards (spec 8.4) against the official A2A Python SDK's signing code
(``a2a.utils.signing`` of a2a-sdk 1.x in .venv-interop, with PyJWT): its verifier
accepts the cards our server signs (the strict v1.0 card, and the card both
generations read, through its v1.0 reading) with an EC and an RSA key, and rejects
them changed; and ``manage.py a2a_card verify`` accepts a card the SDK signed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tests.interop.support import VENV, client_runner
from tests.server import ROOT, running_server, site_env

pytestmark = [pytest.mark.slow, pytest.mark.interop]


def write_keys(tmp: Path, name: str, key) -> tuple[Path, Path]:
    private, public = tmp / f"{name}.pem", tmp / f"{name}.pub.pem"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


@pytest.fixture(scope="module")
def run_sdk(interop_python, tmp_path_factory):
    return client_runner(interop_python, tmp_path_factory.mktemp("signing-clients"))


@pytest.fixture(scope="module", params=["ES256", "RS256"])
def signed_server(request, tmp_path_factory):
    """The site signing its card with an EC P-256 (ES256) or RSA (RS256) key: (base URL, public key, alg)."""
    tmp = tmp_path_factory.mktemp(f"signed-{request.param}")
    key = ec.generate_private_key(ec.SECP256R1()) if request.param == "ES256" else rsa.generate_private_key(65537, 2048)
    private, public = write_keys(tmp, "card", key)
    env = site_env(
        TASK_STORE="memory",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        A2A_CARD_SIGNING_KEY=str(private),
        A2A_CARD_SIGNING_KID="card-key-1",
    )
    with running_server(env, log=tmp / "server.log") as base:
        yield base, public, request.param


@pytest.mark.parametrize("version", ["", "1.0"], ids=["both-generations-card", "strict-v1.0-card"])
def test_the_sdk_verifier_accepts_our_signed_card_and_rejects_it_changed(run_sdk, signed_server, version):
    base, public, alg = signed_server
    observed = run_sdk("sdk_card_signing.py", base, "verify", "--key", str(public), "--alg", alg, "--version", version)
    assert observed["module"].startswith(str(VENV))  # the SDK's own signing module
    assert observed["verified"] is True
    assert observed["name"] == "toolnexus-agent"
    assert observed["signatures"] == (1 if version == "1.0" else 2)
    assert set(observed["kids"]) == {"card-key-1"}
    assert observed["tampered"] == "rejected"


def test_our_verify_command_accepts_a_card_the_sdk_signed(run_sdk, tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = write_keys(tmp_path, "sdk", key)
    card = {
        "name": "Ünïcode agent ✓",
        "description": "signed by the SDK",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}],
    }
    (tmp_path / "card.json").write_text(json.dumps(card))
    out = tmp_path / "signed.json"
    observed = run_sdk(
        "sdk_card_signing.py", "-", "sign", "--key", str(private), "--card", str(tmp_path / "card.json"),
        "--out", str(out),
    )  # fmt: skip
    assert observed["signatures"] == 1

    def verify(path: Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "manage.py", "a2a_card", "verify", str(path), "--key", str(public)]
        return subprocess.run(command, cwd=ROOT, env=site_env(), capture_output=True, text=True, timeout=60)

    ok = verify(out)
    assert ok.returncode == 0, ok.stderr
    assert "valid (covers the card)" in ok.stdout
    changed = json.loads(out.read_text())
    changed["capabilities"]["pushNotifications"] = True
    (tmp_path / "changed.json").write_text(json.dumps(changed))
    bad = verify(tmp_path / "changed.json")
    assert bad.returncode == 1
    assert "INVALID" in bad.stdout
