"""``manage.py a2a_card``: signed Agent Cards (spec 8.4) from the command line.

::

    manage.py a2a_card verify URL-OR-FILE --key PUBLIC.pem|JWKS.json [--version 1.0]
    manage.py a2a_card verify --agent NAME --key PUBLIC.pem [--base-url URL]
    manage.py a2a_card sign FILE [--key PRIVATE.pem] [--kid ID] [--jku URL]
    manage.py a2a_card sign --agent NAME [--key PRIVATE.pem] [--base-url URL]
    manage.py a2a_card jwks [--agent NAME | --key PRIVATE.pem [--kid ID]]
    manage.py a2a_card show [--agent NAME] [--version 1.0] [--base-url URL]

``verify`` checks every signature of a card (a URL, e.g. ``https://agent.example.com/
.well-known/agent-card.json``, or a file; ``-`` reads standard input) against a public
key (PEM public key, certificate, JWK or JWK Set; a PEM private key works too) and exits
1 unless one is valid. ``sign`` prints a card file signed; ``jwks`` prints the JWK Set of
the public key (to publish at the ``A2A_CARD_SIGNING_JKU`` URL; without ``--key``, the
agent's set as its ``/.well-known/jwks.json`` serves it, previous keys too); ``show`` prints this
agent's card as it is served. ``--key`` defaults to ``A2A_CARD_SIGNING_KEY``.

``--agent NAME`` works on one of this project's agents (``A2A_AGENTS``; ``default`` for
the single-agent settings'): ``show`` prints its card, ``sign`` signs it as built here,
``verify`` fetches it from its URL under ``--base-url`` (default ``A2A_PUBLIC_URL``,
else ``http://localhost:8000``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a.agents import DEFAULT_AGENT, Agent, UnknownAgent, get_agent
from a2a.conf import a2a_settings
from a2a.protocol import signing
from a2a.push import tokens
from a2a.service import card


class Command(BaseCommand):
    help = "Verify, sign and show signed Agent Cards (spec 8.4); print the signing key's JWK Set."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        verify = sub.add_parser("verify", help="check a card's signatures (exit 1 unless one is valid)")
        verify.add_argument("source", nargs="?", default="", help="the card's URL, a file, or - (standard input)")
        verify.add_argument("--key", required=True, help="public key: PEM, certificate, JWK or JWK Set (text or file)")
        verify.add_argument("--version", default="", help="the A2A-Version header to fetch a URL with (e.g. 1.0)")
        sign = sub.add_parser("sign", help="print a card file with its signatures")
        sign.add_argument("source", nargs="?", default="", help="a card file, or - (standard input)")
        sign.add_argument("--version", default="", help="with --agent: 1.0 for the strict v1.0 card")
        jwks = sub.add_parser("jwks", help="print the JWK Set of the signing key's public half")
        jwks.add_argument("--agent", default="", help="this agent's JWK Set, as /.well-known/jwks.json serves it")
        show = sub.add_parser("show", help="print this agent's card as served")
        show.add_argument("--version", default="", help="1.0 for the strict v1.0 card")
        for each in (verify, sign, show):
            each.add_argument("--agent", default="", help="one of this project's agents (instead of a source)")
            each.add_argument("--base-url", default="", help="the public base URL (default: A2A_PUBLIC_URL)")
        for each in (sign, jwks):
            each.add_argument("--key", default="", help="private key PEM, text or file (default: A2A_CARD_SIGNING_KEY)")
            each.add_argument("--kid", default="", help="key id (default: A2A_CARD_SIGNING_KID, else the thumbprint)")
        sign.add_argument("--jku", default="", help="JWK Set URL (default: A2A_CARD_SIGNING_JKU)")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            getattr(self, f"_{action}")(**options)
        except signing.SigningError as exc:
            raise CommandError(str(exc)) from None

    def _print(self, value: Any) -> None:
        self.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())

    def _signer(self, key: str, kid: str, jku: str = "") -> signing.Signer:
        key = key or a2a_settings.CARD_SIGNING_KEY
        if not key:
            raise CommandError("No key: give --key or set A2A_CARD_SIGNING_KEY.")
        return signing.Signer.from_pem(
            key, kid=kid or a2a_settings.CARD_SIGNING_KID, jku=jku or a2a_settings.CARD_SIGNING_JKU, base_dir=_base()
        )

    def _verify(self, *, source: str, key: str, version: str, agent: str, base_url: str, **options: Any) -> None:
        if agent and not source:
            source = _base_url(base_url) + _agent(agent).path("agent-card")
        document = _load(_source(source), version)
        keys = signing.load_verification_keys(key, Path.cwd())
        results = signing.verify(document, keys)
        if not results:
            raise CommandError("The card has no signatures.")
        for result in results:
            head = f"signature {result.index}: kid={result.header.get('kid')!r} alg={result.header.get('alg')!r}"
            if result.valid:
                self.stdout.write(f"{head}: valid (covers the {result.covers})")
            else:
                self.stdout.write(f"{head}: INVALID ({result.reason})")
        if not any(result.valid for result in results):
            raise CommandError("No valid signature: the card is not signed by this key, or it was changed.")
        self.stderr.write("The card is signed by the key.")

    def _sign(self, *, source: str, key: str, kid: str, jku: str, agent: str, **options: Any) -> None:
        if agent and not source:
            document = _card(_agent(agent), options["version"], options["base_url"])
        else:
            document = _load(_source(source), "")
        document.pop(signing.SIGNATURES, None)
        self._print(self._signer(key, kid, jku).sign(document))

    def _jwks(self, *, key: str, kid: str, agent: str, **options: Any) -> None:
        if not key:  # the agent's set as served: its key, then its CARD_SIGNING_PREVIOUS_KEYS
            key_set = tokens.jwk_set(_agent(agent or DEFAULT_AGENT))
            if key_set is None:
                raise CommandError("No key: give --key or set A2A_CARD_SIGNING_KEY.")
            self._print(key_set)
            return
        signer = self._signer(key, kid)
        self._print({"keys": [signing.public_jwk(signer.key, kid=signer.kid)]})

    def _show(self, *, version: str, base_url: str, agent: str, **options: Any) -> None:
        self._print(_card(_agent(agent or DEFAULT_AGENT), version, base_url))


def _base_url(base_url: str) -> str:
    return (base_url or a2a_settings.PUBLIC_URL or "http://localhost:8000").rstrip("/")


def _agent(name: str) -> Agent:
    try:
        return get_agent(name)
    except UnknownAgent as exc:
        raise CommandError(str(exc)) from None


def _source(source: str) -> str:
    if not source:
        raise CommandError("Name a card (a URL, a file, or - for standard input), or --agent NAME.")
    return source


def _card(agent: Agent, version: str, base_url: str) -> dict[str, Any]:
    """``agent``'s card as it is served under ``base_url`` (signed when a signing key is configured)."""
    base = _base_url(base_url)
    version = "1.0" if version.startswith("1") else "0.3"
    return card.build_card(base + agent.path("jsonrpc"), version=version, rest=base + agent.path("rest"), agent=agent)


def _base() -> Path | None:
    base = getattr(settings, "BASE_DIR", None)
    return Path(base) if base else None


def _load(source: str, version: str) -> dict[str, Any]:
    """A card from a URL, a file or standard input."""
    try:
        if source.startswith(("http://", "https://")):
            headers = {"A2A-Version": version} if version else {}
            response = httpx.get(source, headers=headers, timeout=30.0, follow_redirects=True)
            response.raise_for_status()
            raw = response.content
        elif source == "-":
            raw = sys.stdin.buffer.read()
        else:
            raw = Path(source).read_bytes()
        document = orjson.loads(raw)
    except (httpx.HTTPError, OSError, orjson.JSONDecodeError) as exc:
        raise CommandError(f"Cannot read a card from {source}: {exc}") from None
    if not isinstance(document, dict):
        raise CommandError(f"{source} is not a JSON object.")
    return document
