"""`mockpool token create`: mint a token for an `up` pool (as condor_token_create does).

Minting needs the pool secret, which `up` keeps owner-only in the pool's folder: only the
user who started the pool (its administrator) can make tokens. A token is an HTCondor
IDTOKEN (``auth.make_token``): written to a file in a ``tokens.d`` folder
(``SEC_TOKEN_DIRECTORY``), HTCondor's own clients present it to the pool too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..auth import Role, make_secret, make_token, read_token, write_token
from ..pool.serve import SECRET_FILE, default_dir

# Roles a person may be given; daemon and negotiator tokens are the pool's own.
USER_ROLES = (Role.READ, Role.SUBMIT, Role.ADMIN)


def cmd_token_create(ns: argparse.Namespace) -> int:
    d = Path(ns.pool) if ns.pool else default_dir()
    role = Role(ns.role)
    if role is Role.SUBMIT and not ns.user:
        print(
            "mockpool: token create: a submit token acts as one user: give --user NAME",
            file=sys.stderr,
        )
        return 2
    try:
        secret = read_token(d / SECRET_FILE)
    except FileNotFoundError:
        print(
            f"mockpool: token create: no pool secret {d / SECRET_FILE}: is a pool up there "
            "(`mockpool up`)?",
            file=sys.stderr,
        )
        return 1
    except (OSError, ValueError) as e:
        print(
            f"mockpool: token create: cannot read the pool secret (only the pool's owner may "
            f"mint tokens): {e}",
            file=sys.stderr,
        )
        return 1
    if ns.lifetime is not None and ns.lifetime <= 0:
        print(
            "mockpool: token create: --lifetime must be a positive number of seconds",
            file=sys.stderr,
        )
        return 2
    try:
        token = make_token(secret, role, ns.user or "", lifetime=ns.lifetime)
    except ValueError as e:
        print(f"mockpool: token create: --user: {e}", file=sys.stderr)
        return 2
    if ns.out:
        try:
            write_token(ns.out, token)
        except OSError as e:
            print(f"mockpool: token create: cannot write {ns.out}: {e.strerror}", file=sys.stderr)
            return 1
        print(
            f"Wrote a {role.value} token{f' for {ns.user}' if ns.user else ''} to {ns.out} (mode 0600)"
        )
    else:
        print(token)
    return 0


def cmd_token_secret(ns: argparse.Namespace) -> int:
    """A fresh pool secret in a 0600 file, for a spec's ``[pool] secret_file`` (a pool on
    a Ray cluster, reachable beyond loopback, shares it with every node)."""
    try:
        write_token(ns.out, make_secret())
    except OSError as e:
        print(f"mockpool: cannot write {ns.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"Wrote a pool secret to {ns.out} (mode 0600)")
    return 0


def add_token_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("token", help="tokens for an `up` pool")
    tsub = p.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    c = tsub.add_parser(
        "create",
        help="mint a token (needs the pool secret: the pool's owner only)",
        description="Mint a token for the pool in --pool (default $MOCKPOOL_HOME or ~/.mockpool). "
        "read: q, status, history; submit: submit and manage the --user's own jobs; "
        "admin: everything, on every user's jobs.",
    )
    c.add_argument("--role", required=True, choices=[r.value for r in USER_ROLES])
    c.add_argument("--user", help="who the token names (required for --role submit)")
    c.add_argument(
        "--lifetime",
        type=int,
        metavar="SECONDS",
        help="the token expires SECONDS after now (default: never), as condor_token_create -lifetime",
    )
    c.add_argument(
        "--out", metavar="FILE", help="write the token to FILE, owner-only (default: print it)"
    )
    c.add_argument("--pool", metavar="DIR")
    c.set_defaults(func=cmd_token_create)
    c = tsub.add_parser(
        "secret", help="write a fresh pool secret to a file (0600), for [pool] secret_file"
    )
    c.add_argument("--out", metavar="FILE", required=True)
    c.set_defaults(func=cmd_token_secret)
