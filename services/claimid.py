"""Claim ids: ``<address>#<startd birthday>#<sequence>#<secret>``, as HTCondor forms them.

The secret part is what makes a claim id a capability: only the startd that issued it,
the negotiator (from the private ad) and the schedd it was handed to ever see it. Logs
and events show :func:`redact`'s form, which keeps the public prefix.
"""

from __future__ import annotations

import random
import secrets

__all__ = ["from_sinful", "make_claim_id", "redact", "sinful"]


def sinful(address: str) -> str:
    """``host:port`` as HTCondor's "sinful string" ``<host:port>`` (MyAddress)."""
    return address if address.startswith("<") else f"<{address}>"


def from_sinful(text: str) -> str:
    """``<host:port?params>`` -> ``host:port``."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1]
    return text.split("?", 1)[0]


def make_claim_id(
    address: str, birthday: int, sequence: int, rng: random.Random | None = None
) -> str:
    """A fresh claim id with 128 bits of secret: from the OS's CSPRNG, or from ``rng``
    in a virtual run, where the seed must fix every random choice (its ids never leave
    the process, and a replay must give the same ones)."""
    secret = f"{rng.getrandbits(128):032x}" if rng is not None else secrets.token_hex(16)
    return f"{sinful(address)}#{int(birthday)}#{int(sequence)}#{secret}"


def redact(claim_id: str) -> str:
    """The claim id with its secret replaced, safe for logs and events."""
    head, sep, _secret = claim_id.rpartition("#")
    return f"{head}#..." if sep else "<malformed claim id>"
