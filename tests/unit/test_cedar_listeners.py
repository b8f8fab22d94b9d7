"""A pool's CEDAR security comes from its own HTCondor config, checked before it starts."""

from __future__ import annotations

import pytest

from mockpool.auth import make_secret, pool_key
from mockpool.cedar.auth_claim import ClaimToBeAuth
from mockpool.cedar.auth_fs import FSAuth
from mockpool.cedar.auth_token import TokenAuth
from mockpool.pool.cedar_listeners import security_from_config
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError

SPEC = """
[[startds]]
count = 1

[[schedds]]
count = 1

[config]
text = '''
{knob}
'''
"""


def _config(knob: str = "") -> object:
    return parse_spec(SPEC.format(knob=knob), "pool.toml").config


def test_the_defaults_require_authentication_by_fs_or_idtokens() -> None:
    secret = make_secret()
    sec = security_from_config(_config(), secret, "alice", subsystem="SCHEDD")
    assert [type(m) for m in sec.methods] == [FSAuth, TokenAuth]
    assert (sec.authentication, sec.encryption, sec.integrity) == (
        "REQUIRED",
        "OPTIONAL",
        "OPTIONAL",
    )
    assert sec.trust_domain == pool_key(secret)[1]  # the issuer of the pool's tokens
    assert sec.pool_user == "alice" and sec.subsystem == "SCHEDD"
    assert sec.crypto is not None


def test_the_pools_knobs_choose_methods_and_levels() -> None:
    config = _config(
        "SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE, KERBEROS, FS\n"
        "SEC_DEFAULT_ENCRYPTION = required\n"
        "SEC_DEFAULT_INTEGRITY = PREFERRED\n"
    )
    sec = security_from_config(config, make_secret(), "alice", subsystem="COLLECTOR")
    assert [type(m) for m in sec.methods] == [ClaimToBeAuth, FSAuth]  # KERBEROS: not ours
    assert (sec.encryption, sec.integrity) == ("REQUIRED", "PREFERRED")


@pytest.mark.parametrize(
    ("knob", "problem"),
    [
        (
            "SEC_DEFAULT_ENCRYPTION = SOMETIMES",
            "SEC_DEFAULT_ENCRYPTION = SOMETIMES: expected one of",
        ),
        ("SEC_DEFAULT_AUTHENTICATION_METHODS = KERBEROS, SSL", "none of the methods"),
        ("SEC_TOKEN_MAX_AGE = soon", "SEC_TOKEN_MAX_AGE = soon: not a number"),
        ("COLLECTOR_QUERY_WORKERS = many", "COLLECTOR_QUERY_WORKERS = many: not an integer"),
        ("COLLECTOR_QUERY_WORKERS = -1", "COLLECTOR_QUERY_WORKERS = -1: not 0 or more"),
    ],
)
def test_a_knob_the_listeners_cannot_follow_is_refused_by_the_spec(knob: str, problem: str) -> None:
    with pytest.raises(SpecError, match=problem) as info:
        _config(knob)
    assert str(info.value).startswith("pool.toml:")


def test_a_pool_without_cedar_does_not_check_them() -> None:
    text = SPEC.format(knob="SEC_DEFAULT_ENCRYPTION = SOMETIMES").replace(
        "[[startds]]", "[pool]\ncedar = false\n\n[[startds]]", 1
    )
    assert parse_spec(text, "pool.toml").cedar is False
