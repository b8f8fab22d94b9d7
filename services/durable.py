"""What daemons keep across a crash, behind one narrow interface: files on the real disk
for a live pool, a simulated disk in memory for a virtual one (FoundationDB's simulation).

- :class:`DiskFiles`: small whole files in a folder (the accountant), each replaced
  atomically and fsync'd before it is renamed into place, so a crash or a power loss
  leaves the old file or the new one.
- :class:`SimulatedDisk`: a virtual pool's durable state: the same files in memory and
  the schedds' job queues (``schedd/memqueue.py``). A simulated crash drops a daemon's
  memory, never the disk's; what the disk holds is exactly what was committed.

Daemon cores read and write through these; the same recovery code runs on both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .schedd.memqueue import MemoryJobQueue, _Tables

__all__ = ["DiskFiles", "Files", "MemoryFiles", "SimulatedDisk"]


class Files(Protocol):
    """Whole small files by name, each replaced atomically."""

    def read(self, name: str) -> bytes | None:
        """The file's bytes, None when there is none; OSError when it cannot be read."""
        ...

    def replace(self, name: str, data: bytes) -> None:
        """Make ``data`` the file's content, durably and all at once (OSError)."""
        ...

    def set_aside(self, name: str, new_name: str) -> None:
        """Keep a damaged file under another name, for a person to look at."""
        ...

    def where(self, name: str) -> str:
        """How messages name the file."""
        ...


class DiskFiles:
    """Files in ``folder`` on the real disk."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def read(self, name: str) -> bytes | None:
        path = self.folder / name
        return path.read_bytes() if path.exists() else None

    def replace(self, name: str, data: bytes) -> None:
        path = self.folder / name
        tmp = path.with_name(path.name + ".tmp")
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def set_aside(self, name: str, new_name: str) -> None:
        os.replace(self.folder / name, self.folder / new_name)

    def where(self, name: str) -> str:
        return str(self.folder / name)


class MemoryFiles:
    """Files of one folder of a :class:`SimulatedDisk`."""

    def __init__(self, store: dict[str, bytes], folder: str) -> None:
        self._store = store
        self.folder = folder

    def read(self, name: str) -> bytes | None:
        return self._store.get(f"{self.folder}/{name}")

    def replace(self, name: str, data: bytes) -> None:
        self._store[f"{self.folder}/{name}"] = bytes(data)

    def set_aside(self, name: str, new_name: str) -> None:
        data = self._store.pop(f"{self.folder}/{name}", None)
        if data is not None:
            self._store[f"{self.folder}/{new_name}"] = data

    def where(self, name: str) -> str:
        return f"{self.folder}/{name} (simulated disk)"


class SimulatedDisk:
    """The durable state of one virtual pool: files and job queues, by name."""

    def __init__(self) -> None:
        self._files: dict[str, bytes] = {}
        self._queues: dict[str, _Tables] = {}

    def files(self, folder: str) -> MemoryFiles:
        return MemoryFiles(self._files, folder)

    def job_queue(self, name: str, *, birth: float = 0.0) -> MemoryJobQueue:
        """Open queue ``name`` (made on first open, as SQLite makes its file)."""
        from .schedd.memqueue import MemoryJobQueue, new_tables

        tables = self._queues.get(name)
        if tables is None:
            tables = self._queues[name] = new_tables(birth)
        return MemoryJobQueue(name, tables)

    def existing_queue(self, name: str) -> MemoryJobQueue:
        """Queue ``name`` as it is, for a reader from outside (a dead schedd's output):
        FileNotFoundError when no schedd ever opened it, as for a missing file; nothing
        is made."""
        from .schedd.memqueue import MemoryJobQueue

        tables = self._queues.get(name)
        if tables is None:
            raise FileNotFoundError(f"{name}: no job queue on the simulated disk")
        return MemoryJobQueue(name, tables)
