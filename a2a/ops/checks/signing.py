"""The check of the card signing key and the keys of its JWK Set (``a2a.E080``)."""

from __future__ import annotations

from django.core.checks import Error

from a2a.agents import Agent
from a2a.ops.checks.registry import Messages, concern, settings_of
from a2a.protocol.signing import SigningError
from a2a.push import tokens
from a2a.service import card


@concern("A2A_CARD_SIGNING_KEY", "A2A_CARD_SIGNING_KID", "A2A_CARD_SIGNING_JKU", "A2A_CARD_SIGNING_PREVIOUS_KEYS")
def check_card_signing(agent: Agent | None = None) -> Messages:
    """``a2a.E080``: ``A2A_CARD_SIGNING_KEY`` is set but cannot sign (unreadable, not a
    PEM private key, a key type without a JWS algorithm, or the ``signing`` extra missing),
    or one of ``A2A_CARD_SIGNING_PREVIOUS_KEYS`` cannot be read into the JWK Set."""
    conf = settings_of(agent)
    if not conf.CARD_SIGNING_KEY:
        return []
    try:
        card.signer(agent)
    except SigningError as exc:
        return [
            Error(
                f"A2A_CARD_SIGNING_KEY cannot sign the Agent Card and push notifications: {exc}",
                hint="Give an unencrypted PEM private key (EC P-256, RSA 2048+ or Ed25519), as text or a path.",
                id="a2a.E080",
            )
        ]
    try:
        tokens.jwk_set(agent)
    except SigningError as exc:
        return [
            Error(
                f"A2A_CARD_SIGNING_PREVIOUS_KEYS has a key the JWK Set cannot publish: {exc}",
                hint="Give each as a PEM public key, certificate, JWK or JWK Set (text or a path).",
                id="a2a.E080",
            )
        ]
    return []
