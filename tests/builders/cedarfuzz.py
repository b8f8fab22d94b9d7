"""What the CEDAR fuzz tests share: sending bytes to a listener until it closes, and a log
handler that keeps the errors logged meanwhile."""

from __future__ import annotations

import logging
import socket


class ErrorLog(logging.Handler):
    """The ERROR records logged while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def send(port: int, data: bytes, stall: bool) -> None:
    """``data`` to the listener on ``port``; then, unless ``stall``, the end of what we
    send; then read until the listener closes (its checks or its timeouts)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:  # 30 s: a hang guard
        try:
            s.sendall(data)
            if not stall:
                s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass  # it closed while we were still writing
