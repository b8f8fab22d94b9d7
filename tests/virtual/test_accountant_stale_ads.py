"""A startd cut off from the central manager: the collector keeps its last ads (Claimed)
until they expire, and the accountant charges them, as HTCondor's does; the checker
allows that charge and nothing more. Times are pool seconds on the virtual clock."""

from __future__ import annotations

import pytest

from mockpool import Pool
from mockpool.pool.check import check
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 3

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 30
CLASSAD_LIFETIME = 300

[[startds]]
count = 2
machines_per_actor = 1
config = "NUM_CPUS = 2"

[[schedds]]
count = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 200
queue 4
'''

[[faults]]
kind = "partition"
target = "{target}"
peer = "{peer}"
at = 100
duration = {duration}
"""


@pytest.mark.parametrize(
    ("target", "peer", "duration"),
    [("exec0001", "collector", 400), ("collector", "exec0001", 1000)],
)
def test_a_partitioned_startds_stale_ads_are_charged_until_they_go(
    target: str, peer: str, duration: int
) -> None:
    """The jobs run 5-205; exec0001 cannot reach the collector from 100: its two claims,
    released at 205, stay charged to alice (the ads it sent before, at 90) until the
    partition ends at 500, or, in a longer one, until the housekeeper drops them
    (CLASSAD_LIFETIME 300, a round every 300 s: at 600, 510 s after they were sent).
    exec0002's claims stop being charged at once."""
    text = SPEC.format(target=target, peer=peer, duration=duration)
    with Pool(parse_spec(text, "<t>")) as pool:
        pool.sleep_until(900)
        events = pool.events
        report = check(
            list(enumerate(events, 1)),
            pool.jobs(),
            pool.jobs(history=True),
            pool.slots(),
        )
    assert report.violations == []
    released = max(e["t"] for e in events if e["kind"] == "release")
    assert released < 210
    stale = [e for e in events if e["kind"] == "cycle" and e.get("charged") and e["t"] > 300]
    ad_gone = min(100 + duration, 600)
    assert {tuple(e["charged"].items()) for e in stale} == {(("alice@mockpool", 2),)}
    assert max(e["start"] for e in stale) < ad_gone + 30
    assert min(e["start"] for e in stale) < 400 and max(e["start"] for e in stale) > ad_gone - 30
