"""Host faults' peer rules find the caller by the identity its token names."""

from __future__ import annotations

from mockpool import auth
from mockpool.auth import Role
from mockpool.pool.hostfaults import _identity

SECRET = "s" * 43


def test_peer_rules_read_the_identity_a_token_names() -> None:
    token = auth.make_token(SECRET, Role.DAEMON, "schedd/schedd1")
    assert _identity(auth.bearer_metadata(token)) == "schedd/schedd1"
    assert _identity(auth.bearer_metadata(auth.make_token(SECRET, Role.READ))) == ""
    assert _identity((("authorization", "Bearer not-a-token"),)) == ""
    assert _identity(()) == ""
