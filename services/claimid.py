"""Claim ids: ``<address>#<startd birthday>#<sequence>#<secret>``, as HTCondor forms them.

The secret part is what makes a claim id a capability: only the startd that issued it,
the negotiator (from the private ad) and the schedd it was handed to ever see it. Logs
and events show :func:`redact`'s form, which keeps the public prefix.
"""

from __future__ import annotations

import random
import secrets

__all__ = ["cedar_address", "from_sinful", "make_claim_id", "redact", "sinful"]


def sinful(address: str, cedar: str = "") -> str:
    """``host:port`` as HTCondor's "sinful string" ``<host:port>`` (MyAddress).

    A daemon that also listens on CEDAR (``cedar``, ``host:port``) is reached there by
    HTCondor's own clients, which read the sinful's host and port (and ``addrs``); the
    pool's daemons read its gRPC address from the ``grpc`` parameter (Sinful strings
    carry parameters they do not know through untouched). ``noUDP``: the listener is TCP
    only; without it a client sends RESCHEDULE and other one-way commands over UDP to the
    same port (``Daemon::hasUDPCommandPort``), where nothing hears them."""
    if address.startswith("<"):
        return address
    if not cedar:
        return f"<{address}>"
    host, _, port = cedar.rpartition(":")
    return f"<{cedar}?addrs={host}-{port}&noUDP&grpc={_param_address(address)}>"


def _param_address(address: str) -> str:
    host, _, port = address.rpartition(":")
    return f"{host}-{port}"


def from_sinful(text: str) -> str:
    """``<host:port?params>`` -> ``host:port``: the gRPC address of a pool daemon (its
    ``grpc`` parameter, when the sinful leads with its CEDAR address)."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1]
    head, _, params = text.partition("?")
    for param in params.split("&"):
        key, _, value = param.partition("=")
        if key == "grpc" and "-" in value:
            host, _, port = value.rpartition("-")
            return f"{host}:{port}"
    return head


def cedar_address(text: str) -> str:
    """``host:port`` where HTCondor's clients reach the daemon of sinful ``text``."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1]
    return text.partition("?")[0]


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
