"""Signed push notifications (a2a.push.tokens): each delivery's JWT, verified with PyJWT from
the agent's JWK Set URL and with ``a2a.push.verify_notification``; what the helper refuses
(a tampered body, an expired token, another audience, an unknown key, no token); the JWK Set
per agent and during a key rotation; the checks."""

from __future__ import annotations

import hashlib
import io
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from django.core.management import call_command

from a2a import push
from a2a.ops.checks import check_agents, check_card_signing
from a2a.protocol import signing
from a2a.push import NotificationVerificationError, tokens, verify_notification
from tests.helpers import call
from tests.keys import pem, public_pem
from tests.push.support import DIALECTS, V03, V10, task_with_push

KEY = ec.generate_private_key(ec.SECP256R1())
OLD_KEY = ec.generate_private_key(ec.SECP256R1())
AGENT_KEY = ed25519.Ed25519PrivateKey.generate()
JWKS = "/.well-known/jwks.json"
HOOK = "https://hooks.example.com/a2a"


@pytest.fixture
def signing_key(settings):
    settings.A2A_CARD_SIGNING_KEY = pem(KEY)
    settings.A2A_CARD_SIGNING_KID = "push-1"


@pytest.fixture
def jwks_url(signing_key) -> Iterator[str]:
    """A loopback URL serving the agent's /.well-known/jwks.json (the view's answer, as is)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = call("GET", JWKS)
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers["content-type"])
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}{JWKS}"
    server.shutdown()
    server.server_close()


def a_token(body: bytes = b'{"id": "t-1"}', *, audience: str = HOOK, **kwargs: Any) -> str:
    token = tokens.issue(None, task_id="t-1", audience=audience, body=body, **kwargs)
    assert token is not None
    return token


def the_jwks() -> dict:
    answer = call("GET", JWKS)
    assert answer.status_code == 200, answer.text
    return answer.json()


# === on the wire ==========================================================================


@pytest.mark.parametrize("version", DIALECTS)
def test_a_webhooks_jwt_verifies_with_pyjwt_from_the_jwks_url(memory, receiver, jwks_url, version):
    task = task_with_push(version, {"url": receiver.url(), "token": "tok-1"})
    receiver.wait_for(2)
    assert push.wait_idle()
    client = jwt.PyJWKClient(jwks_url)
    tokens_seen = set()
    for hit in receiver.hits:
        token = hit.headers["x-a2a-notification-signature"]
        assert hit.headers["authorization"] == f"Bearer {token}"  # the spec's example: no credentials of its own
        assert hit.headers["x-a2a-notification-token"] == "tok-1"  # the config's token stays
        header = jwt.get_unverified_header(token)
        assert header == {"alg": "ES256", "typ": "JWT", "kid": "push-1"}
        claims = jwt.decode(
            token,
            client.get_signing_key_from_jwt(token).key,
            algorithms=["ES256"],
            audience=receiver.url(),
            options={"require": ["exp", "iat", "jti"]},
        )
        assert claims["taskId"] == task["id"]
        assert claims["request_body_sha256"] == hashlib.sha256(hit.raw).hexdigest()
        assert 0 < claims["exp"] - claims["iat"] <= 300
        assert verify_notification(hit.raw, hit.headers, jwks=jwks_url, audience=receiver.url()) == claims
        tokens_seen.add(claims["jti"])
    assert len(tokens_seen) == len(receiver.hits)  # one token per request


def test_a_configs_own_credentials_keep_authorization(memory, receiver, signing_key):
    config = {"url": receiver.url(), "authentication": {"scheme": "Basic", "credentials": "dTpw"}}
    task_with_push(V10, config)
    receiver.wait_for(1)
    assert push.wait_idle()
    for hit in receiver.hits:
        assert hit.headers["authorization"] == "Basic dTpw"
        claims = verify_notification(hit.raw, hit.headers, jwks=the_jwks(), audience=receiver.url())
        assert claims["aud"] == receiver.url()


@pytest.mark.parametrize(
    ("version", "authentication", "bearer"),
    [
        (V10, {"scheme": "Bearer"}, True),  # no credentials of its own: the JWT is its Bearer token
        (V10, {"scheme": "bearer"}, True),  # scheme names are case-insensitive (RFC 9110 11.1)
        (V10, {"scheme": "Basic"}, False),  # (it was sent "Bearer <jwt>", a scheme it did not ask for)
        (V03, {"schemes": ["Basic", "Bearer"]}, True),
        (V03, {"schemes": ["Basic"]}, False),
    ],
)
def test_a_scheme_without_credentials_takes_the_jwt_only_if_bearer(
    memory, receiver, signing_key, version, authentication, bearer
):
    task_with_push(version, {"url": receiver.url(), "authentication": authentication})
    receiver.wait_for(1)
    assert push.wait_idle()
    for hit in receiver.hits:
        token = hit.headers["x-a2a-notification-signature"]  # signed all the same
        assert hit.headers.get("authorization") == (f"Bearer {token}" if bearer else None)
        assert verify_notification(hit.raw, hit.headers, jwks=the_jwks(), audience=receiver.url())


def test_without_a_key_nothing_is_signed(memory, receiver):
    task_with_push(V10, {"url": receiver.url()})
    receiver.wait_for(1)
    assert push.wait_idle()
    for hit in receiver.hits:
        assert "x-a2a-notification-signature" not in hit.headers
        assert "authorization" not in hit.headers
    assert call("GET", JWKS).status_code == 404
    with pytest.raises(NotificationVerificationError, match="no JWT"):
        verify_notification(receiver.hits[0].raw, receiver.hits[0].headers, jwks={"keys": []}, audience=None)


def test_iss_and_jku_name_the_agent_under_a_public_url(settings, signing_key):
    settings.A2A_PUBLIC_URL = "https://agent.example.com"
    token = a_token()
    assert jwt.get_unverified_header(token)["jku"] == "https://agent.example.com/.well-known/jwks.json"
    claims = verify_notification(
        b'{"id": "t-1"}',
        token=token,
        jwks=the_jwks(),
        audience=HOOK,
        issuer="https://agent.example.com/.well-known/agent-card.json",
    )
    assert claims["iss"] == "https://agent.example.com/.well-known/agent-card.json"


# === what the helper refuses ===============================================================


def test_a_tampered_body_is_refused(signing_key):
    token = a_token(b'{"state": "working"}')
    with pytest.raises(NotificationVerificationError, match="request_body_sha256"):
        headers = {"Authorization": f"Bearer {token}"}
        verify_notification(b'{"state": "completed"}', headers, jwks=the_jwks(), audience=HOOK)


def test_an_expired_token_is_refused(signing_key, settings):
    settings.A2A_PUSH_TOKEN_LIFETIME = 60
    token = a_token(now=time.time() - 120)
    with pytest.raises(NotificationVerificationError, match="expired"):
        verify_notification(b'{"id": "t-1"}', token=token, jwks=the_jwks(), audience=HOOK)
    assert verify_notification(b'{"id": "t-1"}', token=token, jwks=the_jwks(), audience=HOOK, leeway=90)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"audience": "https://evil.example.com/hook"}, "Audience doesn't match"),
        ({"issuer": "https://another.example.com"}, "Invalid issuer"),
        ({"jwks": {"keys": []}}, "no key with kid 'push-1'"),
    ],
)
def test_another_audience_issuer_or_key_set_is_refused(signing_key, change, reason):
    arguments = {"token": a_token(), "jwks": the_jwks(), "audience": HOOK, **change}
    with pytest.raises(NotificationVerificationError, match=reason):
        verify_notification(b'{"id": "t-1"}', **arguments)


def test_a_token_signed_by_another_key_under_the_same_kid_is_refused(signing_key):
    forged = jwt.encode(
        {"aud": HOOK, "iat": int(time.time()), "exp": int(time.time()) + 60, "request_body_sha256": "x"},
        ec.generate_private_key(ec.SECP256R1()),
        algorithm="ES256",
        headers={"kid": "push-1"},
    )
    with pytest.raises(NotificationVerificationError, match="Signature verification failed"):
        verify_notification(b"x", token=forged, jwks=the_jwks(), audience=HOOK)


def test_only_the_keys_algorithm_is_accepted(signing_key):
    secret = "an HMAC secret an attacker chose"
    forged = jwt.encode({"aud": HOOK, "exp": 2**40, "iat": 1}, secret, algorithm="HS256", headers={"kid": "push-1"})
    with pytest.raises(NotificationVerificationError, match="refused"):
        verify_notification(b"x", token=forged, jwks=the_jwks(), audience=HOOK)


def test_a_token_without_kid_or_unreadable_is_refused(signing_key):
    no_kid = jwt.encode({"exp": 2**40}, KEY, algorithm="ES256")
    with pytest.raises(NotificationVerificationError, match="no kid"):
        verify_notification(b"x", token=no_kid, jwks=the_jwks(), audience=HOOK)
    with pytest.raises(NotificationVerificationError, match="unreadable"):
        verify_notification(b"x", {"X-A2A-Notification-Signature": "not.a.jwt"}, jwks=the_jwks(), audience=HOOK)


# === the JWK Set: per agent, during a rotation ===============================================


def test_the_jwks_holds_the_key_then_the_previous_ones(settings, signing_key):
    settings.A2A_CARD_SIGNING_PREVIOUS_KEYS = [public_pem(OLD_KEY), public_pem(KEY)]  # its own key: once
    answer = call("GET", JWKS)
    assert answer.headers["content-type"] == "application/jwk-set+json"
    assert "max-age" in answer.headers["cache-control"]
    keys = answer.json()["keys"]
    assert keys[0]["kid"] == "push-1"
    assert len(keys) == 3 and all(k["use"] == "sig" and k["alg"] == "ES256" and "d" not in k for k in keys)
    assert call("POST", JWKS).status_code == 405


def test_a_rotation_keeps_the_old_tokens_verifiable(settings):
    settings.A2A_CARD_SIGNING_KEY = pem(OLD_KEY)
    settings.A2A_CARD_SIGNING_KID = "2026-01"
    old_token = a_token()
    settings.A2A_CARD_SIGNING_KEY = pem(KEY)
    settings.A2A_CARD_SIGNING_KID = "2026-02"
    new_token = a_token()
    assert jwt.get_unverified_header(new_token)["kid"] == "2026-02"
    with pytest.raises(NotificationVerificationError, match="no key with kid '2026-01'"):
        verify_notification(b'{"id": "t-1"}', token=old_token, jwks=the_jwks(), audience=HOOK)
    # the old key's public half as a JWK (its kid kept), published beside the new one
    settings.A2A_CARD_SIGNING_PREVIOUS_KEYS = [json.dumps(signing.public_jwk(OLD_KEY.public_key(), kid="2026-01"))]
    key_set = the_jwks()
    assert [k["kid"] for k in key_set["keys"]] == ["2026-02", "2026-01"]
    for token in (old_token, new_token):
        assert verify_notification(b'{"id": "t-1"}', token=token, jwks=key_set, audience=HOOK)["taskId"] == "t-1"


def test_each_agent_signs_with_its_own_key(settings, signing_key):
    settings.A2A_AGENTS = {"billing": {"CARD_SIGNING_KEY": pem(AGENT_KEY), "CARD_SIGNING_KID": "billing-1"}}
    agent_jwks = call("GET", "/agents/billing/.well-known/jwks.json").json()
    assert [(k["kid"], k["alg"]) for k in agent_jwks["keys"]] == [("billing-1", "EdDSA")]
    token = tokens.issue("billing", task_id="t-2", audience=HOOK, body=b"{}")
    assert token is not None and jwt.get_unverified_header(token)["alg"] == "EdDSA"
    assert verify_notification(b"{}", token=token, jwks=agent_jwks, audience=HOOK)["iss"] == "billing"
    with pytest.raises(NotificationVerificationError, match="no key with kid 'billing-1'"):
        verify_notification(b"{}", token=token, jwks=the_jwks(), audience=HOOK)  # the default agent's set


# === checks ==================================================================================


def test_checks_refuse_an_unreadable_previous_key(settings, signing_key):
    assert check_card_signing() == []
    settings.A2A_CARD_SIGNING_PREVIOUS_KEYS = ["-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n"]
    messages = check_card_signing()
    assert [m.id for m in messages] == ["a2a.E080"]
    assert "A2A_CARD_SIGNING_PREVIOUS_KEYS" in messages[0].msg
    settings.A2A_CARD_SIGNING_KEY = ""
    assert check_card_signing() == []  # nothing is published without a key: nothing to read


def test_an_agents_own_unusable_key_is_reported_with_its_name(settings):
    settings.A2A_AGENTS = {"billing": {"CARD_SIGNING_KEY": "/nonexistent/key.pem"}}
    messages = [m for m in check_agents() if m.id == "a2a.E080"]
    assert len(messages) == 1 and "billing" in messages[0].msg, messages


def test_an_agents_card_is_signed_with_its_own_key(settings, signing_key):
    settings.A2A_AGENTS = {"billing": {"CARD_SIGNING_KEY": pem(AGENT_KEY), "CARD_SIGNING_KID": "billing-1"}}
    card = call("GET", "/agents/billing/.well-known/agent-card.json").json()
    agent_keys = signing.load_verification_keys(call("GET", "/agents/billing/.well-known/jwks.json").text)
    assert any(result.valid for result in signing.verify(card, agent_keys))
    default_keys = signing.load_verification_keys(call("GET", JWKS).text)
    assert not any(result.valid for result in signing.verify(card, default_keys))


def test_the_jwks_command_prints_the_set_as_served(settings, signing_key):
    settings.A2A_CARD_SIGNING_PREVIOUS_KEYS = [public_pem(OLD_KEY)]
    out = io.StringIO()
    call_command("a2a_card", "jwks", stdout=out)
    assert json.loads(out.getvalue()) == the_jwks()
    assert len(the_jwks()["keys"]) == 2
