"""Signing keys as PEM text, as the card-signing settings and the client's signature keys take them."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization


def pem(key: Any) -> str:
    """The private key in PKCS#8 PEM, unencrypted."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def public_pem(key: Any) -> str:
    """Its public key in SubjectPublicKeyInfo PEM."""
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
