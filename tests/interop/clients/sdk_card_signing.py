"""Signed Agent Cards with the official A2A Python SDK (``a2a.utils.signing``), for
tests/interop/test_card_signing_interop.py. Run with the interop venv's Python::

    .venv-interop/bin/python sdk_card_signing.py BASE_URL verify --key PUBLIC.pem --alg ES256 [--version 1.0]
    .venv-interop/bin/python sdk_card_signing.py BASE_URL sign --key PRIVATE.pem --alg ES256 --kid K \
        --card IN.json --out OUT.json

``verify`` resolves the card with the SDK's ``A2ACardResolver`` and its signature
verifier (``create_signature_verifier``), then checks that the verifier rejects the
same card with its ``name`` changed. ``sign`` signs a card file with the SDK's
``create_agent_card_signer`` (for our verifier to check). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import httpx
from a2a.client.card_resolver import parse_agent_card
from a2a.utils import signing
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver


async def verify(args: argparse.Namespace) -> dict:
    with open(args.key, "rb") as f:
        key = load_pem_public_key(f.read())
    kids: list = []

    def provider(kid, jku):
        kids.append(kid)
        return key

    verifier = signing.create_signature_verifier(provider, [args.alg])
    headers = {"A2A-Version": args.version} if args.version else {}
    async with httpx.AsyncClient(timeout=30) as http:
        resolver = A2ACardResolver(http, args.base_url)
        card = await resolver.get_agent_card(http_kwargs={"headers": headers}, signature_verifier=verifier)
        raw = (await http.get(f"{args.base_url}/.well-known/agent-card.json", headers=headers)).json()
    raw["name"] = raw["name"] + " (changed)"
    try:
        verifier(parse_agent_card(raw))
        tampered = "accepted"
    except signing.InvalidSignaturesError:
        tampered = "rejected"
    return {
        "verified": True,
        "name": card.name,
        "signatures": len(card.signatures),
        "kids": kids,
        "tampered": tampered,
        "module": signing.__file__,
    }


def sign(args: argparse.Namespace) -> dict:
    with open(args.key, "rb") as f:
        key = load_pem_private_key(f.read(), password=None)
    with open(args.card) as f:
        card = parse_agent_card(json.load(f))
    signer = signing.create_agent_card_signer(key, {"alg": args.alg, "typ": "JOSE", "kid": args.kid})
    signed = MessageToDict(signer(card))
    with open(args.out, "w") as f:
        json.dump(signed, f)
    return {"signed": True, "signatures": len(signed.get("signatures", []))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("scenario", choices=("verify", "sign"))
    parser.add_argument("--key", required=True)
    parser.add_argument("--alg", default="ES256")
    parser.add_argument("--version", default="")
    parser.add_argument("--kid", default="sdk-key")
    parser.add_argument("--card")
    parser.add_argument("--out")
    args = parser.parse_args()
    try:
        observed = asyncio.run(verify(args)) if args.scenario == "verify" else sign(args)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"scenario": args.scenario, **observed}))


if __name__ == "__main__":
    main()
