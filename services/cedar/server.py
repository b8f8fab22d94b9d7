"""A CEDAR listener on asyncio: HTCondor's own clients talk to an actor through it.

One connection carries one command, as DaemonCore serves them: the security handshake
(handshake.py), then the command's handler, then the connection closes. A handler gets
a :class:`CedarRequest`: the command, the :class:`CedarSocket` to read and write
messages on, and the :class:`~mockpool.cedar.handshake.Peer` it runs for, already
checked against the command's :class:`~mockpool.cedar.levels.Level`.

What goes wrong ends the connection with one log line, never an exception out of the
connection's task: a malformed packet or message, a message past ``max_message``, an
unknown command (HTCondor closes without a word), a peer that is not authorized, a
client that stalls (every read is bounded by ``read_timeout``, the whole handshake by
``handshake_timeout``, every write by ``write_timeout``). Large replies go out a packet
at a time and yield to the event loop between packets, so the actor's other work goes
on; ``stop()`` ends every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import turns
from ..classad import ClassAd
from .commands import DC_AUTHENTICATE, DC_SEC_QUERY
from .encoding import StreamError
from .framing import HEADER_SIZE, SEND_PACKET, FrameCipher, FramingError, PacketCodec, parse_header
from .handshake import HandshakeRefused, Peer, SecurityManager
from .levels import Level
from .secpolicy import SecReq, sec_req, string_attr
from .security import UNAUTHENTICATED_USER, SecurityConfig
from .stream import Builder, Message

__all__ = [
    "CedarClosed",
    "CedarRequest",
    "CedarServer",
    "CedarSocket",
    "Command",
    "CommandError",
    "Level",
    "Limits",
    "Peer",
]

log = logging.getLogger(__name__)

_YIELD_EVERY = 4  # packets written between yields to the event loop


@dataclass(frozen=True)
class Limits:
    """How long and how much a listener waits for and takes from a client."""

    handshake_timeout: float = 20.0  # the whole DC_AUTHENTICATE exchange
    read_timeout: float = 20.0  # one message (DaemonCore's 20 s command socket timeout)
    write_timeout: float = 60.0  # one message out to a client that stopped reading
    max_message: int = 16 * 1024 * 1024  # bytes in one message (HTCondor: no limit)
    max_connections: int = 1024
    packet_size: int = SEND_PACKET


class CedarClosed(ConnectionError):
    """The peer closed the connection (or it broke) before a message was complete."""


class CommandError(Exception):
    """A handler's refusal (a servicer's ``context.abort``): logged, and the handler
    sends HTCondor's error reply for its command before raising it, if there is one."""

    def __init__(self, code: object, details: str) -> None:
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details


class CedarSocket:
    """One connection's message I/O: whole messages in, whole messages out."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        limits: Limits,
        codec: PacketCodec | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._limits = limits
        # a connection carried on from another process comes with its packet state
        self._codec = codec or PacketCodec(packet_size=limits.packet_size)
        self._unread: Message | None = None
        self._pending = b""  # flushed bytes held back to end the message with
        self._packets = 0
        sockname = writer.get_extra_info("sockname") or ("", 0)
        peername = writer.get_extra_info("peername") or ("", 0)
        self.local_address: tuple[str, int] = (str(sockname[0]), int(sockname[1]))
        self.peer_address: tuple[str, int] = (str(peername[0]), int(peername[1]))

    @property
    def limits(self) -> Limits:
        return self._limits

    def detach(self) -> tuple[int, tuple[Any, ...]] | None:
        """A duplicate of the connection's descriptor and its packet state, for another
        process to carry the connection on (the caller closes this side, which writes
        nothing more); None when that cannot be: bytes read or held back, or a cipher
        whose state cannot be exported."""
        if self._pending or self._unread is not None or self._reader.at_eof():
            return None
        state = self._codec.export_state()
        raw = self._writer.get_extra_info("socket")
        if state is None or raw is None:
            return None
        return os.dup(raw.fileno()), state

    @property
    def peer_text(self) -> str:
        return f"<{self.peer_address[0]}:{self.peer_address[1]}>"

    @property
    def encrypted(self) -> bool:
        return self._codec.encrypted

    def enable_cipher(self, cipher: FrameCipher) -> None:
        """Encrypt every packet from here on, both ways."""
        self._codec.set_cipher(cipher)

    def unread(self, msg: Message) -> None:
        """Hand ``msg`` (the rest of it) to the next ``recv``: a command sent without
        DC_AUTHENTICATE carries its payload in the message that names it."""
        self._unread = msg

    async def recv(self, timeout: float | None = None) -> Message:
        """The next whole message; ``asyncio.TimeoutError`` past ``timeout`` (the
        listener's ``read_timeout`` by default)."""
        if self._unread is not None:
            msg, self._unread = self._unread, None
            return msg
        limit = self._limits.read_timeout if timeout is None else timeout
        msg = await asyncio.wait_for(self._read_message(), limit)
        # what the message sets off (a handshake's step, a command) runs in a turn of
        # its own: fifty clients whose messages arrive at once take turns with each
        # other and with the daemon's timers instead of all running in one round
        await turns.own_turn()
        return msg

    async def _read_message(self) -> Message:
        parts = []
        total = 0
        while True:
            header = await self._read_exactly(HEADER_SIZE)
            end, length = parse_header(header)
            if total + length > self._limits.max_message + 64:  # room for a cipher's tag
                raise FramingError(
                    f"message from {self.peer_text} exceeds {self._limits.max_message} bytes"
                )
            payload = self._codec.decode(header, await self._read_exactly(length))
            total += len(payload)
            parts.append(payload)
            if end:
                return Message(b"".join(parts), encrypted=self._codec.encrypted)

    async def _read_exactly(self, n: int) -> bytes:
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            raise CedarClosed(
                f"{self.peer_text} closed the connection "
                f"({len(exc.partial)} of {n} bytes of a packet read)"
            ) from None
        except ConnectionError as exc:
            raise CedarClosed(f"connection to {self.peer_text} broke: {exc}") from None

    async def send(self, builder: Builder) -> None:
        """Send ``builder``'s values as one message (with anything flushed before)."""
        data = self._pending + builder.build(encrypted=self.encrypted)
        self._pending = b""
        await asyncio.wait_for(self._write(data, end=True), self._limits.write_timeout)

    async def flush(self, builder: Builder) -> None:
        """Send what ``builder`` holds so far as the start of a message still being
        built (a long reply goes out while the rest is made); ``send`` ends it."""
        data = self._pending + builder.take().build(encrypted=self.encrypted)
        keep = len(data) % self._limits.packet_size or min(len(data), self._limits.packet_size)
        self._pending = data[len(data) - keep :]
        await asyncio.wait_for(
            self._write(data[: len(data) - keep], end=False), self._limits.write_timeout
        )

    async def _write(self, data: bytes, *, end: bool) -> None:
        writer = self._writer
        for packet in self._codec.iter_encode(data, end=end):
            writer.write(packet)
            self._packets += 1
            if self._packets % _YIELD_EVERY == 0:
                await writer.drain()
                await asyncio.sleep(0)  # drain does not yield below the high-water mark
        await writer.drain()

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)


Handler = Callable[["CedarRequest"], Awaitable[None]]


@dataclass(frozen=True)
class Command:
    """One CEDAR command a listener answers, at the level a peer must hold."""

    number: int
    level: Level
    handler: Handler
    name: str = ""


@dataclass
class CedarRequest:
    """What a handler is given: the command, the socket, and the authorized peer."""

    command: int
    sock: CedarSocket
    peer: Peer


@dataclass
class ServerCounts:
    """What a listener has seen (for tests and metrics)."""

    connections: int = 0
    commands: int = 0
    refused: int = 0
    malformed: int = 0
    timeouts: int = 0
    errors: int = 0
    by_command: dict[int, int] = field(default_factory=dict)
    query_worker: dict[str, int] = field(default_factory=dict)  # query_worker.py's counts


class CedarServer:
    """A listener answering ``commands`` under ``security``."""

    def __init__(
        self,
        commands: Iterable[Command],
        security: SecurityConfig,
        *,
        name: str,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.time,
        alias: str | None = None,
    ) -> None:
        self.name = name
        self.limits = limits or Limits()
        self._commands: dict[int, Command] = {}
        for command in commands:
            if command.number in self._commands:
                raise ValueError(f"command {command.number} registered twice on {name}")
            self._commands[command.number] = command
        self.security = SecurityManager(
            config=security,
            level_of=lambda n: c.level if (c := self._commands.get(n)) else None,
            commands_at=lambda lv: [c.number for c in self._commands.values() if c.level is lv],
            clock=clock,
        )
        self.counts = ServerCounts()
        self._alias = alias or socket.gethostname()
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # what stops with the listener (a query worker process: query_worker.py)
        self.closers: list[Callable[[], Awaitable[None]]] = []
        self.host = ""
        self.port = 0

    @property
    def command_numbers(self) -> list[int]:
        """The commands it answers, by number."""
        return sorted(self._commands)

    @property
    def address(self) -> str:
        """``host:port`` the listener is bound to."""
        return f"{self.host}:{self.port}"

    @property
    def sinful(self) -> str:
        """HTCondor's sinful string for MyAddress (no UDP: we listen on TCP only)."""
        h, p = self.host, self.port
        return f"<{h}:{p}?addrs={h}-{p}&alias={self._alias}&noUDP>"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen on ``host:port`` (0: any free port); the bound port."""
        self._server = await asyncio.start_server(self._on_connect, host, port)
        sockname = self._server.sockets[0].getsockname()
        self.host, self.port = host, int(sockname[1])
        log.info("%s: CEDAR listener at %s", self.name, self.sinful)
        return self.port

    async def stop(self) -> None:
        """Stop listening and end every connection."""
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            self._server = None
        closers, self.closers = self.closers, []
        for close in closers:
            try:
                await close()
            except Exception:
                log.exception("%s: stopping", self.name)

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        sock = CedarSocket(reader, writer, self.limits)
        if len(self._tasks) >= self.limits.max_connections:
            log.warning(
                "%s: refusing %s: %d connections open", self.name, sock.peer_text, len(self._tasks)
            )
            await sock.close()
            return
        assert task is not None
        self._tasks.add(task)
        self.counts.connections += 1
        try:
            await self._serve(sock)
        finally:
            self._tasks.discard(task)
            await sock.close()

    async def _serve(self, sock: CedarSocket) -> None:
        where = f"{self.name}: {sock.peer_text}"
        try:
            await self._run(sock)
        except HandshakeRefused as exc:
            self.counts.refused += 1
            log.info("%s: %s", where, exc)
        except (FramingError, StreamError) as exc:
            self.counts.malformed += 1
            log.info("%s: malformed: %s", where, exc)
        except UnicodeEncodeError as exc:
            # text that was not UTF-8 on the wire (kept as lone surrogates, stream.py)
            # where the daemon needs text: a name or value its gRPC side cannot carry
            self.counts.malformed += 1
            log.info("%s: malformed: text that is not UTF-8: %s", where, exc)
        except asyncio.TimeoutError:
            self.counts.timeouts += 1
            log.info("%s: timed out", where)
        except CedarClosed as exc:
            log.debug("%s: %s", where, exc)
        except CommandError as exc:
            log.info("%s: refused: %s", where, exc)
        except asyncio.CancelledError:
            raise  # stop(): the task ends; the finally clause closes the socket
        except Exception as exc:  # a handler's bug must not end the listener
            self.counts.errors += 1
            log.error("%s: %s: %s", where, type(exc).__name__, exc)

    async def _run(self, sock: CedarSocket) -> None:
        async def open_command() -> tuple[Command, Peer]:
            first = await sock.recv(self.limits.handshake_timeout)
            number = first.get_int("command")
            if number == DC_AUTHENTICATE:
                neg = await self.security.negotiate(sock, first)
                if neg.command in (DC_AUTHENTICATE, DC_SEC_QUERY):
                    await self._security_only(sock, neg.command, neg.authorized)
                    raise _Done
                return self._commands[neg.command], neg.peer
            return self._raw(sock, number, first), self._unauthenticated(sock)

        try:
            command, peer = await asyncio.wait_for(open_command(), self.limits.handshake_timeout)
        except _Done:
            return
        self.counts.commands += 1
        self.counts.by_command[command.number] = self.counts.by_command.get(command.number, 0) + 1
        await command.handler(CedarRequest(command.number, sock, peer))

    def _raw(self, sock: CedarSocket, number: int, first: Message) -> Command:
        """A command sent without DC_AUTHENTICATE: allowed only where our policy lets an
        unauthenticated peer run it (VerifyCommand's check)."""
        command = self._commands.get(number)
        if command is None:
            raise HandshakeRefused(f"received command {number}: UNREGISTERED COMMAND")
        policy = self.security.policy_for(command.level)
        if (
            sec_req(string_attr(policy, "OutgoingNegotiation")) is SecReq.REQUIRED
            or sec_req(string_attr(policy, "AuthenticationNew")) is SecReq.REQUIRED
            or not self._unauthenticated(sock).permits(command.level)
        ):
            raise HandshakeRefused(
                f"PERMISSION DENIED to unauthenticated command {number} (level {command.level})"
            )
        sock.unread(first)
        return command

    def _unauthenticated(self, sock: CedarSocket) -> Peer:
        cfg = self.security.config
        from ..auth import Principal, Role

        principal = Principal(Role.READ) if cfg.unauthenticated_read else None
        return Peer(user=UNAUTHENTICATED_USER, principal=principal, address=sock.peer_text)

    async def _security_only(self, sock: CedarSocket, command: int, authorized: bool) -> None:
        """DC_AUTHENTICATE as the command only makes a session; DC_SEC_QUERY asks
        whether the command would be authorized."""
        if command == DC_SEC_QUERY:
            reply = ClassAd()
            reply["AuthorizationSucceeded"] = authorized
            await sock.send(Builder().put_ad(reply))


class _Done(Exception):
    """The connection's work ended inside the handshake."""
