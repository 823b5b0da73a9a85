"""Signed Agent Cards (spec 8.4): JWS (RFC 7515) over the card's RFC 8785 canonical form.

Pure: no Django, no settings. The ``signing`` extra brings PyJWT (with ``cryptography``)
for the JWS and ``rfc8785`` for the canonical form; they are imported when a card is
signed or verified, so an agent that signs nothing needs neither.

The canonical payload of a card (8.4.1) is the card without ``signatures``, with every
empty string, list and object removed (recursively: the "default values" the spec
removes, as the official SDK removes them), serialized by RFC 8785 (JCS). A signature
is the detached compact JWS of that payload: ``protected`` is the base64url header
(``alg``, ``typ: JOSE``, ``kid``, optional ``jku``), ``signature`` the base64url
signature; the payload is never sent, every verifier rebuilds it from the card.

A card in both generations' keys (the default card) is also signed over its **v1.0
reading** (:func:`v10_reading`): what a v1.0 reader such as the official SDK keeps of it
after mapping the v0.3 keys, so its verifier, which canonicalizes the card as it parsed
it, finds a signature over exactly that; the first signature covers the whole document.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

SIGNATURES = "signatures"
#: Keys of the v0.3 card that a v1.0 AgentCard does not have (the v1.0 schema forbids them).
V03_ONLY_KEYS = ("url", "protocolVersion", "preferredTransport", "additionalInterfaces", "security")
#: The v1.0 oneof member of each v0.3 security scheme ``type``.
_V10_SCHEME_KEYS = (
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
)


class SigningError(ValueError):
    """A key that cannot sign, a card that cannot be canonicalized, a missing extra."""


def _require_extra() -> None:
    try:
        import jwt  # noqa: F401
        import rfc8785  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the extra is installed in the test venv
        raise SigningError(
            f"Signed Agent Cards need the 'signing' extra (docs/getting-started.md, Installing): {exc}"
        ) from None


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# --- the canonical payload -------------------------------------------------------------------


def clean_empty(value: Any) -> Any:
    """``value`` without empty strings, lists and objects (nor ``None``), recursively;
    ``None`` when nothing is left. ``false`` and ``0`` stay: they are values a proto
    ``optional`` field was set to."""
    if isinstance(value, dict):
        cleaned = {k: c for k, v in value.items() if (c := clean_empty(v)) is not None}
        return cleaned or None
    if isinstance(value, list):
        items = [c for v in value if (c := clean_empty(v)) is not None]
        return items or None
    if value == "":
        return None
    return value


def canonical_payload(card: dict[str, Any]) -> bytes:
    """The bytes a card's signatures sign (spec 8.4.1): RFC 8785 of the cleaned card
    without ``signatures``."""
    _require_extra()
    import rfc8785

    body = {k: v for k, v in card.items() if k != SIGNATURES}
    try:
        return rfc8785.dumps(clean_empty(body) or {})
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise SigningError(f"The card has no RFC 8785 canonical form: {exc}") from None


def v10_reading(card: dict[str, Any]) -> dict[str, Any]:
    """What a v1.0 reader keeps of a card that carries the v0.3 keys too, mapped as the
    official SDK maps them: the v0.3-only keys dropped (``supportsAuthenticatedExtendedCard:
    true`` becoming ``capabilities.extendedAgentCard``, ``security`` becoming
    ``securityRequirements`` when that is missing), each security scheme reduced to its
    v1.0 member."""
    reading = copy.deepcopy({k: v for k, v in card.items() if k != SIGNATURES})
    if reading.pop("supportsAuthenticatedExtendedCard", None):
        reading.setdefault("capabilities", {}).setdefault("extendedAgentCard", True)
    legacy = reading.get("security")
    if "securityRequirements" not in reading and isinstance(legacy, list):
        reading["securityRequirements"] = [
            {"schemes": {name: {"list": scopes} for name, scopes in entry.items()}} for entry in legacy
        ]
    for key in V03_ONLY_KEYS:
        reading.pop(key, None)
    for skill in reading.get("skills") or []:
        if isinstance(skill, dict):
            skill.pop("security", None)
    schemes = reading.get("securitySchemes")
    if isinstance(schemes, dict):
        for name, scheme in schemes.items():
            if isinstance(scheme, dict):
                schemes[name] = {k: v for k, v in scheme.items() if k in _V10_SCHEME_KEYS}
    return reading


def has_v03_keys(card: dict[str, Any]) -> bool:
    return any(key in card for key in (*V03_ONLY_KEYS, "supportsAuthenticatedExtendedCard"))


# --- keys ------------------------------------------------------------------------------------


def _read_pem(value: str | bytes, base_dir: Path | None = None) -> bytes:
    """PEM text, or the path of a file holding it (relative to ``base_dir``)."""
    raw = value.encode() if isinstance(value, str) else value
    if raw.lstrip().startswith(b"-----BEGIN") or raw.lstrip().startswith(b"{"):
        return raw
    path = Path(raw.decode())
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SigningError(f"Cannot read the key file {str(path)!r}: {exc.strerror or exc}") from None


def load_private_key(value: str | bytes, base_dir: Path | None = None) -> Any:
    """A private key from PEM text or a PEM file (PKCS#8, SEC1 or PKCS#1; unencrypted)."""
    _require_extra()
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        return load_pem_private_key(_read_pem(value, base_dir), password=None)
    except (ValueError, TypeError) as exc:
        raise SigningError(f"Not an unencrypted PEM private key: {exc}") from None


def algorithm_for(key: Any) -> str:
    """The JWS ``alg`` of a key (private or public): ES256/ES384/ES512 for EC P-256/384/521,
    RS256 for RSA (2048 bits or more), EdDSA for Ed25519."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        algs = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
        if key.curve.name not in algs:
            raise SigningError(f"EC curve {key.curve.name} has no JWS algorithm; use P-256, P-384 or P-521")
        return algs[key.curve.name]
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        if key.key_size < 2048:
            raise SigningError(f"An RSA key of {key.key_size} bits is too short; use 2048 bits or more")
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey):
        return "EdDSA"
    raise SigningError(f"A {type(key).__name__} cannot sign an Agent Card; use an EC (P-256), RSA or Ed25519 key")


def public_jwk(key: Any, *, kid: str | None = None) -> dict[str, Any]:
    """The public JWK of a key, with ``kid``, ``alg`` and ``use: sig``."""
    _require_extra()
    from jwt.algorithms import get_default_algorithms

    alg = algorithm_for(key)
    public = key.public_key() if hasattr(key, "private_bytes") else key
    jwk: dict[str, Any] = json.loads(get_default_algorithms()[alg].to_jwk(public))
    jwk.pop("key_ops", None)
    jwk.update(alg=alg, use="sig")
    jwk["kid"] = kid or thumbprint(jwk)
    return jwk


def thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (the default ``kid``)."""
    _require_extra()
    import rfc8785

    members = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}[jwk["kty"]]
    return b64url(hashlib.sha256(rfc8785.dumps({k: jwk[k] for k in members})).digest())


def load_verification_keys(value: str | bytes, base_dir: Path | None = None) -> list[tuple[str | None, Any]]:
    """``(kid or None, public key)`` pairs from a PEM public key, a PEM certificate, a PEM
    private key (its public half), a JWK or a JWK Set (text or file)."""
    _require_extra()
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from jwt import PyJWK
    from jwt.exceptions import PyJWKError

    raw = _read_pem(value, base_dir)
    if raw.lstrip().startswith(b"{"):
        try:
            document = json.loads(raw)
            jwks = document.get("keys", [document])
            return [(jwk.get("kid"), PyJWK(jwk).key) for jwk in jwks]
        except (ValueError, KeyError, TypeError, AttributeError, PyJWKError) as exc:
            raise SigningError(f"Not a JWK or JWK Set: {exc}") from None
    if b"CERTIFICATE" in raw:
        return [(None, x509.load_pem_x509_certificate(raw).public_key())]
    if b"PRIVATE KEY" in raw:
        return [(None, load_private_key(raw).public_key())]
    try:
        return [(None, load_pem_public_key(raw))]
    except (ValueError, TypeError) as exc:
        raise SigningError(f"Not a PEM public key, certificate, JWK or JWK Set: {exc}") from None


# --- signing and verifying -------------------------------------------------------------------


@dataclass
class Signer:
    """Signs cards with one private key. Signatures are remembered by payload (at most
    ``cache_size``): an ECDSA signature differs each time it is made, and the card's
    ETag must not."""

    key: Any
    kid: str
    alg: str
    jku: str | None = None
    cache_size: int = 64
    _cache: OrderedDict[bytes, dict[str, Any]] = field(default_factory=OrderedDict, repr=False)
    _cards: OrderedDict[bytes, list[dict[str, Any]]] = field(default_factory=OrderedDict, repr=False)

    @classmethod
    def from_pem(
        cls, value: str | bytes, *, kid: str = "", jku: str | None = None, base_dir: Path | None = None
    ) -> Signer:
        key = load_private_key(value, base_dir)
        alg = algorithm_for(key)
        return cls(key=key, kid=kid or public_jwk(key)["kid"], alg=alg, jku=jku or None)

    @property
    def header(self) -> dict[str, str]:
        header = {"alg": self.alg, "typ": "JOSE", "kid": self.kid}
        if self.jku:
            header["jku"] = self.jku
        return header

    def sign_payload(self, payload: bytes) -> dict[str, Any]:
        """An AgentCardSignature (``protected``, ``signature``) over ``payload``."""
        cached = self._cache.get(payload)
        if cached is not None:
            self._cache.move_to_end(payload)
            return dict(cached)
        from jwt import api_jws

        compact = api_jws.encode(payload, self.key, algorithm=self.alg, headers=self.header)
        protected, _, signature = compact.split(".")
        result = {"protected": protected, "signature": signature}
        self._cache[payload] = result
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return dict(result)

    def sign(self, card: dict[str, Any]) -> dict[str, Any]:
        """``card`` with ``signatures``: one over the card; for a card with v0.3 keys, a
        second over its v1.0 reading. Signatures already on the card are kept after ours.
        The signatures of a card seen before are reused without canonicalizing it again:
        canonicalizing (RFC 8785) costs far more than the orjson dump that keys the cache."""
        body = {k: v for k, v in card.items() if k != SIGNATURES}
        try:
            seen: bytes | None = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        except (orjson.JSONEncodeError, TypeError):
            seen = None  # canonical_payload says what is wrong
        signatures = self._cards.get(seen) if seen is not None else None
        if signatures is None:
            signatures = [self.sign_payload(canonical_payload(body))]
            if has_v03_keys(body):
                signatures.append(self.sign_payload(canonical_payload(v10_reading(body))))
            if seen is not None:
                self._cards[seen] = signatures
                while len(self._cards) > self.cache_size:
                    self._cards.popitem(last=False)
        signatures = [dict(s) for s in signatures]
        earlier = [s for s in card.get(SIGNATURES) or [] if s not in signatures]
        return {**card, SIGNATURES: signatures + earlier}


@dataclass
class Verified:
    """What :func:`verify` found for one signature."""

    index: int
    header: dict[str, Any]
    valid: bool
    covers: str = ""  # "card" or "v1.0 reading" when valid
    reason: str = ""


def verify(card: dict[str, Any], keys: list[tuple[str | None, Any]]) -> list[Verified]:
    """Check every signature of ``card`` against ``keys`` (``(kid, public key)``; a key
    without kid may check any signature). Only the algorithm of the key is accepted for
    it (no algorithm confusion). A signature is valid over the card, or over its v1.0
    reading for a card with v0.3 keys."""
    _require_extra()
    from jwt import api_jws
    from jwt.exceptions import PyJWTError

    payloads = [("card", canonical_payload(card))]
    if has_v03_keys(card):
        payloads.append(("v1.0 reading", canonical_payload(v10_reading(card))))
    results = []
    for index, entry in enumerate(card.get(SIGNATURES) or []):
        try:
            protected = entry["protected"]
            header = json.loads(b64url_decode(protected))
            if not isinstance(header, dict):
                raise ValueError("the protected header is not a JSON object")
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            results.append(Verified(index, {}, False, reason=f"unreadable protected header: {exc}"))
            continue
        candidates = [key for kid, key in keys if kid is None or kid == header.get("kid")]
        if not candidates:
            results.append(Verified(index, header, False, reason=f"no key with kid {header.get('kid')!r}"))
            continue
        result = Verified(index, header, False, reason="the signature does not match")
        for key in candidates:
            try:
                alg = algorithm_for(key)
            except SigningError as exc:
                result.reason = str(exc)
                continue
            if header.get("alg") != alg:
                result.reason = f"alg {header.get('alg')!r} is not the key's ({alg})"
                continue
            for covers, payload in payloads:
                token = f"{protected}.{b64url(payload)}.{entry.get('signature', '')}"
                try:
                    api_jws.decode_complete(token, key, algorithms=[alg])
                except PyJWTError:
                    continue
                result = Verified(index, header, True, covers=covers)
                break
            if result.valid:
                break
        results.append(result)
    return results
