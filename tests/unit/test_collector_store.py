"""The collector's ad store (pure core): every number below is worked out by hand."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.classad import ClassAd, parse_expr
from mockpool.collector.selfad import pool_totals
from mockpool.collector.store import (
    AdStore,
    BadConstraint,
    BadUpdate,
    CostlyConstraint,
    PrivateAdsRefused,
    projection_keys,
)
from mockpool.v1 import classad_pb2, collector_pb2
from mockpool.wire import ad_from_pb, ad_to_pb, frame_field


def slot(name: str, **attrs: object) -> ClassAd:
    ad = ClassAd(Name=name)
    ad.update(attrs)
    return ad


def names(ads: list[ClassAd]) -> list[str]:
    return sorted(str(a.get_value("Name")) for a in ads)


@pytest.fixture
def pool() -> AdStore:
    """Three slots and two private ads, all stored at t=100."""
    store = AdStore()
    store.update("Machine", slot("slot1@a", Cpus=4, State="Unclaimed", Memory=8192), 100.0)
    store.update("Machine", slot("slot2@a", Cpus=1, State="Claimed", Memory=2048), 100.0)
    store.update("Machine", slot("slot3@a", State="Owner"), 100.0)  # no Cpus: UNDEFINED
    store.update("MachinePrivate", slot("slot1@a", Capability="<a:1>#1#1#s1"), 100.0)
    store.update("MachinePrivate", slot("slot2@a", Capability="<a:1>#1#2#s2"), 100.0)
    return store


# ----------------------------------------------------------------------------- updates


def test_update_stores_stamps_and_replaces() -> None:
    store = AdStore()
    rec = store.update("Machine", slot("slot1@a", Cpus=4, UpdateSequenceNumber=7), 10.9)
    assert rec.ad_type == "Machine" and rec.name == "slot1@a"
    ad = store.get("Machine", "slot1@a").ad
    assert ad.eval("LastHeardFrom") == 10  # int(now)
    assert ad.eval("MyType") == "Machine"  # an ad without MyType gets the update's type
    assert ad.eval("UpdateSequenceNumber") == 7  # kept as the daemon sent it
    # A second update replaces the whole ad (attributes not re-sent are gone).
    store.update("Machine", slot("slot1@a", Cpus=8, UpdateSequenceNumber=8), 20.5)
    ad = store.get("Machine", "slot1@a").ad
    assert ad.eval("Cpus") == 8 and ad.eval("LastHeardFrom") == 20
    assert ad.eval("UpdateSequenceNumber") == 8
    assert store.counts() == {"Machine": 1}
    assert store.updates == 2


def test_update_copies_the_callers_ad() -> None:
    store = AdStore()
    mine = slot("slot1@a", Cpus=4)
    store.update("Machine", mine, 5.0)
    assert "LastHeardFrom" not in mine and "MyType" not in mine
    mine["Cpus"] = 99
    assert store.get("Machine", "slot1@a").ad.eval("Cpus") == 4


def test_names_and_types_ignore_case() -> None:
    store = AdStore()
    store.update("machine", slot("slot1@a", Cpus=1), 1.0)
    store.update("MACHINE", slot("SLOT1@A", Cpus=2), 2.0)
    assert store.counts() == {"Machine": 1}  # one ad, HTCondor's spelling of the type
    rec = store.get("Machine", "Slot1@a")
    assert rec is not None and rec.ad.eval("Cpus") == 2 and rec.name == "SLOT1@A"
    # Types the store has not heard of keep the spelling first seen.
    store.update("GlideinFactory", slot("f1"), 3.0)
    store.update("glideinfactory", slot("F1"), 3.0)
    assert store.counts() == {"Machine": 1, "GlideinFactory": 1}
    # asked again (each update asks), a spelling gives the stored one, and "Any" and a
    # blank type stay refused
    for _ in range(2):
        assert store.canonical_type(" GLIDEINfactory ") == "GlideinFactory"
        assert store.canonical_type("machine") == "Machine"
        assert store.canonical_type("NewType") == "NewType"
        for bad in ("any", " ", ""):
            with pytest.raises(BadUpdate):
                store.canonical_type(bad)


def test_any_mytype_is_accepted() -> None:
    store = AdStore()
    for t in ("Scheduler", "Submitter", "Negotiator", "Accounting"):
        store.update(t, slot(f"{t.lower()}@a"), 0.0)
    assert store.counts() == {"Scheduler": 1, "Submitter": 1, "Negotiator": 1, "Accounting": 1}
    assert store.query("Accounting")[0].eval("MyType") == "Accounting"


@pytest.mark.parametrize(
    ("ad", "message"),
    [
        (ClassAd(Cpus=8), "Machine ad has no Name"),
        (ClassAd(Name=5, Cpus=8), "Name that is not a string (5)"),
        (ClassAd(Name="", Cpus=8), "empty Name"),
        (ClassAd(Name=parse_expr("Missing"), Cpus=8), "not a string (undefined)"),
        (ClassAd(Name="slot1@a", MyType="Scheduler"), "has MyType 'Scheduler', not 'Machine'"),
    ],
)
def test_bad_update_is_refused_and_changes_nothing(ad: ClassAd, message: str) -> None:
    store = AdStore()
    store.update("Machine", slot("slot1@a", Cpus=4), 10.0)
    before = store.get("Machine", "slot1@a").ad.copy()
    sent = ad.copy()
    with pytest.raises(BadUpdate, match=re.escape(message)) as info:
        store.update("Machine", ad, 50.0)
    assert isinstance(info.value, ValueError)
    assert store.get("Machine", "slot1@a").ad == before  # the stored ad is untouched
    assert ad == sent  # and so is the caller's
    assert store.counts() == {"Machine": 1} and store.refused == 1


def test_empty_ad_type_is_refused() -> None:
    store = AdStore()
    with pytest.raises(BadUpdate, match="no ad type"):
        store.update("  ", slot("x"), 0.0)
    assert len(store) == 0


def test_owned_update_keeps_the_object() -> None:
    store = AdStore()
    ad = slot("slot1@a")
    assert store.update("Machine", ad, 3.0, owned=True).ad is ad
    assert ad.eval("LastHeardFrom") == 3


# ----------------------------------------------------------------------------- expiry


def test_expiry_boundary_is_strictly_greater() -> None:
    # HTCondor: removed when now - LastHeardFrom > lifetime (whole seconds).
    store = AdStore()  # CLASSAD_LIFETIME 900
    store.update("Machine", slot("slot1@a"), 100.0)  # LastHeardFrom 100
    assert store.expire(1000.0) == []  # 900 s old: not > 900, stays
    assert store.expire(1000.9) == []  # still 900 whole seconds
    assert store.expire(1001.0) == [("Machine", "slot1@a")]  # 901 > 900
    assert store.get("Machine", "slot1@a") is None and len(store) == 0


def test_refresh_restarts_the_lifetime() -> None:
    store = AdStore(classad_lifetime=300)
    store.update("Scheduler", slot("schedd@a"), 0.0)
    store.update("Scheduler", slot("schedd@a"), 250.0)
    assert store.expire(550.0) == []  # 300 since the refresh at 250
    assert store.expire(551.0) == [("Scheduler", "schedd@a")]


def test_classad_lifetime_attribute_overrides_the_default() -> None:
    store = AdStore()
    store.update("Machine", slot("short@a", ClassAdLifetime=60), 100.0)
    store.update("Machine", slot("expr@a", ClassAdLifetime=parse_expr("30 * 2")), 100.0)
    store.update("Machine", slot("real@a", ClassAdLifetime=60.0), 100.0)  # not an integer
    store.update("Machine", slot("plain@a"), 100.0)
    assert store.expire(160.0) == []
    gone = store.expire(161.0)
    assert sorted(gone) == [("Machine", "expr@a"), ("Machine", "short@a")]
    assert store.expire(1000.0) == []  # the others live CLASSAD_LIFETIME = 900
    assert sorted(store.expire(1001.0)) == [("Machine", "plain@a"), ("Machine", "real@a")]


def test_expired_slot_takes_its_private_ad_along() -> None:
    store = AdStore()
    store.update("Machine", slot("slot1@a"), 0.0)
    store.update("MachinePrivate", slot("slot1@a", Capability="c1"), 0.0)
    store.update("MachinePrivate", slot("slot1@a", Capability="c2"), 500.0)  # fresh
    assert store.expire(901.0) == [("Machine", "slot1@a"), ("MachinePrivate", "slot1@a")]
    assert len(store) == 0


def test_private_ad_expires_on_its_own_clock() -> None:
    store = AdStore()
    store.update("MachinePrivate", slot("slot1@a", Capability="c1"), 0.0)
    store.update("Machine", slot("slot1@a"), 500.0)
    assert store.expire(901.0) == [("MachinePrivate", "slot1@a")]
    assert store.counts() == {"Machine": 1}


def test_stale_ad_answers_queries_until_the_housekeeper_runs() -> None:
    store = AdStore()
    store.update("Machine", slot("slot1@a"), 0.0)
    assert names(store.query("Machine", now=5000.0)) == ["slot1@a"]
    store.expire(5000.0)
    assert store.query("Machine", now=5000.0) == []


def test_invalidate_removes_slot_and_private_ad(pool: AdStore) -> None:
    assert pool.invalidate("machine", "SLOT1@A") == [
        ("Machine", "slot1@a"),
        ("MachinePrivate", "slot1@a"),
    ]
    assert pool.counts() == {"Machine": 2, "MachinePrivate": 1}
    assert pool.invalidate("Machine", "slot1@a") == []  # idempotent
    assert pool.invalidate("Scheduler", "nobody") == []
    # Invalidating a private ad leaves the public one.
    assert pool.invalidate("MachinePrivate", "slot2@a") == [("MachinePrivate", "slot2@a")]
    assert pool.counts() == {"Machine": 2}


def test_a_refresh_with_a_shorter_lifetime_expires_at_the_new_deadline() -> None:
    store = AdStore()
    store.update("Machine", slot("slot1@a"), 0.0)  # until 900
    store.update("Machine", slot("slot1@a", ClassAdLifetime=60), 100.0)  # until 160
    assert store.expire(160.0) == []
    assert store.expire(161.0) == [("Machine", "slot1@a")]
    # gone and back: waits for its own deadline only, once
    store.update("Machine", slot("slot1@a"), 200.0)  # until 1100
    store.invalidate("Machine", "slot1@a")
    store.update("Machine", slot("slot1@a"), 300.0)  # until 1200
    assert store.expire(1101.0) == [] and store.expire(1201.0) == [("Machine", "slot1@a")]


def _scan_expire(store: dict[str, dict[str, tuple]], now: float) -> list[str]:
    """The housekeeper by a scan of every ad: the rule the store's heap must keep."""
    removed = []
    for table in store.values():
        for key in [k for k, (_, heard, life) in table.items() if int(now) - heard > life]:
            del table[key]
            removed.append(key)
    return removed


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["update", "update", "update", "invalidate", "expire"]),
            st.sampled_from(["Machine", "Scheduler"]),
            st.integers(0, 5),  # which Name
            st.sampled_from([None, 0, 30, 60, 900]),  # ClassAdLifetime (None: the default)
            st.sampled_from(["Claimed", "Unclaimed", "Owner", "", None]),
            st.integers(0, 200),  # pool seconds on
        ),
        max_size=60,
    )
)
def test_expiry_and_slot_states_are_those_of_a_scan_of_every_ad(ops) -> None:
    """Updates (shorter and longer lifetimes), invalidations and housekeeper rounds at
    random: the ads dropped, in the order dropped, and the slot ads by State are those
    a scan of every ad gives."""
    store, mirror, now = AdStore(classad_lifetime=100), {}, 0.0
    for op, ad_type, k, lifetime, state, dt in ops:
        now += dt
        name = f"slot{k}@a"
        if op == "update":
            ad = slot(name) if state is None else slot(name, State=state)
            if lifetime is not None:
                ad["ClassAdLifetime"] = lifetime
            store.update(ad_type, ad, now)
            table = mirror.setdefault(ad_type, {})
            table[name] = (state, int(now), 100 if lifetime is None else lifetime)
        elif op == "invalidate":
            store.invalidate(ad_type, name)
            mirror.get(ad_type, {}).pop(name, None)
        else:
            gone = [n for _, n in store.expire(now)]
            assert gone == _scan_expire(mirror, now)
        states = Counter(
            None if s is None else s[:1] for s, _, _ in mirror.get("Machine", {}).values()
        )
        assert +store.slot_states() == +states
    totals = pool_totals(store)
    machines = mirror.get("Machine", {}).values()
    assert totals["HostsTotal"] == sum(s is not None for s, _, _ in machines)
    assert totals["HostsClaimed"] == sum(s == "Claimed" for s, _, _ in machines)


# ----------------------------------------------------------------------------- queries


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("", ["slot1@a", "slot2@a", "slot3@a"]),
        ("   ", ["slot1@a", "slot2@a", "slot3@a"]),
        ("true", ["slot1@a", "slot2@a", "slot3@a"]),
        ("false", []),
        ("Cpus >= 2", ["slot1@a"]),  # slot3: UNDEFINED >= 2 is UNDEFINED: not selected
        ("Cpus", ["slot1@a", "slot2@a"]),  # a non-zero integer selects (old semantics)
        ("Cpus - 1", ["slot1@a"]),  # slot2: 0 does not select
        ("Cpus * 0.5", ["slot1@a", "slot2@a"]),  # 2.0 and 0.5: non-zero reals select
        ('State == "unclaimed"', ["slot1@a"]),  # == on strings ignores case
        ('State =?= "unclaimed"', []),  # =?= does not
        ("isUndefined(Cpus)", ["slot3@a"]),
        ("Cpus =?= undefined", ["slot3@a"]),
        ("Cpus =!= undefined && Memory < 4096", ["slot2@a"]),
        ('Cpus > 2 || State == "Owner"', ["slot1@a", "slot3@a"]),  # UNDEFINED || true
        ('"yes"', []),  # a string is not a boolean
        ("1/0", []),  # ERROR
        ("undefined", []),
        ("MY.Cpus > 0", ["slot1@a", "slot2@a"]),
        # No TARGET in a query: names the slot lacks are UNDEFINED.
        ("RequestCpus <= Cpus", []),
        ("TARGET.Cpus > 0", []),
        ("time() > 0", ["slot1@a", "slot2@a", "slot3@a"]),  # evaluated at the query's now
    ],
)
def test_query_constraints(pool: AdStore, constraint: str, expected: list[str]) -> None:
    assert names(pool.query("Machine", constraint, now=150.0)) == expected


def test_query_matches_the_scalar_evaluator_with_expression_attributes() -> None:
    store = AdStore()
    start = parse_expr("TARGET.RequestCpus <= MY.Cpus")
    for i in range(6):
        store.update(
            "Machine", slot(f"slot{i}@a", Cpus=i, Start=start, Half=parse_expr("Cpus / 2")), 0.0
        )
    assert store.query("Machine", "Start") == []  # no TARGET: UNDEFINED
    assert names(store.query("Machine", "Half >= 2")) == ["slot4@a", "slot5@a"]


def test_query_of_unknown_type_is_empty(pool: AdStore) -> None:
    assert pool.query("Scheduler") == []
    assert pool.query("NoSuchType", "Cpus > 1") == []


def test_query_any_returns_every_public_ad_never_private(pool: AdStore) -> None:
    # condor_status -any: one query over every type; the claim ids stay private
    pool.update("Accounting", ClassAd(Name="alice@mockpool", Priority=500.0), 100.0)
    pool.update("Scheduler", ClassAd(Name="schedd1", TotalIdleJobs=3), 100.0)
    got = pool.query("any")
    assert names(got) == ["alice@mockpool", "schedd1", "slot1@a", "slot2@a", "slot3@a"]
    assert not any(a.lookup("Capability") for a in got)
    assert names(pool.query("Any", "Cpus > 1 || Priority > 100")) == ["alice@mockpool", "slot1@a"]


def test_any_is_not_a_type_an_ad_can_have() -> None:
    store = AdStore()
    with pytest.raises(BadUpdate, match='"Any" is a query type'):
        store.update("ANY", ClassAd(Name="x"), 0.0)
    assert store.query("Any") == []


def test_bad_constraint_names_it(pool: AdStore) -> None:
    with pytest.raises(BadConstraint, match=r"bad constraint 'Cpus >= '") as info:
        pool.query("Machine", "Cpus >= ")
    assert isinstance(info.value, ValueError)
    with pytest.raises(BadConstraint):  # even when there is nothing to filter
        pool.query("Scheduler", "((")
    with pytest.raises(BadConstraint):
        pool.snapshot("Cpus ==")


def test_projection_keeps_listed_attributes_and_mytype(pool: AdStore) -> None:
    ads = pool.query("Machine", "Cpus >= 2", ["cpus", "MEMORY", "NoSuchAttr", ""])
    assert len(ads) == 1
    ad = ads[0]
    assert sorted(ad) == ["Cpus", "Memory", "MyType"]  # the ad's own spelling; no Name
    assert ad.eval("Cpus") == 4 and ad.eval("Memory") == 8192
    # No projection: the whole ad, collector stamps included.
    whole = pool.query("Machine", "Cpus >= 2")[0]
    assert set(whole) == {"Name", "Cpus", "State", "Memory", "MyType", "LastHeardFrom"}


def test_query_returns_copies(pool: AdStore) -> None:
    pool.query("Machine", "Cpus >= 2")[0]["Cpus"] = 1000
    assert pool.get("Machine", "slot1@a").ad.eval("Cpus") == 4


def test_projection_keys() -> None:
    assert projection_keys([]) is None
    assert projection_keys(["", "  "]) is None
    assert projection_keys(["Cpus", " Memory "]) == {"cpus", "memory", "mytype"}


# ----------------------------------------------------------------------------- private ads


def test_private_ads_are_never_queried(pool: AdStore) -> None:
    with pytest.raises(PrivateAdsRefused, match="only the negotiator"):
        pool.query("MachinePrivate")
    with pytest.raises(PrivateAdsRefused):
        pool.query("machineprivate", "true")
    # Slot queries never carry claim ids.
    assert all("Capability" not in a for a in pool.query("Machine"))
    # The shell may read them for the negotiator's role.
    assert len(pool.select("MachinePrivate", "", 0.0, allow_private=True)) == 2


def test_snapshot_returns_slots_and_their_private_ads(pool: AdStore) -> None:
    snap = pool.snapshot(now=150.0)
    assert [r.name for r in snap.slots] == ["slot1@a", "slot2@a", "slot3@a"]
    assert [r.name for r in snap.private] == ["slot1@a", "slot2@a"]  # slot3 has none
    assert snap.now == 150.0 and snap.keep is None
    assert [a.eval("Capability") for a in snap.private_ads()] == ["<a:1>#1#1#s1", "<a:1>#1#2#s2"]
    # A constraint picks the slots; only their private ads come along.
    snap = pool.snapshot('State == "Claimed"', now=150.0)
    assert [r.name for r in snap.slots] == ["slot2@a"]
    assert [r.name for r in snap.private] == ["slot2@a"]


def test_a_snapshot_since_an_earlier_one_carries_only_the_ads_updated_after_it(
    pool: AdStore,
) -> None:
    """Five updates make seq 5. Then slot2 changes (6), slot3 goes, slot4 comes (7) with
    its private ad (8): since seq 5, the delta names slot1, slot2, slot4 and carries
    slot2 and slot4 (positions 1 and 2), and of the private ads slot4's (position 2)."""
    first = pool.snapshot(now=100.0)
    assert (first.delta, first.seq, first.epoch) == (False, 5, pool.epoch)
    assert first.slot_order == ["slot1@a", "slot2@a", "slot3@a"]
    assert first.private_order == ["slot1@a", "slot2@a"]
    pool.update("Machine", slot("slot2@a", Cpus=1, State="Unclaimed", Memory=2048), 110.0)
    pool.invalidate("Machine", "slot3@a")
    pool.update("Machine", slot("slot4@a", Cpus=2, State="Unclaimed"), 110.0)
    pool.update("MachinePrivate", slot("slot4@a", Capability="<a:1>#1#4#s4"), 110.0)
    snap = pool.snapshot(now=110.0, since=(pool.epoch, 5))
    assert (snap.delta, snap.seq) == (True, 8)
    assert snap.slot_order == ["slot1@a", "slot2@a", "slot4@a"]
    assert snap.slot_rows == [1, 2] and [r.name for r in snap.slots] == ["slot2@a", "slot4@a"]
    assert snap.slots[0].ad.eval("State") == "Unclaimed"
    assert snap.private_order == ["slot1@a", "slot2@a", "slot4@a"]
    assert snap.private_rows == [2] and [r.name for r in snap.private] == ["slot4@a"]
    # nothing since: a delta that carries nothing
    same = pool.snapshot(now=120.0, since=(pool.epoch, 8))
    assert same.delta and not same.slots and not same.private and same.slot_rows == []


def test_a_delta_leaves_out_the_names_while_no_ad_came_went_or_was_renamed(
    pool: AdStore,
) -> None:
    """The fixture's five updates make seq 5 (the last addition). Changes to stored ads
    (6, 7) keep the order: a delta since 5 names the ads as then. An addition (8), a
    removal (at 8), an expiry, a renamed ad or a constraint: the names go out again, and
    a delta since the seq of the change itself is not trusted to be after it."""
    since = (pool.epoch, 5)
    assert not pool.snapshot(now=100.0, since=since).same_order  # 5: slot2's private ad came
    pool.update("Machine", slot("slot2@a", Cpus=1, State="Unclaimed", Memory=2048), 110.0)
    pool.update("MachinePrivate", slot("slot1@a", Capability="<a:1>#1#1#t1"), 110.0)
    snap = pool.snapshot(now=110.0, since=(pool.epoch, 6))
    assert snap.same_order and snap.slot_rows == [] and snap.private_rows == [0]
    assert snap.slot_order == [] and snap.private_order == []  # the asker holds them
    assert pool.snapshot(now=110.0, since=(pool.epoch, 7)).same_order
    assert not pool.snapshot('State == "Claimed"', now=110.0, since=(pool.epoch, 7)).same_order
    pool.update("Machine", slot("slot4@a", State="Owner"), 120.0)  # seq 8
    assert not pool.snapshot(now=120.0, since=(pool.epoch, 7)).same_order
    assert not pool.snapshot(now=120.0, since=(pool.epoch, 8)).same_order
    pool.update("Machine", slot("slot1@a", Cpus=4, State="Unclaimed"), 120.0)  # seq 9
    assert pool.snapshot(now=120.0, since=(pool.epoch, 9)).same_order
    pool.invalidate("Machine", "slot4@a")  # at seq 9
    assert not pool.snapshot(now=120.0, since=(pool.epoch, 9)).same_order
    pool.update("Machine", slot("SLOT3@A", State="Owner"), 120.0)  # seq 10: Name respelled
    assert not pool.snapshot(now=120.0, since=(pool.epoch, 9)).same_order
    pool.update("Machine", slot("slot1@a", Cpus=4, State="Unclaimed"), 120.0)  # seq 11
    assert pool.snapshot(now=120.0, since=(pool.epoch, 11)).same_order
    # heard from at 110 or before: slot2 and the private ads go (1011 - 110 > 900)
    assert len(pool.expire(1011.0)) == 3
    assert not pool.snapshot(now=1011.0, since=(pool.epoch, 11)).same_order


def test_a_delta_after_an_ad_went_finds_the_ads_at_their_new_places() -> None:
    """Slots a, b, c (seq 1-3); c changes (4, 5), a delta since 4 carries c at row 2.
    Then a goes and c changes (6): the whole snapshot is b, c (seq 6); c changes again
    (7): the delta since 6 carries c at row 1, not where it stood before a went."""
    store = AdStore()
    store.LOG_SCAN_SHARE = math.inf  # the log, however many changed
    for name in "abc":
        store.update("Machine", slot(name, Cpus=1), 0.0)
    store.update("Machine", slot("c", Cpus=2), 0.0)
    store.update("Machine", slot("c", Cpus=3), 0.0)
    delta = store.snapshot(now=0.0, since=(store.epoch, 4))
    assert delta.same_order and delta.slot_rows == [2]
    store.invalidate("Machine", "a")
    store.update("Machine", slot("c", Cpus=4), 0.0)
    assert [r.name for r in store.snapshot(now=0.0).slots] == ["b", "c"]
    store.update("Machine", slot("c", Cpus=5), 0.0)
    delta = store.snapshot(now=0.0, since=(store.epoch, 6))
    assert delta.same_order and delta.slot_rows == [1]
    assert delta.slots[0].ad.eval("Cpus") == 5


def test_a_delta_since_updates_the_log_forgot_is_found_by_a_scan() -> None:
    """A log kept to twice the 2 ads: a and b (seq 1, 2), a changes (3), b (4), then a
    ten times (5-14); the log forgot b's change, and the delta since 3 still carries
    both."""
    store = AdStore()
    store.LOG_SLACK = 0
    store.LOG_SCAN_SHARE = math.inf
    store.update("Machine", slot("a", Cpus=1), 0.0)
    store.update("Machine", slot("b", Cpus=1), 0.0)
    store.update("Machine", slot("a", Cpus=1), 0.0)
    store.update("Machine", slot("b", Cpus=2), 0.0)
    for cpus in range(10):
        store.update("Machine", slot("a", Cpus=cpus), 0.0)
    delta = store.snapshot(now=0.0, since=(store.epoch, 3))
    assert delta.same_order and delta.slot_rows == [0, 1]
    assert [r.ad.eval("Cpus") for r in delta.slots] == [9, 2]
    assert store.snapshot(now=0.0, since=(store.epoch, 13)).slot_rows == [0]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["slot", "slot", "slot", "private", "private", "invalidate", "expire"]),
            st.integers(0, 6),  # which Name
            st.sampled_from(["slot{}@a", "SLOT{}@A"]),  # a respelled Name renames the ad
            st.integers(0, 400),  # pool seconds on
            st.integers(0, 3),  # how many earlier snapshots back the next delta is since
        ),
        max_size=80,
    )
)
@pytest.mark.parametrize("scan_share", [math.inf, 0.25, 0.0])
def test_a_delta_carries_the_ads_a_whole_snapshot_holds_past_its_seq(ops, scan_share) -> None:
    """Updates, private ads, invalidations and expiry at random, a snapshot after each
    since one taken earlier: a delta in the same order carries, at their places, the
    slot and private ads that a whole snapshot taken now holds with a later seq, and
    put in the held ads' places they give the whole snapshot. The update log is kept
    short, so it is trimmed too (a delta since a trimmed seq is found by a scan); the
    log is read however many changed, up to a quarter of the ads, or never."""
    store, now = AdStore(classad_lifetime=600), 0.0
    store.LOG_SLACK = 3
    store.LOG_SCAN_SHARE = scan_share
    taken: list[tuple[int, list, list]] = []  # (seq, slot records, private records)
    for op, k, spelling, dt, back in ops:
        now += dt
        name = spelling.format(k)
        if op == "slot":
            store.update("Machine", slot(name, State="Unclaimed", Cpus=k), now)
        elif op == "private":
            store.update("MachinePrivate", slot(name, Capability=f"c{k}"), now)
        elif op == "invalidate":
            store.invalidate("Machine", name)
        else:
            store.expire(now)
        whole = store.snapshot(now=now)
        if taken:
            seq, slots, private = taken[max(0, len(taken) - 1 - back)]
            delta = store.snapshot(now=now, since=(store.epoch, seq))
            assert delta.delta
            for part, held, rows, got, everything in (
                ("slot", slots, delta.slot_rows, delta.slots, whole.slots),
                ("private", private, delta.private_rows, delta.private, whole.private),
            ):
                assert rows == [i for i, r in enumerate(everything) if r.seq > seq], part
                assert got == [everything[i] for i in rows], part
                if delta.same_order:
                    patched = list(held)
                    for i, r in zip(rows, got, strict=True):
                        patched[i] = r
                    assert patched == everything, part
        taken.append((whole.seq, whole.slots, whole.private))


@pytest.mark.parametrize(
    "since",
    [None, ("another epoch", 5), ("<epoch>", 99)],  # a store that restarted; a seq it never had
)
def test_a_snapshot_is_whole_unless_since_one_of_this_stores(
    pool: AdStore, since: tuple[str, int] | None
) -> None:
    if since is not None and since[0] == "<epoch>":
        since = (pool.epoch, since[1])
    snap = pool.snapshot(now=100.0, since=since)
    assert not snap.delta and [r.name for r in snap.slots] == snap.slot_order
    assert len(snap.slots) == 3 and len(snap.private) == 2
    # projected: whole as well (what the asker holds are whole ads)
    projected = pool.snapshot(projection=["Cpus"], since=(pool.epoch, 5))
    assert not projected.delta and len(projected.slots) == 3
    assert AdStore().epoch != pool.epoch


def test_snapshot_projection_keeps_name(pool: AdStore) -> None:
    snap = pool.snapshot("Cpus >= 2", ["Cpus"])
    assert snap.keep == {"cpus", "mytype", "name"}
    (ad,) = snap.slot_ads()
    assert sorted(ad) == ["Cpus", "MyType", "Name"]
    # Private ads come whole: they are small and the negotiator needs all of them.
    assert set(snap.private_ads()[0]) == {"Name", "Capability", "MyType", "LastHeardFrom"}


# ----------------------------------------------------------------------------- wire form


def test_wire_form_is_kept_and_stamped() -> None:
    store = AdStore()
    ad = slot("slot1@a", Cpus=4, Start=parse_expr("TARGET.RequestCpus <= Cpus"))
    wire = ad_to_pb(ad).SerializeToString()
    rec = store.update("Machine", ad, 42.0, wire)
    assert rec.wire().startswith(wire)  # the received bytes, with MyType/LastHeardFrom appended
    assert ad_from_pb(classad_pb2.ClassAd.FromString(rec.wire())) == rec.ad


def test_wire_form_re_encoded_when_the_daemon_sent_last_heard_from() -> None:
    store = AdStore()
    ad = slot("slot1@a", LastHeardFrom=1, MyType="Machine")
    rec = store.update("Machine", ad, 42.0, ad_to_pb(ad).SerializeToString())
    decoded = ad_from_pb(classad_pb2.ClassAd.FromString(rec.wire()))
    assert decoded.eval("LastHeardFrom") == 42 and decoded == rec.ad


def test_wire_without_received_bytes_is_encoded_on_demand() -> None:
    store = AdStore()
    rec = store.update("Machine", slot("slot1@a", Cpus=2), 1.0)
    assert ad_from_pb(classad_pb2.ClassAd.FromString(rec.wire())) == rec.ad


def test_projected_wire_matches_projected_ad(pool: AdStore) -> None:
    keep = projection_keys(["Cpus", "State"])
    for rec in pool.select("Machine", "", 0.0):
        got = ad_from_pb(classad_pb2.ClassAd.FromString(rec.projected_wire(keep)))
        assert got == rec.projected(keep)
    assert pool.get("Machine", "slot3@a").projected_wire(frozenset({"cpus"})) == b""


def test_frame_field_builds_a_repeated_field() -> None:
    a = ad_to_pb(slot("a", X=1)).SerializeToString()
    b = ad_to_pb(slot("b", X=2)).SerializeToString()
    reply = collector_pb2.QueryReply.FromString(frame_field(1, a) + frame_field(1, b))
    assert [ad_from_pb(m).eval("Name") for m in reply.ads] == ["a", "b"]
    big = b"x" * 300  # a two-byte length varint
    assert frame_field(2, big)[:3] == bytes([0x12, 0xAC, 0x02])


# ----------------------------------------------------------------------------- speed


def test_snapshot_of_10000_slots_is_the_stored_bytes() -> None:
    """A negotiation cycle's snapshot (no projection) serves the stored wire bytes; its
    speed is measured by bench/queue_snapshot.py, not asserted here."""
    template = ClassAd()
    template["MyType"] = "Machine"
    for k in range(34):
        template[f"Attr{k}"] = k
    template["State"] = "Unclaimed"
    template["Start"] = parse_expr(
        "TARGET.RequestCpus <= MY.Cpus && TARGET.RequestMemory <= MY.Memory"
    )
    template["Requirements"] = parse_expr("START")
    msg = ad_to_pb(template)
    name_attr = msg.attributes.add(name="Name")
    store = AdStore()
    for i in range(10_000):
        name = f"slot{i % 16 + 1}@exec{i // 16:04d}"
        name_attr.literal.str = name
        ad = template.copy()
        ad["Name"] = name
        store.update("Machine", ad, 0.0, msg.SerializeToString(), owned=True)
    snap = store.snapshot(now=1.0)
    blob = b"".join(frame_field(1, r.wire()) for r in snap.slots)
    reply = collector_pb2.SnapshotReply.FromString(blob)
    assert len(reply.slots) == 10_000 and len(reply.slots[0].attributes) == 40
    assert reply.slots[123].SerializeToString() == snap.slots[123].wire()


def test_attribute_split_agrees_with_protobuf() -> None:
    from mockpool.collector.store import _scan_entries, _split_attributes

    ad = slot("slot1@a", Cpus=4, Start=parse_expr("TARGET.RequestCpus <= Cpus"), Empty="")
    ad["L" * 200] = 1  # a name too long for the fast path's one-byte length
    wire = ad_to_pb(ad).SerializeToString()
    msg = classad_pb2.ClassAd.FromString(wire)
    expected = {a.name.lower(): frame_field(1, a.SerializeToString()) for a in msg.attributes}
    assert _split_attributes(wire) == expected
    with pytest.raises(ValueError):
        _scan_entries(wire)  # the long name sends it to the protobuf parser
    short = ad_to_pb(slot("slot1@a", Cpus=4)).SerializeToString()
    assert _scan_entries(short) == _split_attributes(short)
    assert set(_scan_entries(short)) == {"name", "cpus"}


def test_submitter_ads_are_kept_per_schedd() -> None:
    """alice submits through two schedds: both ads stay (HTCondor keys them by Name and
    ScheddName); invalidating one leaves the other."""
    store = AdStore()
    for schedd, idle in (("schedd1", 3), ("schedd2", 5)):
        ad = ClassAd(Name="alice@mockpool", ScheddName=schedd, IdleJobs=idle)
        store.update("Submitter", ad, 10.0)
    ads = store.query("Submitter", 'Name == "alice@mockpool"')
    assert sorted(int(a.get_value("IdleJobs")) for a in ads) == [3, 5]
    gone = ClassAd(Name="alice@mockpool", ScheddName="schedd1")
    store.invalidate("Submitter", store.ad_name("Submitter", gone))
    assert [a.get_value("ScheddName") for a in store.query("Submitter")] == ["schedd2"]


def test_costly_constraint_is_refused_by_name(pool: AdStore) -> None:
    poison = 'regexp("(a+)+$", strcat("' + "a" * 30 + '", Name, "!"))'
    with pytest.raises(CostlyConstraint, match=r"constraint .*regexp.* is too costly"):
        pool.query("Machine", poison, now=100.0)
    assert names(pool.query("Machine", 'regexp("^slot[12]@", Name)', now=100.0)) == [
        "slot1@a",
        "slot2@a",
    ]
