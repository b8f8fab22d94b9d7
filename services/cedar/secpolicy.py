"""The security negotiation's rules, as condor_secman.cpp states them. Pure functions.

Each side describes what it wants for authentication, encryption and integrity as
REQUIRED, PREFERRED, OPTIONAL or NEVER (read by first letter: R/Y/T, P, O, F/N); the
server merges the client's ad with its own (``ReconcileSecurityPolicyAds``):

    client  server    result          client  server    result
    R       R,P,O     YES             O       R,P       YES
    R       N         FAIL            O       O,N       NO
    P       R,P,O     YES             N       R         FAIL
    P       N         NO              N       P,O,N     NO

A missing attribute counts as NEVER. Authentication reads ``AuthenticationNew`` (23.10+)
and falls back to ``Authentication``. Method lists merge in the server's order keeping
the client's spelling (``ReconcileMethodLists``, TOKEN, TOKENS, IDTOKEN and IDTOKENS
being one method). When authentication happens and the first common crypto method is
AES, encryption and integrity are YES whatever was asked (AES-GCM always does both).
The session lasts the shorter of the two durations, and its lease is the shorter
non-zero lease (none if either side sent none).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

from ..classad import ClassAd

__all__ = [
    "FeatAct",
    "SecReq",
    "feat_act",
    "reconcile_attribute",
    "reconcile_method_lists",
    "reconcile_policy",
    "sec_req",
    "server_policy",
    "session_duration",
    "string_attr",
]


class SecReq(enum.IntEnum):
    """A side's wish; ordered as HTCondor's enum (a larger value asks for more)."""

    UNDEFINED = 0
    INVALID = 1
    NEVER = 2
    OPTIONAL = 3
    PREFERRED = 4
    REQUIRED = 5


class FeatAct(enum.Enum):
    """The merged decision (``sec_feat_act``)."""

    UNDEFINED = "UNDEFINED"
    INVALID = "INVALID"
    FAIL = "FAIL"
    YES = "YES"
    NO = "NO"


_REQ_LETTERS = {
    "R": SecReq.REQUIRED,
    "Y": SecReq.REQUIRED,
    "T": SecReq.REQUIRED,
    "P": SecReq.PREFERRED,
    "O": SecReq.OPTIONAL,
    "F": SecReq.NEVER,
    "N": SecReq.NEVER,
}
_ACT_LETTERS = {"F": FeatAct.FAIL, "Y": FeatAct.YES, "N": FeatAct.NO}
_TOKEN_NAMES = {"TOKEN", "TOKENS", "IDTOKEN", "IDTOKENS"}


def string_attr(ad: ClassAd, name: str) -> str | None:
    """``LookupString``: the attribute's value if it is a string literal."""
    value = ad.eval(name)
    return value if isinstance(value, str) else None


def sec_req(text: str | None) -> SecReq:
    """``sec_alpha_to_sec_req``: by the first letter; INVALID for anything else."""
    if not text:
        return SecReq.INVALID
    return _REQ_LETTERS.get(text[0].upper(), SecReq.INVALID)


def feat_act(ad: ClassAd, name: str) -> FeatAct:
    """``sec_lookup_feat_act``: the decision an ad records (YES, NO, FAIL by first
    letter), UNDEFINED when absent."""
    text = string_attr(ad, name)
    if text is None:
        return FeatAct.UNDEFINED
    if not text:
        return FeatAct.INVALID
    return _ACT_LETTERS.get(text[0].upper(), FeatAct.INVALID)


def reconcile_attribute(client: str | None, server: str | None) -> tuple[FeatAct, bool]:
    """(decision, required by either side) for one feature (``ReconcileSecurityAttribute``)."""
    cli = sec_req(client or "NEVER")
    srv = sec_req(server or "NEVER")
    required = SecReq.REQUIRED in (cli, srv)
    if cli is SecReq.REQUIRED:
        return (FeatAct.FAIL if srv is SecReq.NEVER else FeatAct.YES), required
    if cli is SecReq.PREFERRED:
        return (FeatAct.NO if srv is SecReq.NEVER else FeatAct.YES), required
    if cli is SecReq.OPTIONAL:
        yes = srv in (SecReq.REQUIRED, SecReq.PREFERRED)
        return (FeatAct.YES if yes else FeatAct.NO), required
    if cli is SecReq.NEVER:
        return (FeatAct.FAIL if srv is SecReq.REQUIRED else FeatAct.NO), required
    return FeatAct.FAIL, required


def _tokens(methods: str) -> list[str]:
    """A comma or space separated list (``StringTokenIterator``)."""
    return [m for m in methods.replace(",", " ").split() if m]


def _canonical(method: str) -> str:
    return "TOKEN" if method.upper() in _TOKEN_NAMES else method


def reconcile_method_lists(client: str, server: str) -> str:
    """The methods both list, in the server's order, spelled as the client spells them.
    (HTCondor canonicalizes only the server's token names here; its clients already send
    ``TOKEN``, so comparing canonical names on both sides gives the same lists.)"""
    out = []
    for srv in _tokens(server):
        for cli in _tokens(client):
            if _canonical(srv).upper() == _canonical(cli).upper():
                out.append(cli)
    return ",".join(out)


def _int_attr(ad: ClassAd, name: str) -> int | None:
    value = ad.eval(name)
    return value if type(value) is int else None


def session_duration(ad: ClassAd) -> int:
    """SessionDuration travels as a string; atoi of an absent one is 0."""
    text = string_attr(ad, "SessionDuration") or ""
    digits = ""
    for i, ch in enumerate(text.strip()):
        if ch.isdigit() or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


def reconcile_policy(client: ClassAd, server: ClassAd) -> ClassAd | None:
    """``ReconcileSecurityPolicyAds``: the session's policy, or None when the two sides
    cannot agree (a FAIL on any feature)."""
    auth_cli = string_attr(client, "AuthenticationNew")
    use_old = False
    if auth_cli is None:  # an old client: the server answers with its old attribute too
        auth_cli = string_attr(client, "Authentication")
        use_old = auth_cli is not None
    auth_srv = string_attr(server, "AuthenticationNew")
    if auth_srv is None or use_old:
        auth_srv = string_attr(server, "Authentication") or auth_srv
    authentication, auth_required = reconcile_attribute(auth_cli, auth_srv)
    encryption, _ = reconcile_attribute(
        string_attr(client, "Encryption"), string_attr(server, "Encryption")
    )
    integrity, _ = reconcile_attribute(
        string_attr(client, "Integrity"), string_attr(server, "Integrity")
    )
    if FeatAct.FAIL in (authentication, encryption, integrity):
        return None
    out = ClassAd()
    out["Authentication"] = authentication.value
    if authentication is FeatAct.YES and not auth_required:
        out["AuthRequired"] = False
    out["Encryption"] = encryption.value
    out["Integrity"] = integrity.value
    cli_methods = string_attr(client, "AuthMethods")
    srv_methods = string_attr(server, "AuthMethods")
    if cli_methods is not None and srv_methods is not None:
        methods = reconcile_method_lists(cli_methods, srv_methods)
        out["AuthMethodsList"] = methods
        out["AuthMethods"] = _tokens(methods)[0] if methods else ""
    cli_crypto = string_attr(client, "CryptoMethods")
    srv_crypto = string_attr(server, "CryptoMethods")
    if cli_crypto is not None and srv_crypto is not None:
        crypto = reconcile_method_lists(cli_crypto, srv_crypto)
        out["CryptoMethods"] = crypto
        out["CryptoMethodsList"] = crypto
        if authentication is FeatAct.YES and crypto.split(",")[0] == "AES":
            out["Encryption"] = "YES"
            out["Integrity"] = "YES"
    out["SessionDuration"] = str(min(session_duration(client), session_duration(server)))
    cli_lease = _int_attr(client, "SessionLease")
    srv_lease = _int_attr(server, "SessionLease")
    if cli_lease is not None and srv_lease is not None:
        cli_lease = cli_lease or srv_lease
        srv_lease = srv_lease or cli_lease
        out["SessionLease"] = min(cli_lease, srv_lease)
    out["Enact"] = "YES"
    for name in ("TrustDomain", "IssuerKeys"):
        value = string_attr(server, name)
        if value is not None:
            out[name] = value
    return out


def _dependency(a: SecReq, b: SecReq) -> tuple[SecReq, SecReq] | None:
    """``ReconcileSecurityDependency``: b needs a; NEVER a with REQUIRED b is invalid."""
    if a is SecReq.NEVER:
        if b is SecReq.REQUIRED:
            return None
        b = SecReq.NEVER
    return max(a, b), b


def server_policy(
    *,
    authentication: str,
    encryption: str,
    integrity: str,
    negotiation: str = "PREFERRED",
    auth_methods: Iterable[str],
    crypto_methods: Iterable[str] = (),
    subsystem: str,
    pid: int,
    session_duration: int,
    session_lease: int,
    extra: Mapping[str, Any] | None = None,
) -> ClassAd:
    """``FillInSecurityPolicyAd``: the server's side of the negotiation for one level.
    ValueError if the settings contradict each other (HTCondor refuses to start)."""
    auth = sec_req(authentication)
    enc = sec_req(encryption)
    integ = sec_req(integrity)
    neg = sec_req(negotiation)
    for name, req in (("authentication", auth), ("encryption", enc), ("integrity", integ)):
        if req in (SecReq.INVALID, SecReq.UNDEFINED):
            raise ValueError(f"security {name} setting {req.name} is not R/P/O/N")
    # Authentication no longer needs to rise with encryption and integrity (23.10):
    # the old attribute does, for old peers; AuthenticationNew keeps the wish as it is.
    auth_new = auth
    req = {"auth": auth, "enc": enc, "integ": integ, "neg": neg}
    for a, b in (
        ("auth", "enc"),
        ("auth", "integ"),
        ("neg", "auth"),
        ("neg", "enc"),
        ("neg", "integ"),
    ):
        merged = _dependency(req[a], req[b])
        if merged is None:
            raise ValueError(f"security settings contradict: {a} NEVER but {b} REQUIRED")
        req[a], req[b] = merged
    auth, enc, integ, neg = req["auth"], req["enc"], req["integ"], req["neg"]
    methods = ",".join(auth_methods)
    if not methods:
        if auth_new is SecReq.REQUIRED:
            raise ValueError("authentication is REQUIRED but no method is configured")
        auth_new = SecReq.NEVER
    crypto = ",".join(crypto_methods)
    if not crypto:
        if SecReq.REQUIRED in (enc, integ):
            raise ValueError("encryption or integrity is REQUIRED but no crypto method is set up")
        enc = integ = SecReq.NEVER
    ad = ClassAd()
    if methods:
        ad["AuthMethods"] = methods
    if crypto:
        ad["CryptoMethods"] = crypto
    ad["OutgoingNegotiation"] = neg.name
    ad["Authentication"] = auth.name
    ad["AuthenticationNew"] = auth_new.name
    ad["Encryption"] = enc.name
    ad["Integrity"] = integ.name
    ad["Enact"] = "NO"
    ad["Subsystem"] = subsystem
    ad["ServerPid"] = pid
    ad["SessionDuration"] = str(session_duration)
    ad["SessionLease"] = session_lease
    for name, value in (extra or {}).items():
        ad[name] = value
    return ad
