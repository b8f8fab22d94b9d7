"""What HTCondor's tools print when the daemon they ask is down, instead of gRPC's
words ("/mockpool.v1.Schedd/QueryJobs still UNAVAILABLE after 4 attempts ...")."""

from __future__ import annotations

import re

_METHOD = re.compile(r"/mockpool\.v1\.(\w+)/(\w+)")


def daemon_down_message(details: str, collector: str, schedd: tuple[str, str] | None) -> str:
    """The tool's words for a call that found its daemon down. ``details`` is the failed
    call's text (it names the method), ``collector`` the collector's host:port and
    ``schedd`` the (name, host:port) of the schedd asked, if one was. Queries of a schedd
    read as condor_q's "-- Failed to fetch ads from: <addr> : name", other schedd calls
    as condor_submit's "ERROR: Failed to connect to queue manager name", the collector as
    "Error: Couldn't contact the condor_collector on host:port."."""
    m = _METHOD.search(details)
    service, method = (m.group(1), m.group(2)) if m else ("", "")
    if service == "Schedd" and schedd is not None:
        name, address = schedd
        if method in ("QueryJobs", "History"):
            return f"-- Failed to fetch ads from: <{address}> : {name}"
        return f"ERROR: Failed to connect to queue manager {name}"
    if service == "Negotiator":
        return "Error: Couldn't contact the condor_negotiator"
    return f"Error: Couldn't contact the condor_collector on {collector}."
