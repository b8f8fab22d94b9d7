"""The files HTCondor's own clients need to find a running pool, without flags.

``CONDOR_CONFIG`` pointing at :func:`write_client_config`'s file is enough for
``htcondor2.Collector()``, ``htcondor2.Schedd()`` and ``htcondor2.Negotiator()`` with no
arguments, and for the ``htcondor`` command: ``COLLECTOR_HOST`` is the collector's CEDAR
address; the first schedd is "the local schedd" through ``SCHEDD_ADDRESS_FILE`` (the way
a client finds the schedd of its own host, by the file that schedd wrote); tokens are read
from ``SEC_TOKEN_DIRECTORY`` (one token per file, as ``mockpool token create --out``
writes them).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..condor_version import CONDOR_PLATFORM, CONDOR_VERSION

__all__ = ["CONFIG_FILE", "SCHEDD_ADDRESS_FILE", "TOKEN_DIR", "write_client_config"]

CONFIG_FILE = "condor_config"
SCHEDD_ADDRESS_FILE = ".schedd_address"
TOKEN_DIR = "tokens.d"


def _config_text(folder: Path, collector: str, trust_domain: str, methods: str) -> str:
    return (
        "# HTCondor's clients reach this mockpool pool with CONDOR_CONFIG set to this file.\n"
        "# Written by the pool when it starts (its addresses change from run to run).\n"
        f"COLLECTOR_HOST = {collector}\n"
        f"SCHEDD_ADDRESS_FILE = {folder / SCHEDD_ADDRESS_FILE}\n"
        # root's tools read the super-user file instead (Daemon::useSuperPort)
        f"SCHEDD_SUPER_ADDRESS_FILE = {folder / SCHEDD_ADDRESS_FILE}\n"
        f"SEC_TOKEN_DIRECTORY = {folder / TOKEN_DIR}\n"
        f"SEC_CLIENT_AUTHENTICATION_METHODS = {methods}\n"
        f"TRUST_DOMAIN = {trust_domain}\n"
    )


def write_client_config(
    folder: Path,
    collector: str,
    schedd_address: str,
    *,
    trust_domain: str,
    methods: str = "FS, IDTOKENS",
) -> Path:
    """Write ``condor_config``, the schedd's address file and an empty ``tokens.d`` into
    ``folder``; returns the config's path. ``collector`` is ``host:port`` of the
    collector's CEDAR listener, ``schedd_address`` the first schedd's MyAddress."""
    folder.mkdir(parents=True, exist_ok=True)
    tokens = folder / TOKEN_DIR
    tokens.mkdir(mode=0o700, exist_ok=True)
    os.chmod(tokens, 0o700)  # tokens are secrets: HTCondor refuses a world-readable one
    # the address file as a daemon writes it: its sinful, then its version banners
    (folder / SCHEDD_ADDRESS_FILE).write_text(
        f"{schedd_address}\n{CONDOR_VERSION}\n{CONDOR_PLATFORM}\n"
    )
    path = folder / CONFIG_FILE
    tmp = folder / (CONFIG_FILE + ".tmp")
    tmp.write_text(_config_text(folder, collector, trust_domain, methods))
    tmp.replace(path)
    return path
