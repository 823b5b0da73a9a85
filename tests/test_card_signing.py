"""Signed Agent Cards (spec 8.4): the card signed with A2A_CARD_SIGNING_KEY (JWS over the
RFC 8785 canonical form), its ETag, the extended card, the a2a.E080 check, and
``manage.py a2a_card verify | sign | jwks | show``. The official SDK's verifier is in
tests/interop/test_card_signing_interop.py."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from pathlib import Path

import httpx
import jsonschema
import jwt
import pytest
import referencing
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from django.core.management import call_command
from django.core.management.base import CommandError

from a2a.ops.checks import check_card_signing
from a2a.protocol import signing
from a2a.service import card
from tests.helpers import call
from tests.keys import pem, public_pem

CARD = "/.well-known/agent-card.json"
V10 = {"A2A-Version": "1.0"}


EC_KEY = ec.generate_private_key(ec.SECP256R1())
RSA_KEY = rsa.generate_private_key(65537, 2048)


def get(path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return call("GET", path, headers=headers)


def header_of(signature: dict) -> dict:
    return json.loads(signing.b64url_decode(signature["protected"]))


@pytest.fixture
def ec_signed(settings):
    settings.A2A_CARD_SIGNING_KEY = pem(EC_KEY)
    settings.A2A_CARD_SIGNING_KID = "key-1"
    settings.A2A_CARD_SIGNING_JKU = "https://agent.example.com/jwks.json"
    return [(None, EC_KEY.public_key())]


# --- canonicalization ------------------------------------------------------------------------


def test_rfc8785_canonical_form_of_the_spec_example_minus_empty_values():
    # Spec 8.4.1's example: empty values go (as the official SDK removes them; the
    # spec's REQUIRED empty `description`/`skills` with them), false stays, keys sorted.
    card = {
        "name": "Example Agent",
        "description": "",
        "capabilities": {"streaming": False, "pushNotifications": False, "extensions": []},
        "skills": [],
        "signatures": [{"protected": "x", "signature": "y"}],
    }
    assert (
        signing.canonical_payload(card)
        == b'{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}'
    )


def test_rfc8785_strings_numbers_and_key_order():
    # RFC 8785 3.2.2-3.2.3: literal UTF-8, ECMAScript numbers, keys by UTF-16 code units.
    value = {"€": 1, "\U0001f600": 2, "a": [1.0, 1e21, 0.000001, -0.0, "é\n\u0001"], "b": True, "c": None}
    out = signing.canonical_payload(value)
    assert out == '{"a":[1,1e+21,0.000001,0,"é\\n\\u0001"],"b":true,"€":1,"\U0001f600":2}'.encode()


def test_v10_reading_maps_the_v03_keys_as_a_v10_reader_does():
    card = {
        "name": "n",
        "url": "http://x/a2a/",
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [{"url": "http://x/a2a/", "transport": "JSONRPC"}],
        "supportsAuthenticatedExtendedCard": True,
        "capabilities": {"streaming": True},
        "security": [{"bearer": []}],
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}, "type": "http", "scheme": "Bearer"}
        },
        "signatures": [{"protected": "p", "signature": "s"}],
    }
    assert signing.v10_reading(card) == {
        "name": "n",
        "capabilities": {"streaming": True, "extendedAgentCard": True},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
    }


# --- the served card ------------------------------------------------------------------------


def test_unsigned_without_a_key():
    assert "signatures" not in get(CARD).json()
    assert "signatures" not in get(CARD, V10).json()


def test_the_strict_v10_card_carries_one_valid_signature(ec_signed):
    card = get(CARD, V10).json()
    [signature] = card["signatures"]
    assert header_of(signature) == {
        "alg": "ES256",
        "typ": "JOSE",
        "kid": "key-1",
        "jku": "https://agent.example.com/jwks.json",
    }
    [result] = signing.verify(card, ec_signed)
    assert result.valid and result.covers == "card"


def test_the_card_both_generations_read_is_signed_whole_and_in_its_v10_reading(ec_signed):
    card = get(CARD).json()
    assert card["url"] == "http://testserver/a2a/"  # the v0.3 keys are there...
    results = signing.verify(card, ec_signed)
    assert [(r.valid, r.covers) for r in results] == [(True, "card"), (True, "v1.0 reading")]
    # ...and covered: changing one leaves only the v1.0 reading's signature valid
    card["url"] = "http://evil.example/a2a/"
    assert [r.valid for r in signing.verify(card, ec_signed)] == [False, True]
    card["supportedInterfaces"][0]["url"] = "http://evil.example/a2a/"
    assert not any(r.valid for r in signing.verify(card, ec_signed))


def test_etag_covers_the_signed_body_and_is_stable(ec_signed, settings):
    first, second = get(CARD, V10), get(CARD, V10)
    assert first.content == second.content  # an ECDSA signature is made once per payload
    etag = first.headers["ETag"]
    assert etag == f'"{hashlib.sha256(first.content).hexdigest()[:32]}"'
    assert get(CARD, {**V10, "If-None-Match": etag}).status_code == 304
    settings.A2A_CARD_SIGNING_KID = "key-2"  # another signature: another ETag
    again = get(CARD, {**V10, "If-None-Match": etag})
    assert again.status_code == 200 and again.headers["ETag"] != etag
    assert header_of(again.json()["signatures"][0])["kid"] == "key-2"


def test_the_extended_card_is_signed_too(ec_signed, settings):
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.APIKeyAuthentication"]
    settings.A2A_EXTENDED_CARD = {"description": "The full story."}
    extended = card.build_extended_card("http://x/a2a/", version="1.0", rest="http://x/a2a/rest")
    assert extended["description"] == "The full story."
    [result] = signing.verify(extended, ec_signed)
    assert result.valid


@pytest.mark.parametrize(
    ("key", "alg"),
    [
        (RSA_KEY, "RS256"),
        (ec.generate_private_key(ec.SECP384R1()), "ES384"),
        (ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
    ],
)
def test_the_algorithm_follows_the_key(settings, tmp_path, key, alg):
    path = tmp_path / "card.pem"
    path.write_text(pem(key))
    settings.A2A_CARD_SIGNING_KEY = str(path)  # a path works as well as the PEM text
    card = get(CARD, V10).json()
    header = header_of(card["signatures"][0])
    assert header["alg"] == alg and "jku" not in header
    # the default kid is the RFC 7638 thumbprint of the public key
    assert header["kid"] == signing.public_jwk(key.public_key())["kid"]
    assert signing.verify(card, [(None, key.public_key())])[0].valid


def test_rfc7638_thumbprint_test_vector():
    # RFC 7638 section 3.1.
    jwk = {
        "kty": "RSA",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjB"
        "ZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgn"
        "Yb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF"
        "44-csFCur-kEgU8awapJzKnqDKgw",
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29",
    }
    assert signing.thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_a_verifier_takes_only_the_keys_algorithm(ec_signed):
    # An HS256 "signature" keyed with the public key's bytes (algorithm confusion) is refused.
    card = get(CARD, V10).json()
    protected = signing.b64url(json.dumps({"alg": "HS256", "typ": "JOSE", "kid": "key-1"}).encode())
    secret = public_pem(EC_KEY).encode()
    signing_input = f"{protected}.{signing.b64url(signing.canonical_payload(card))}".encode()
    forged = signing.b64url(hmac.new(secret, signing_input, hashlib.sha256).digest())
    card["signatures"] = [{"protected": protected, "signature": forged}]
    [result] = signing.verify(card, ec_signed)
    assert not result.valid and "is not the key's" in result.reason


def test_wrong_key_and_unknown_kid_are_invalid(ec_signed):
    card = get(CARD, V10).json()
    other = ec.generate_private_key(ec.SECP256R1()).public_key()
    assert not signing.verify(card, [(None, other)])[0].valid
    [result] = signing.verify(card, [("another-kid", EC_KEY.public_key())])
    assert not result.valid and "no key with kid" in result.reason


def test_pyjwt_reads_our_signature_as_a_detached_jws(ec_signed):
    card = get(CARD, V10).json()
    [signature] = card["signatures"]
    payload = signing.canonical_payload(card)
    decoded = jwt.api_jws.decode_complete(
        f"{signature['protected']}.{signing.b64url(payload)}.{signature['signature']}",
        EC_KEY.public_key(),
        algorithms=["ES256"],
    )
    assert decoded["payload"] == payload
    assert json.loads(payload) == {k: v for k, v in card.items() if k != "signatures"}


# --- the check --------------------------------------------------------------------------------


def test_check_e080_for_a_key_that_cannot_sign(settings, tmp_path):
    assert check_card_signing() == []
    settings.A2A_CARD_SIGNING_KEY = str(tmp_path / "missing.pem")
    [error] = check_card_signing()
    assert error.id == "a2a.E080" and "Cannot read the key file" in error.msg
    settings.A2A_CARD_SIGNING_KEY = public_pem(EC_KEY)
    assert check_card_signing()[0].id == "a2a.E080"
    settings.A2A_CARD_SIGNING_KEY = pem(rsa.generate_private_key(65537, 1024))
    assert "too short" in check_card_signing()[0].msg
    settings.A2A_CARD_SIGNING_KEY = pem(EC_KEY)
    assert check_card_signing() == []


# --- manage.py a2a_card -------------------------------------------------------------------------


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("a2a_card", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_verify_command_on_a_file_with_pem_and_jwks_keys(ec_signed, tmp_path):
    card_file = tmp_path / "card.json"
    card_file.write_text(get(CARD).text)
    pub = tmp_path / "pub.pem"
    pub.write_text(public_pem(EC_KEY))
    out = command("verify", str(card_file), "--key", str(pub))
    assert "signature 0: kid='key-1' alg='ES256': valid (covers the card)" in out
    assert "signature 1: kid='key-1' alg='ES256': valid (covers the v1.0 reading)" in out
    jwks = tmp_path / "jwks.json"
    jwks.write_text(command("jwks"))
    assert json.loads(jwks.read_text())["keys"][0]["kid"] == "key-1"
    assert "valid (covers the card)" in command("verify", str(card_file), "--key", str(jwks))
    changed = json.loads(card_file.read_text())
    changed["name"] = "someone else"
    card_file.write_text(json.dumps(changed))
    with pytest.raises(CommandError, match="No valid signature"):
        command("verify", str(card_file), "--key", str(pub))


def test_verify_command_on_a_url(ec_signed, monkeypatch):
    card = get(CARD, V10).content
    seen = {}

    def fake_get(url, headers, **kwargs):
        seen.update(url=url, headers=headers)
        return httpx.Response(200, content=card, request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", fake_get)
    out = command("verify", "http://127.0.0.1:8000" + CARD, "--key", public_pem(EC_KEY), "--version", "1.0")
    assert "valid (covers the card)" in out
    assert seen["headers"] == {"A2A-Version": "1.0"}


def test_verify_command_without_signatures(tmp_path):
    path = tmp_path / "card.json"
    path.write_text(get(CARD).text)
    with pytest.raises(CommandError, match="no signatures"):
        command("verify", str(path), "--key", public_pem(EC_KEY))


def test_sign_command_then_verify(tmp_path):
    path = tmp_path / "card.json"
    skill = {"id": "a", "name": "A", "description": "", "tags": []}
    path.write_text(json.dumps({"name": "offline", "skills": [skill]}))
    key = tmp_path / "key.pem"
    key.write_text(pem(RSA_KEY))
    signed = json.loads(command("sign", str(path), "--key", str(key), "--kid", "k9"))
    assert header_of(signed["signatures"][0]) == {"alg": "RS256", "typ": "JOSE", "kid": "k9"}
    assert signing.verify(signed, [("k9", RSA_KEY.public_key())])[0].valid


def test_show_command_prints_the_signed_card(ec_signed):
    card = json.loads(command("show", "--version", "1.0", "--base-url", "https://agent.example.com"))
    assert card["supportedInterfaces"][0]["url"] == "https://agent.example.com/a2a/"
    assert signing.verify(card, ec_signed)[0].valid


def test_key_files_relative_to_base_dir(settings, tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "card.pem").write_text(pem(EC_KEY))
    settings.BASE_DIR = tmp_path
    settings.A2A_CARD_SIGNING_KEY = "keys/card.pem"
    card = get(CARD, V10).json()
    assert signing.verify(card, [(None, EC_KEY.public_key())])[0].valid


def test_the_signed_strict_card_is_a_valid_v10_agent_card(ec_signed):
    schema = json.loads((Path(signing.__file__).parent / "a2a.schema.json").read_text())
    resources = [
        (f"{package}.{title.replace(' ', '')}.jsonschema.json", referencing.Resource.from_contents(definition))
        for title, definition in schema["definitions"].items()
        for package in ("lf.a2a.v1", "google.protobuf")
    ]
    registry = referencing.Registry().with_resources(resources)
    validator = jsonschema.Draft202012Validator(schema["definitions"]["Agent Card"], registry=registry)
    card = get(CARD, V10).json()
    assert card["signatures"]
    assert not sorted(validator.iter_errors(card), key=str)
