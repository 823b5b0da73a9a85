"""Signing the Agent Card (and push notifications' JWTs): the key, its id, its JWK Set."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Signed Agent Cards (spec 8.4; the `signing` extra: PyJWT, cryptography, rfc8785)"

DECLARED: dict[str, Setting] = {
    "A2A_CARD_SIGNING_KEY": Setting(
        str,
        "",
        check_id="a2a.E080",
        secret=True,
        doc="The private key that signs the Agent Card (and the extended card): PEM text, or the path of a "
        "PEM file (relative to BASE_DIR). EC P-256 signs with ES256, RSA (2048 bits or more) with RS256, "
        "Ed25519 with EdDSA. Empty: the card is not signed. Checked: a2a.E080.",
    ),
    "A2A_CARD_SIGNING_KID": Setting(
        str, "", check_id="a2a.E080", doc="The signature's `kid` (key id); empty: the key's RFC 7638 thumbprint."
    ),
    "A2A_CARD_SIGNING_JKU": Setting(
        str,
        "",
        check_id="a2a.E080",
        doc="The signature's `jku`: the URL of a JWK Set holding the public key (publish the one `manage.py "
        "a2a_card jwks` prints, or point it at the agent's own /.well-known/jwks.json); empty: none. Also the "
        "`jku` of the push notifications' JWTs, which otherwise name the agent's JWK Set URL when "
        "A2A_PUBLIC_URL is set.",
    ),
    "A2A_CARD_SIGNING_PREVIOUS_KEYS": Setting(
        list,
        [],
        check_id="a2a.E080",
        doc="Public keys still published in the agent's JWK Set (/.well-known/jwks.json) beside the "
        "A2A_CARD_SIGNING_KEY's, during a key rotation: each a PEM public key, certificate or private key, a "
        "JWK or a JWK Set, as text or the path of a file (relative to BASE_DIR); a key without `kid` gets its "
        "RFC 7638 thumbprint. Nothing is signed with them (docs/protocol.md, Signed push notifications).",
    ),
}
