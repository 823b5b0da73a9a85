"""Signed push notifications: the JWT each webhook POST carries, the agent's JWK Set,
and :func:`verify_notification`, the check a receiver runs.

An agent that has a signing key (``A2A_CARD_SIGNING_KEY``, its own in ``A2A_AGENTS`` or
the project's: the key that signs its Agent Card) signs every delivery attempt with a
JWT (RFC 7519) in ``X-A2A-Notification-Signature``, and in ``Authorization: Bearer``
too unless the config's ``authentication`` takes that header (:func:`token_headers`: its
own ``<scheme> <credentials>``, spec 4.3.3, or a scheme other than Bearer). Header:
``alg`` (the key's), ``typ: JWT``, ``kid``, ``jku`` when known. Claims:

- ``iss``: the agent's card URL when ``A2A_PUBLIC_URL`` is set, else its name;
- ``aud``: the webhook URL the config names (the token is for that receiver alone);
- ``iat``, ``exp`` (``A2A_PUSH_TOKEN_LIFETIME`` later), ``jti`` (unique: a receiver may
  refuse a token seen before);
- ``taskId``, and ``request_body_sha256``: the hex SHA-256 of the exact body bytes sent
  (the claim of the A2A push notification samples).

The agent's public keys are served as a JWK Set at ``/.well-known/jwks.json`` under each
agent's routes (:func:`jwk_set`): the current key, then ``A2A_CARD_SIGNING_PREVIOUS_KEYS``,
so a receiver that cached the set before a rotation still finds the key of each token.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from a2a.agents import Agent, get_agent
from a2a.conf import a2a_settings
from a2a.protocol.signing import Signer, SigningError, load_verification_keys, public_jwk
from stores.scope import DEFAULT_AGENT

#: The header that always carries the notification's JWT.
SIGNATURE_HEADER = "X-A2A-Notification-Signature"
#: The claim holding the hex SHA-256 of the body.
BODY_HASH_CLAIM = "request_body_sha256"


class NotificationVerificationError(ValueError):
    """A push notification whose JWT is missing, unreadable, not signed by a key of the
    JWK Set, expired, for another audience or issuer, or for another body."""


def _conf(agent: Agent | None) -> Any:
    return a2a_settings if agent is None else agent.settings


def _base_dir() -> Path | None:
    base_dir = getattr(settings, "BASE_DIR", None)
    return Path(base_dir) if base_dir else None


def signer(agent: Agent | None = None) -> Signer | None:
    """The signer of ``agent``'s ``CARD_SIGNING_KEY`` (None: the project's settings), built
    once per key setting; None when it has no key. Raises
    :class:`~a2a.protocol.signing.SigningError` for a key that cannot sign."""
    conf = _conf(agent)
    if not conf.CARD_SIGNING_KEY:
        return None
    return _signer(conf.CARD_SIGNING_KEY, conf.CARD_SIGNING_KID, conf.CARD_SIGNING_JKU, _base_dir())


@functools.lru_cache(maxsize=16)
def _signer(key: str, kid: str, jku: str, base_dir: Path | None) -> Signer:
    return Signer.from_pem(key, kid=kid, jku=jku, base_dir=base_dir)


def jwk_set(agent: Agent | None = None) -> dict[str, Any] | None:
    """The JWK Set of ``agent``'s public keys: its signing key's, then each of its
    ``CARD_SIGNING_PREVIOUS_KEYS`` (one ``kid`` once); None when it has no signing key.
    Raises SigningError for a key that cannot be read."""
    conf = _conf(agent)
    if not conf.CARD_SIGNING_KEY:
        return None
    previous = tuple(conf.CARD_SIGNING_PREVIOUS_KEYS)
    return _jwk_set(conf.CARD_SIGNING_KEY, conf.CARD_SIGNING_KID, conf.CARD_SIGNING_JKU, previous, _base_dir())


@functools.lru_cache(maxsize=16)
def _jwk_set(key: str, kid: str, jku: str, previous: tuple[Any, ...], base_dir: Path | None) -> dict[str, Any]:
    current = _signer(key, kid, jku, base_dir)
    keys = [public_jwk(current.key, kid=current.kid)]
    for value in previous:
        if not isinstance(value, str):
            raise SigningError(f"A previous key must be text (PEM, JWK, JWK Set) or a path, not {value!r}")
        keys += [public_jwk(key, kid=kid) for kid, key in load_verification_keys(value, base_dir)]
    unique = {jwk["kid"]: jwk for jwk in reversed(keys)}  # the first of a kid wins: the current key
    return {"keys": [unique[kid] for kid in dict.fromkeys(jwk["kid"] for jwk in keys)]}


def issuer(agent: Agent) -> str:
    """The ``iss`` of ``agent``'s notifications: its card URL under ``A2A_PUBLIC_URL``, else its name."""
    base = (a2a_settings.PUBLIC_URL or "").rstrip("/")
    return base + agent.path("agent-card") if base else agent.name


def _jku(agent: Agent, current: Signer) -> str | None:
    if current.jku:
        return current.jku
    base = (a2a_settings.PUBLIC_URL or "").rstrip("/")
    return base + agent.path("jwks") if base else None


def issue(agent_name: str | None, *, task_id: str, audience: str, body: bytes, now: float | None = None) -> str | None:
    """The JWT for one delivery attempt of ``body`` about ``task_id`` to the webhook
    ``audience``, signed with the key of the agent ``agent_name`` (None: the default
    agent); None when that agent has no signing key."""
    agent = get_agent(agent_name or DEFAULT_AGENT)
    current = signer(agent)
    if current is None:
        return None
    import jwt

    issued = int(time.time() if now is None else now)
    claims = {
        "iss": issuer(agent),
        "aud": audience,
        "iat": issued,
        "exp": issued + max(1, round(a2a_settings.PUSH_TOKEN_LIFETIME)),
        "jti": uuid.uuid4().hex,
        "taskId": task_id,
        BODY_HASH_CLAIM: hashlib.sha256(body).hexdigest(),
    }
    header: dict[str, Any] = {"typ": "JWT", "kid": current.kid}
    jku = _jku(agent, current)
    if jku:
        header["jku"] = jku
    return jwt.encode(claims, current.key, algorithm=current.alg, headers=header)


def authorization(config: Mapping[str, Any]) -> str | None:
    """The ``Authorization`` header the config's ``authentication`` asks for (spec 4.3.3:
    ``<scheme> <credentials>``; of a v0.3 ``schemes`` list, the first); None when it
    brings no credentials."""
    auth = config.get("authentication") or {}
    schemes, credentials = auth.get("schemes") or [], auth.get("credentials")
    return f"{schemes[0]} {credentials}" if schemes and credentials else None


def token_headers(config: Mapping[str, Any], token: str | None) -> dict[str, str]:
    """The headers that carry ``token`` for ``config``: always :data:`SIGNATURE_HEADER`;
    ``Authorization: Bearer`` too when the config leaves that header free and a Bearer
    token is what it would take: no ``authentication``, or one whose scheme is Bearer
    and that brings no credentials (then the JWT is the credential). A config that
    names another scheme without credentials gets no ``Authorization`` at all: a
    Bearer token there would be a scheme it did not ask for."""
    if token is None:
        return {}
    schemes = [str(scheme).lower() for scheme in (config.get("authentication") or {}).get("schemes") or ()]
    free = authorization(config) is None and (not schemes or "bearer" in schemes)
    return {SIGNATURE_HEADER: token, **({"Authorization": f"Bearer {token}"} if free else {})}


# --- the receiver's side -----------------------------------------------------------------------


def _token_from(headers: Mapping[str, str]) -> str:
    lowered = {name.lower(): value for name, value in headers.items()}
    token = lowered.get(SIGNATURE_HEADER.lower(), "").strip()
    if token:
        return token
    scheme, _, value = lowered.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    raise NotificationVerificationError(f"no JWT in the notification ({SIGNATURE_HEADER} or Authorization: Bearer)")


def _key_for(token: str, jwks: Any) -> Any:
    """The PyJWK of ``jwks`` whose ``kid`` the token names."""
    import jwt

    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError as exc:
        raise NotificationVerificationError(f"the JWT is unreadable: {exc}") from None
    if not kid:
        raise NotificationVerificationError("the JWT names no key (no kid in its header)")
    try:
        if isinstance(jwks, str) and jwks.startswith(("https://", "http://")):
            jwks = jwt.PyJWKClient(jwks)
        if isinstance(jwks, jwt.PyJWKClient):
            return jwks.get_signing_key(kid)
        if isinstance(jwks, str | bytes):
            jwks = json.loads(jwks)
        key_set = jwks if isinstance(jwks, jwt.PyJWKSet) else jwt.PyJWKSet.from_dict(jwks)
        return key_set[kid]
    except KeyError:
        raise NotificationVerificationError(f"the JWK Set has no key with kid {kid!r}") from None
    except (jwt.PyJWTError, ValueError, TypeError) as exc:
        raise NotificationVerificationError(f"no key with kid {kid!r} from the JWK Set: {exc}") from None


def verify_notification(
    body: bytes,
    headers: Mapping[str, str] | None = None,
    *,
    jwks: Any,
    audience: str | None,
    issuer: str | None = None,
    token: str | None = None,
    leeway: float = 30.0,
) -> dict[str, Any]:
    """Check a push notification as received and return its JWT's claims.

    ``body`` is the request body exactly as received (bytes, before any JSON parsing);
    the JWT is ``token``, else read from ``headers`` (``X-A2A-Notification-Signature``,
    else ``Authorization: Bearer``). ``jwks`` is the agent's JWK Set: its URL (fetched
    and cached by PyJWT's ``PyJWKClient``), a ``PyJWKClient``, a ``PyJWKSet``, or the
    set as a dict or JSON text; never take it from the token's own ``jku``. ``audience``
    is this webhook's URL as the push config names it (None skips that check, for a
    receiver that cannot know it); ``issuer`` the agent's expected ``iss``.

    Only the algorithm of the key the token's ``kid`` names is accepted. ``exp``,
    ``iat`` and ``request_body_sha256`` are required, with ``leeway`` seconds of clock
    skew. Raises :class:`NotificationVerificationError` saying what is wrong.
    """
    import jwt

    token = token or _token_from(headers or {})
    key = _key_for(token, jwks)
    alg = getattr(key, "algorithm_name", None)
    if not alg:
        raise NotificationVerificationError("the JWK Set's key has no algorithm")
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[alg],
            audience=audience,
            issuer=issuer,
            leeway=leeway,
            options={"require": ["exp", "iat", BODY_HASH_CLAIM], "verify_aud": audience is not None},
        )
    except jwt.ExpiredSignatureError:
        raise NotificationVerificationError("the JWT has expired") from None
    except jwt.PyJWTError as exc:
        raise NotificationVerificationError(f"the JWT is refused: {exc}") from None
    expected = hashlib.sha256(body).hexdigest()
    if not isinstance(claims[BODY_HASH_CLAIM], str) or not hmac.compare_digest(claims[BODY_HASH_CLAIM], expected):
        raise NotificationVerificationError("the body is not the one the JWT signs (request_body_sha256 differs)")
    return claims
