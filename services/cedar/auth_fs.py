"""FS authentication, server side (condor_auth_fs.cpp): the client proves its user by
creating a directory the server names, which the server then finds owned by that user.

1. The server makes a unique name ``<FS_LOCAL_DIR>/FS_<our ip>_<our port>_<random>_``
   (a temporary file made and removed) and sends it as a string.
2. The client, binding the name to the connection (``SEC_FS_ENFORCE_CHANNEL_BINDING``),
   appends the server's ``ip:port`` as it sees it, creates that directory mode 0700 and
   answers an integer (0, or -1 if mkdir failed) and, when it appended, the appended text.
3. The server checks the appended text names its own endpoint (no ``/``), then the
   directory: not a link, a directory with 1 or 2 links and mode exactly 0700. Its
   owner is the user (root maps to the pool's own user, ``FS_ROOT_TO_CONDOR``); the
   domain is ``UID_DOMAIN``. It answers 0 for success, -1 otherwise; the client removes
   the directory.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import pwd
import stat
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .authmethod import CAUTH_FILESYSTEM, AuthContext, AuthResult
from .stream import Builder

if TYPE_CHECKING:
    from .server import CedarSocket

__all__ = ["FSAuth", "parse_ip_port"]

log = logging.getLogger(__name__)


def parse_ip_port(text: str) -> tuple[str, int] | None:
    """``condor_sockaddr::from_ip_and_port_string``: ``1.2.3.4:5`` or ``[::1]:5``."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host)), int(port)
    except ValueError:
        return None


def _same_endpoint(text: str, local: tuple[str, int]) -> bool:
    parsed = parse_ip_port(text)  # a "?sock=" (shared port) suffix never parses: refused
    if parsed is None:
        return False
    try:
        return parsed == (str(ipaddress.ip_address(local[0])), local[1])
    except ValueError:
        return False


def _owner_if_safe(path: str) -> tuple[str | None, str]:
    """(owner's name, "") when ``path`` is a safe directory, else (None, why)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None, f"Unable to lstat({path})"
    if (
        st.st_nlink not in (1, 2)
        or stat.S_ISLNK(st.st_mode)
        or not stat.S_ISDIR(st.st_mode)
        or stat.S_IMODE(st.st_mode) != 0o700
    ):
        return None, f"Bad attributes on ({path})"
    try:
        return pwd.getpwuid(st.st_uid).pw_name, ""
    except KeyError:
        return None, f"Unable to lookup uid {st.st_uid}"


class FSAuth:
    """The FS method (``CAUTH_FILESYSTEM``)."""

    name = "FS"
    wire_name = "FS"
    bit = CAUTH_FILESYSTEM

    def metadata(self) -> Mapping[str, Any]:
        return {}

    async def authenticate(self, sock: CedarSocket, ctx: AuthContext) -> AuthResult | None:
        ip, port = ctx.local_address
        new_dir = ""
        try:
            fd, path = tempfile.mkstemp(prefix=f"FS_{ip}_{port}_", dir=ctx.config.fs_dir)
        except OSError as exc:
            log.warning("FS: cannot make a name in %s: %s", ctx.config.fs_dir, exc)
        else:
            os.close(fd)
            os.unlink(path)
            new_dir = path + "_"
        await sock.send(Builder().put_string(new_dir))
        msg = await sock.recv()
        client_result = msg.get_int("FS client result")
        client_ext = "" if msg.at_end() else msg.get_string("FS client extension")
        msg.expect_end("FS client reply")
        user, why = None, ""
        if client_ext and ("/" in client_ext or not _same_endpoint(client_ext, ctx.local_address)):
            why = f"Client extension ({client_ext}) doesn't match our endpoint"
        elif client_result != -1 and new_dir:
            user, why = _owner_if_safe(new_dir + client_ext)
        else:
            why = f"Client unable to create dir ({new_dir})"
        if user == "root":
            user = ctx.config.pool_user
        await sock.send(Builder().put_int(0 if user else -1))
        if user is None:
            log.info("FS authentication of %s failed: %s", sock.peer_text, why)
            with contextlib.suppress(OSError):  # a dir left by a client that gave up
                if new_dir and client_ext and "/" not in client_ext:
                    os.rmdir(new_dir + client_ext)
            return None
        return AuthResult(
            user=f"{user}@{ctx.config.uid_domain}", method=self.name, authenticated_name=user
        )
