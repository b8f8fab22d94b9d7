"""The collector's core: its timers, housekeeping and updates, on numbers worked out by
hand (no clock, no gRPC)."""

from __future__ import annotations

from mockpool.classad import ClassAd
from mockpool.collector.collector import Collector, CollectorUpdate
from mockpool.config import parse_config


def collector(text: str = "", **kw: float) -> Collector:
    return Collector(parse_config(text, "pool.conf"), **kw)  # type: ignore[arg-type]


def update(i: int, name: str, **attrs: object) -> CollectorUpdate:
    ad = ClassAd(Name=name, State="Unclaimed")
    ad.update(attrs)
    return CollectorUpdate(i, "Machine", ad)


def test_defaults_refresh_the_own_ad_and_housekeep_every_900_seconds() -> None:
    c = collector()
    c.start(100.0, "cm.example", "10.0.0.1:9618")
    assert c.name == "cm.example"
    own = c.store.get("Collector", "cm.example").ad
    assert own.eval("HostsTotal") == 0 and own.eval("LastHeardFrom") == 100
    assert c.next_wakeup() == 1000.0  # both timers, one CLASSAD_LIFETIME after start


def test_a_shorter_update_interval_refreshes_the_own_ad_more_often() -> None:
    c = collector("COLLECTOR_UPDATE_INTERVAL = 300\nCOLLECTOR_NAME = central\n")
    c.start(0.0, "cm", "")
    assert c.name == "central@cm"
    assert c.next_wakeup() == 300.0
    c.advertise([update(0, "slot1@a")], 10.0)
    c.on_wakeup(300.0)
    own = c.store.get("Collector", "central@cm").ad
    assert own.eval("HostsTotal") == 1 and own.eval("HostsUnclaimed") == 1
    assert own.eval("UpdateSequenceNumber") == 2 and own.eval("UpdateInterval") == 7200
    assert c.next_wakeup() == 600.0
    c.on_wakeup(600.0)
    assert c.next_wakeup() == 900.0  # both now: the refresh, then housekeeping


def test_no_housekeeper_when_classad_lifetime_is_zero_and_the_own_ad_still_refreshes() -> None:
    c = collector("CLASSAD_LIFETIME = 0\nCOLLECTOR_UPDATE_INTERVAL = 600\n")
    c.start(0.0, "cm", "")
    assert c.housekeeping_interval is None
    c.advertise([update(0, "slot1@a")], 0.0)
    for t in (600.0, 1200.0, 1800.0):
        assert c.next_wakeup() == t
        c.on_wakeup(t)
    assert c.store.counts() == {"Collector": 1, "Machine": 1}  # never expires
    assert c.drain_events() == []


def test_the_housekeeper_drops_ads_older_than_their_lifetime() -> None:
    # lifetime 900: an ad heard at 100 is stale once int(now) - 100 > 900
    c = collector()
    c.start(0.0, "cm", "")
    c.advertise([update(0, "slot1@a"), update(1, "slot2@a", ClassAdLifetime=2000)], 100.0)
    c.on_wakeup(900.0)  # 900 - 100 = 800: kept
    assert c.drain_events() == []
    assert c.next_wakeup() == 1800.0
    c.on_wakeup(1800.0)  # 1700 > 900: slot1 goes; slot2 has its own lifetime of 2000
    assert c.drain_events() == [("ad_expired", {"ad_type": "Machine", "name": "slot1@a"})]
    assert c.stats["expired"] == 1
    assert sorted(c.store.counts()) == ["Collector", "Machine"]


def test_a_late_wakeup_keeps_each_timers_period() -> None:
    c = collector("CLASSAD_LIFETIME = 600\nCOLLECTOR_UPDATE_INTERVAL = 900\n")
    c.start(0.0, "cm", "")
    assert c.next_wakeup() == 600.0  # the own ad refreshes every min(900, 600)
    c.on_wakeup(650.0)  # 50 late: the next rounds stay at 1200
    assert c.next_wakeup() == 1200.0
    c.on_wakeup(2000.0)  # more than a period late (1800 passed): one more round at once
    assert c.next_wakeup() == 2000.0
    c.on_wakeup(2000.0)
    assert c.next_wakeup() == 2600.0


def test_updates_are_applied_one_by_one_and_refusals_named() -> None:
    c = collector()
    c.start(0.0, "cm", "")
    bad = CollectorUpdate(2, "Machine", None, name="slot9@z", error="not a ClassAd message")
    nameless = CollectorUpdate(3, "Machine", ClassAd(Cpus=1))
    accepted, errors = c.advertise([update(0, "slot1@a"), update(1, "slot2@a"), bad, nameless], 5)
    assert accepted == 2
    assert errors[0] == "update 2 (Machine 'slot9@z'): not a ClassAd message"
    assert errors[1].startswith("update 3 (Machine): ") and "Name" in errors[1]
    assert c.stats["updates_refused"] == 2
    gone = CollectorUpdate(4, "Machine", ClassAd(Name="slot1@a"), invalidate=True)
    assert c.advertise([gone], 6.0) == (1, [])
    assert c.drain_events() == [("ad_invalidated", {"ad_type": "Machine", "name": "slot1@a"})]
    assert c.store.counts() == {"Collector": 1, "Machine": 1}
