"""What HTCondor's `htcondor` tool reads from the daemons' ads to say how they are
(htcondor_cli's convert_ad.py): Machine (the host it groups daemons by), MyAddress and
RecentDaemonCoreDutyCycle (the loop's busy share: past 95% the daemon is unhealthy).
The shells measure the duty cycle; each ad builder carries what it is given."""

from __future__ import annotations

from pathlib import Path

from builders.cores import v

from mockpool.collector.collector import Collector
from mockpool.config import parse_config
from mockpool.negotiator.negotiator import Negotiator
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd


def test_collector_ad_names_its_host_and_duty_cycle() -> None:
    c = Collector(parse_config("COLLECTOR_NAME = pool\n", "<t>"))
    c.duty_cycle = 0.25
    c.start(5.0, "cm.example.org", "<127.0.0.1:9618>")
    (own,) = c.store.query("Collector", now=5.0)
    assert v(own, "Name") == "pool@cm.example.org"
    assert v(own, "Machine") == "cm.example.org"
    assert v(own, "RecentDaemonCoreDutyCycle") == 0.25
    assert v(own, "MyAddress") == "<127.0.0.1:9618>"
    c.duty_cycle = 0.5  # the next refresh, 900 s on (COLLECTOR_UPDATE_INTERVAL), has it
    c.on_wakeup(905.0)
    (own,) = c.store.query("Collector", now=905.0)
    assert v(own, "RecentDaemonCoreDutyCycle") == 0.5


def test_negotiator_ad_names_its_host_and_duty_cycle(tmp_path: Path) -> None:
    cfg = parse_config("", "test.conf").for_subsystem("NEGOTIATOR")
    n = Negotiator("negotiator", cfg, tmp_path)
    ad = n.negotiator_ad("<127.0.0.1:9000>", 10.0, machine="cm.example.org", duty_cycle=0.125)
    assert v(ad, "Machine") == "cm.example.org"
    assert v(ad, "RecentDaemonCoreDutyCycle") == 0.125
    # unmeasured (a virtual run): 0.0, a real number as HTCondor's, never missing
    assert v(n.negotiator_ad("", 10.0), "RecentDaemonCoreDutyCycle") == 0.0


def test_schedd_ad_carries_its_duty_cycle(tmp_path: Path) -> None:
    s = Schedd(
        "schedd1@ap.example.org", JobQueue(tmp_path / "q.sqlite"), parse_config("", "<t>"), 0.0
    )
    ad = s.schedd_ad(20.0, 0.75)
    assert v(ad, "Machine") == "ap.example.org"
    assert v(ad, "RecentDaemonCoreDutyCycle") == 0.75
    assert v(s.schedd_ad(20.0), "RecentDaemonCoreDutyCycle") == 0.0
