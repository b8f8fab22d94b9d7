"""A bare CEDAR client on a blocking socket: packets, Stream values and the client's
half of DC_AUTHENTICATE with CLAIMTOBE or no authentication. For tests and fuzzing of
our listeners (HTCondor's own client, ``htcondor2``, is the reference client); no
crypto, no FS, no session resumption.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..classad import ClassAd
from .authmethod import CAUTH_CLAIMTOBE
from .commands import DC_AUTHENTICATE
from .framing import HEADER_SIZE, PacketCodec, parse_header
from .stream import Builder, Message

__all__ = ["RawClient", "ServerThread", "client_policy", "encode_messages"]


def client_policy(
    command: int, *, methods: str = "CLAIMTOBE", authentication: str = "PREFERRED"
) -> ClassAd:
    """A client's DC_AUTHENTICATE ad asking for a new session for ``command``."""
    ad = ClassAd()
    ad["Command"] = command
    if methods:
        ad["AuthMethods"] = methods
    ad["Authentication"] = authentication
    ad["AuthenticationNew"] = authentication
    ad["Encryption"] = "OPTIONAL"
    ad["Integrity"] = "OPTIONAL"
    ad["OutgoingNegotiation"] = "PREFERRED"
    ad["Enact"] = "NO"
    ad["NewSession"] = "YES"
    ad["SessionDuration"] = "60"
    ad["SessionLease"] = 3600
    ad["RemoteVersion"] = "$CondorVersion: 25.0.0 2025-06-01 BuildID: rawclient $"
    return ad


def encode_messages(messages: Iterable[Builder], packet_size: int = 4096) -> bytes:
    """The bytes of ``messages`` sent in a row on a fresh connection."""
    codec = PacketCodec(packet_size=packet_size)
    return b"".join(codec.encode(m.build()) for m in messages)


def qmgmt_request(number: int, *values: int | str | bytes) -> Message:
    """One queue-management call as a client sends it (qmgmt_send_stubs.cpp): the call's
    number, then ints (8 bytes), strings (NUL-ended) and bytes as they are (a flags byte)."""
    b = Builder().put_int(number)
    for v in values:
        if isinstance(v, bytes):
            b.put_bytes(v)
        elif isinstance(v, int):
            b.put_int(v)
        else:
            b.put_string(v)
    return Message(b.build())


def claimtobe_handshake(command: int, user: str = "fuzzer@example.org") -> list[Builder]:
    """The client's messages of a CLAIMTOBE handshake for ``command``, in order (what
    it sends; the server's answers come between them)."""
    return [
        Builder().put_int(DC_AUTHENTICATE).put_ad(client_policy(command)),
        Builder().put_int(CAUTH_CLAIMTOBE),
        Builder().put_int(1).put_string(user),
    ]


class RawClient:
    """One connection to a CEDAR listener."""

    def __init__(self, host: str, port: int, *, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._codec = PacketCodec()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, builder: Builder) -> None:
        self.sock.sendall(self._codec.encode(builder.build()))

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError(f"server closed the connection ({len(data)} of {n} bytes)")
            data += chunk
        return data

    def recv(self) -> Message:
        parts = []
        while True:
            header = self._read(HEADER_SIZE)
            end, length = parse_header(header)
            parts.append(self._codec.decode(header, self._read(length)))
            if end:
                return Message(b"".join(parts))

    def wait_closed(self) -> bytes:
        """Read until the server closes; what it sent meanwhile."""
        data = b""
        while chunk := self.sock.recv(65536):
            data += chunk
        return data

    def start_command(self, command: int, *, user: str | None = "raw@example.org") -> ClassAd:
        """DC_AUTHENTICATE for ``command`` (CLAIMTOBE as ``user``, or no authentication
        when None); the session ad the server answers with."""
        policy = client_policy(
            command,
            methods="CLAIMTOBE" if user else "",
            authentication="PREFERRED" if user else "NEVER",
        )
        self.send(Builder().put_int(DC_AUTHENTICATE).put_ad(policy))
        reply = self.recv().get_ad()
        if reply.eval("Authentication") == "YES":
            self.send(Builder().put_int(CAUTH_CLAIMTOBE))
            if self.recv().get_int() != CAUTH_CLAIMTOBE:
                raise ConnectionError("server did not choose CLAIMTOBE")
            self.send(Builder().put_int(1).put_string(user or ""))
            self.recv().get_int()  # CLAIMTOBE's answer
            self.recv().get_int()  # exchangeKey: no key
        return self.recv().get_ad()


class ServerThread:
    """A listener on its own event loop in a background thread, so a test may talk to
    it with blocking sockets (``RawClient``) or from a child process.

    ``make`` builds the server (inside the loop); ``call(fn)`` runs ``fn()`` there.
    """

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: Any = None
        self.port = 0

    def __enter__(self) -> ServerThread:
        self._thread.start()

        async def start() -> None:
            self.server = self._make()
            self.port = await self.server.start()

        asyncio.run_coroutine_threadsafe(start(), self.loop).result()
        return self

    def call(self, fn: Callable[[], Any]) -> Any:
        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result()

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
