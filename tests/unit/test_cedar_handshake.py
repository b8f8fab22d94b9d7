"""The security negotiation's rules (condor_secman.cpp), levels (condor_perms.cpp) and
the session cache (daemon_command.cpp), by hand."""

from __future__ import annotations

import pytest

from mockpool.auth import Principal, Role
from mockpool.cedar.levels import ROLE_LEVELS, Level, implied, permits
from mockpool.cedar.secpolicy import (
    FeatAct,
    SecReq,
    reconcile_attribute,
    reconcile_method_lists,
    reconcile_policy,
    sec_req,
    server_policy,
)
from mockpool.cedar.sessions import Session, SessionCache
from mockpool.classad import ClassAd

Y, N, F = FeatAct.YES, FeatAct.NO, FeatAct.FAIL
# ReconcileSecurityAttribute's chart: client row, server column (R, P, O, N)
CHART = {
    "R": (Y, Y, Y, F),
    "P": (Y, Y, Y, N),
    "O": (Y, Y, N, N),
    "N": (F, N, N, N),
}


@pytest.mark.parametrize("client", "RPON")
@pytest.mark.parametrize("col", range(4))
def test_each_feature_merges_by_htcondors_chart(client: str, col: int) -> None:
    server = "RPON"[col]
    names = {"R": "REQUIRED", "P": "PREFERRED", "O": "OPTIONAL", "N": "NEVER"}
    act, required = reconcile_attribute(names[client], names[server])
    assert act is CHART[client][col]
    assert required == ("R" in (client, server))


def test_requirements_read_by_first_letter_and_a_missing_one_is_never() -> None:
    assert sec_req("yes") is sec_req("True") is sec_req("REQUIRED") is SecReq.REQUIRED
    assert sec_req("false") is sec_req("NEVER") is SecReq.NEVER
    assert sec_req("bogus") is SecReq.INVALID
    assert reconcile_attribute(None, "REQUIRED") == (F, True)  # missing: NEVER
    assert reconcile_attribute("bogus", "OPTIONAL") == (F, False)


def test_method_lists_merge_in_the_servers_order_in_the_clients_spelling() -> None:
    assert reconcile_method_lists("FS, TOKEN,CLAIMTOBE", "CLAIMTOBE,IDTOKENS,FS") == (
        "CLAIMTOBE,TOKEN,FS"
    )
    assert reconcile_method_lists("SSL", "FS") == ""


def ad(**attrs: object) -> ClassAd:
    out = ClassAd()
    for k, v in attrs.items():
        out[k] = v
    return out


def test_a_policy_ad_merges_features_methods_duration_and_lease() -> None:
    client = ad(
        AuthenticationNew="PREFERRED",
        Authentication="PREFERRED",
        Encryption="OPTIONAL",
        Integrity="OPTIONAL",
        AuthMethods="FS,TOKEN",
        CryptoMethods="AES,BLOWFISH,3DES",
        SessionDuration="60",
        SessionLease=3600,
    )
    server = ad(
        AuthenticationNew="REQUIRED",
        Authentication="REQUIRED",
        Encryption="OPTIONAL",
        Integrity="OPTIONAL",
        AuthMethods="TOKEN,FS",
        CryptoMethods="AES",
        SessionDuration="86400",
        SessionLease=0,
        TrustDomain="pool.example",
    )
    merged = reconcile_policy(client, server)
    assert merged is not None
    assert {k: merged.eval(k) for k in merged} == {
        "Authentication": "YES",
        # required by the server: no AuthRequired = false
        # AES first and authentication YES: encryption and integrity whatever was asked
        "Encryption": "YES",
        "Integrity": "YES",
        "AuthMethodsList": "TOKEN,FS",
        "AuthMethods": "TOKEN",
        "CryptoMethods": "AES",
        "CryptoMethodsList": "AES",
        "SessionDuration": "60",  # the shorter
        "SessionLease": 3600,  # a lease of 0 takes the other side's
        "Enact": "YES",
        "TrustDomain": "pool.example",
    }


def test_authentication_neither_side_requires_is_yes_but_not_required() -> None:
    client = ad(AuthenticationNew="PREFERRED", AuthMethods="FS")
    server = ad(AuthenticationNew="OPTIONAL", AuthMethods="FS")
    merged = reconcile_policy(client, server)
    assert merged.eval("Authentication") == "YES" and merged.eval("AuthRequired") is False
    # without a crypto method in common, AES forces nothing
    assert merged.eval("Encryption") == "NO"
    assert reconcile_policy(ad(AuthenticationNew="NEVER"), server).eval("Authentication") == "NO"


def test_an_old_client_is_answered_from_the_old_attribute() -> None:
    # a client before 23.10 sends only Authentication; the server then reads its own
    client = ad(Authentication="OPTIONAL")
    server = ad(AuthenticationNew="OPTIONAL", Authentication="REQUIRED")
    assert reconcile_policy(client, server).eval("Authentication") == "YES"


def test_disagreement_is_no_policy() -> None:
    assert reconcile_policy(ad(AuthenticationNew="NEVER"), ad(AuthenticationNew="REQUIRED")) is None
    assert reconcile_policy(ad(Encryption="REQUIRED"), ad(Encryption="NEVER")) is None


def test_the_servers_policy_follows_fill_in_security_policy_ad() -> None:
    policy = server_policy(
        authentication="OPTIONAL",
        encryption="REQUIRED",
        integrity="OPTIONAL",
        auth_methods=["FS"],
        crypto_methods=["AES"],
        subsystem="COLLECTOR",
        pid=7,
        session_duration=86400,
        session_lease=3600,
    )
    # Authentication rises to encryption's REQUIRED (for old peers); the new one does not
    assert policy.eval("Authentication") == "REQUIRED"
    assert policy.eval("AuthenticationNew") == "OPTIONAL"
    assert policy.eval("SessionDuration") == "86400" and policy.eval("Enact") == "NO"
    # no crypto method: encryption and integrity become NEVER, or REQUIRED is refused
    no_crypto = dict(
        authentication="REQUIRED",
        integrity="OPTIONAL",
        auth_methods=["FS"],
        subsystem="X",
        pid=1,
        session_duration=1,
        session_lease=1,
    )
    assert server_policy(encryption="OPTIONAL", **no_crypto).eval("Encryption") == "NEVER"
    with pytest.raises(ValueError, match="REQUIRED but no crypto method"):
        server_policy(encryption="REQUIRED", **no_crypto)
    with pytest.raises(ValueError, match="auth NEVER but enc REQUIRED"):
        server_policy(**{**no_crypto, "authentication": "NEVER"}, encryption="REQUIRED")


def test_levels_imply_as_condor_perms_says() -> None:
    assert implied(Level.ADMINISTRATOR) == [Level.ADMINISTRATOR, Level.WRITE, Level.READ]
    assert implied(Level.DAEMON) == [Level.DAEMON, Level.WRITE, Level.READ]
    assert implied(Level.NEGOTIATOR) == [Level.NEGOTIATOR, Level.READ]


def test_the_pools_roles_hold_these_levels() -> None:
    read, submit = Principal(Role.READ), Principal(Role.SUBMIT, "alice")
    assert permits(read, Level.READ) and not permits(read, Level.WRITE)
    assert permits(submit, Level.WRITE) and not permits(submit, Level.ADMINISTRATOR)
    assert not permits(submit, Level.NEGOTIATOR)
    assert ROLE_LEVELS[Role.ADMIN] >= {Level.ADMINISTRATOR, Level.NEGOTIATOR, Level.DAEMON}
    assert not permits(None, Level.READ) and permits(None, Level.ALLOW)
    # a limit (CLAIMTOBE, a token's scopes) narrows what the role holds
    admin = Principal(Role.ADMIN, "condor")
    assert not permits(admin, Level.WRITE, limit=[Level.READ])
    assert permits(admin, Level.READ, limit=[Level.WRITE])  # WRITE implies READ


def session(sid: str) -> Session:
    return Session(sid, ClassAd(), "u@d", "FS", None, None, None, "", 0.0, 0.0, 0.0)


def test_a_session_lasts_its_duration_and_its_lease_plus_slop() -> None:
    cache = SessionCache(host="h")
    assert cache.new_id(1000.5).startswith("h:") and cache.new_id(1000.5).endswith(":1000:2")
    cache.add(session("a"), duration=60, lease=30, now=1000)
    # lease 30 + 20 slop: used at 1049 it lives; each use renews the lease
    assert cache.resume("a", 1049) is not None
    assert cache.resume("a", 1079) is not None  # duration 60 + 20: until 1080
    assert cache.resume("a", 1081) is None and len(cache) == 0
    cache.add(session("b"), duration=600, lease=30, now=0)
    assert cache.resume("b", 51) is None  # unused past its lease


def test_the_cache_keeps_at_most_its_limit_dropping_the_least_recently_used() -> None:
    cache = SessionCache(limit=2)
    for i, sid in enumerate("abc"):
        cache.add(session(sid), duration=600, lease=0, now=i)
    assert cache.resume("a", 5) is None
    assert cache.resume("b", 5) is not None and cache.resume("c", 5) is not None
