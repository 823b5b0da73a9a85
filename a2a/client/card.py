"""The remote agent's card: where it is, which interface to speak, whether it is signed.

Pure functions over the card document; the clients fetch it (:mod:`a2a.client.client`).
A v1.0 card lists its interfaces in ``supportedInterfaces``; a v0.3 card names one ``url``
(``preferredTransport``) and ``additionalInterfaces``. The client speaks JSON-RPC and
HTTP+JSON in 1.1 (the draft: v1.0 and the task's generation), v1.0 and v0.3 and prefers
them in :data:`PREFERENCE` order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from a2a.client.errors import CardError, CardSignatureError
from a2a.protocol import signing

#: The card's locations under an agent's base URL (the second is the pre-0.3 one).
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
BINDINGS = ("JSONRPC", "HTTP+JSON")
VERSIONS = ("1.1", "1.0", "0.3")
#: (binding, version) pairs in the order the client picks them.
PREFERENCE = tuple((binding, version) for version in VERSIONS for binding in BINDINGS)
_BINDING_NAMES = {"JSONRPC": "JSONRPC", "JSON-RPC": "JSONRPC", "HTTP+JSON": "HTTP+JSON", "REST": "HTTP+JSON"}

Keys = list[tuple[str | None, Any]]


@dataclass(frozen=True)
class Interface:
    """One interface of an agent: its URL, binding (``JSONRPC`` or ``HTTP+JSON``) and A2A
    version (``1.1``, ``1.0`` or ``0.3``)."""

    url: str
    binding: str = "JSONRPC"
    version: str = "1.0"

    def __str__(self) -> str:
        return f"{self.binding} {self.version} at {self.url}"


def card_urls(url: str) -> list[str]:
    """Where to look for the card of ``url``: the URL itself when it names a ``.json``
    document, else the well-known paths under it."""
    url = url.strip()
    if not urlsplit(url).scheme:
        url = "http://" + url
    if urlsplit(url).path.endswith(".json"):
        return [url]
    return [url.rstrip("/") + path for path in CARD_PATHS]


def _version(value: Any) -> str | None:
    text = str(value or "").strip()
    return next((v for v in VERSIONS if text == v or text.startswith(v + ".")), None)


def interfaces(card: dict[str, Any]) -> list[Interface]:
    """Every interface the card offers that the client speaks, in the card's order
    (``supportedInterfaces``, then the v0.3 ``url`` and ``additionalInterfaces``)."""
    found: list[Interface] = []
    for entry in card.get("supportedInterfaces") or ():
        if isinstance(entry, dict):
            _add(found, entry.get("url"), entry.get("protocolBinding"), _version(entry.get("protocolVersion")))
    v03 = _version(card.get("protocolVersion"))
    if v03 == "0.3":
        _add(found, card.get("url"), card.get("preferredTransport") or "JSONRPC", v03)
        for entry in card.get("additionalInterfaces") or ():
            if isinstance(entry, dict):
                _add(found, entry.get("url"), entry.get("transport"), v03)
    return found


def _add(found: list[Interface], url: Any, binding: Any, version: str | None) -> None:
    name = _BINDING_NAMES.get(str(binding or "").upper())
    if isinstance(url, str) and url and name and version:
        interface = Interface(url, name, version)
        if interface not in found:
            found.append(interface)


def choose(card: dict[str, Any], *, binding: str | None = None, version: str | None = None) -> Interface:
    """The interface to speak: the first of :data:`PREFERENCE` the card offers (only
    ``binding`` / ``version`` when given). CardError when there is none."""
    offered = interfaces(card)
    for pair in PREFERENCE:
        if (binding or pair[0], version or pair[1]) != pair:
            continue
        match = next((i for i in offered if (i.binding, i.version) == pair), None)
        if match:
            return match
    wanted = " ".join(filter(None, (binding, version))) or "JSON-RPC or HTTP+JSON, A2A 1.0 or 0.3"
    listed = ", ".join(f"{i.binding} {i.version}" for i in offered) or "none this client speaks"
    raise CardError(
        f"The card of {card.get('name', 'the agent')!r} offers no {wanted} interface (it offers: {listed})."
    )


def load_keys(value: str | bytes | Keys, base_dir: Path | None = None) -> Keys:
    """Verification keys from a PEM public key, certificate, JWK or JWK Set (text or a
    file), or ``(kid, key)`` pairs as they are."""
    if isinstance(value, list):
        return value
    try:
        return signing.load_verification_keys(value, base_dir)
    except (signing.SigningError, OSError) as exc:
        raise CardSignatureError(f"The card's verification keys cannot be read: {exc}") from None


def check_signature(card: dict[str, Any], keys: Keys, *, where: str) -> signing.Verified:
    """The first signature of ``card`` that verifies with ``keys``; CardSignatureError
    when the card is unsigned or none verifies (each one's reason said)."""
    if not card.get(signing.SIGNATURES):
        raise CardSignatureError(f"The card at {where} is not signed, and a signature is required.")
    try:
        results = signing.verify(card, keys)
    except signing.SigningError as exc:
        raise CardSignatureError(f"The card at {where} cannot be verified: {exc}") from None
    valid = next((r for r in results if r.valid), None)
    if valid is None:
        reasons = "; ".join(f"signature {r.index}: {r.reason}" for r in results)
        raise CardSignatureError(f"No signature of the card at {where} verifies ({reasons}).")
    return valid
