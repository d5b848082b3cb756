"""The official A2A Python SDK 1.x's card signature verifier (`a2a.utils.signing`,
`a2a-sdk[signing]`) against fundi's agent card: the v1.0 card and the card served to a
client that names no version, each parsed as the SDK's client parses cards, verify
against the keys fundi publishes at the card's `jku`; a card changed by one character
does not.

Usage: python card_signature.py BASE_URL
"""

import sys

import httpx
from jwt.api_jwk import PyJWK

from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier

from checks import check, run  # this folder

BASE = sys.argv[1].rstrip("/")


def key_provider(kid, jku):
    # Keys only from the card's own origin.
    if not jku or not jku.startswith(BASE + "/"):
        raise ValueError(f"a jku off the card's origin: {jku}")
    keys = httpx.get(jku, timeout=10).json()["keys"]
    return PyJWK(next(k for k in keys if k["kid"] == kid))


async def main(_base):
    verify = create_signature_verifier(key_provider, ["EdDSA", "ES256"])
    for name, headers in [("v1.0", {"A2A-Version": "1.0"}), ("unversioned", {})]:
        raw = httpx.get(f"{BASE}/.well-known/agent-card.json", headers=headers, timeout=10).json()
        card = parse_agent_card(dict(raw))
        try:
            verify(card)
            verified = True
        except Exception as error:  # report what the SDK said
            verified = repr(error)
        check(f"the {name} card's signature verifies with the SDK", verified is True, verified)
        card.description = card.description[:-1] + "?"
        try:
            verify(card)
            refused = False
        except InvalidSignaturesError:
            refused = True
        check(f"the {name} card changed by one character does not verify", refused)


run(main)
