"""The negotiator's CEDAR replies as HTCondor's Accountant::ReportState writes them:
GET_PRIORITY's numbered entries (groups breadth first, then submitters) and GET_RESLIST's
slots, checked by hand and through htcondor2's own reading of them."""

from __future__ import annotations

import classad2
from htcondor2._negotiator import _convert_numbered_attributes_to_list_of_ads

from mockpool.cedar.negotiator_cmds import priority_report, resource_report
from mockpool.classad import ClassAd, format_ad


def _entry(name: str, group: bool, parent: str, prio: float, last: int, **more: object) -> ClassAd:
    ad = ClassAd(MyType="Accounting", Name=name, NegotiatorName="negotiator")
    ad["IsAccountingGroup"], ad["AccountingGroup"] = group, parent
    ad["Priority"], ad["LastUpdate"], ad["ResourcesUsed"] = prio, last, 0
    for k, v in more.items():
        ad[k] = v
    return ad


def _accounting() -> list[ClassAd]:
    # as the negotiator's accounting_ads() lists them: submitters by name, then groups
    return [
        _entry("alice@pool", False, "group_a", 500.0, 1000, ResourcesUsed=2),
        _entry("bob@pool", False, "<none>", 1000.0, 1000),
        _entry("<none>", True, "<none>", 0.5, 1000, EffectiveQuota=8.0),
        _entry("group_a", True, "<none>", 0.5, 1000, EffectiveQuota=4.0),
    ]


def test_priorities_are_numbered_groups_first() -> None:
    report = priority_report(_accounting())
    assert report.eval("NumSubmittors") == 4
    assert report.eval("LastUpdate") == 1000
    names = [report.eval(f"Name{k}") for k in range(1, 5)]
    assert names == ["<none>", "group_a", "alice@pool", "bob@pool"]
    assert report.eval("Priority3") == 500.0 and report.eval("ResourcesUsed3") == 2
    assert report.eval("EffectiveQuota2") == 4.0
    assert report.eval("AccountingGroup3") == "group_a"
    # an entry's type, negotiator and date are not repeated per entry
    assert report.lookup("MyType1") is None and report.lookup("NegotiatorName1") is None
    assert report.lookup("LastUpdate1") is None


def test_rollup_sums_users_into_their_groups() -> None:
    report = priority_report(_accounting(), rollup=True)
    # group_a holds alice's two slots; <none> holds group_a's and bob's
    assert report.eval("Name2") == "group_a" and report.eval("ResourcesUsed2") == 2
    assert report.eval("Name1") == "<none>" and report.eval("ResourcesUsed1") == 2
    assert report.eval("Priority2") == 0.0  # a group's priority means nothing rolled up


def test_htcondor2_reads_the_report_back_into_entries() -> None:
    report = priority_report(_accounting())
    legacy = classad2.parseOne(format_ad(report))
    entries = {e["Name"]: e for e in _convert_numbered_attributes_to_list_of_ads(legacy)}
    assert set(entries) == {"<none>", "group_a", "alice@pool", "bob@pool"}
    assert entries["bob@pool"]["Priority"] == 1000.0


def _slot(name: str, state: str, entered: int, **more: object) -> ClassAd:
    ad = ClassAd(Name=name, State=state, EnteredCurrentState=entered)
    ad["StartdIpAddr"] = "<10.0.0.1:9618>"
    for k, v in more.items():
        ad[k] = v
    return ad


def test_reslist_names_the_claimed_slots_charged_to_the_submitter() -> None:
    slots = [
        _slot("slot1@m1", "Claimed", 1000, RemoteUser="alice@pool"),
        _slot("slot2@m1", "Claimed", 1100, RemoteUser="bob@pool", AccountingGroup="g.bob@pool"),
        _slot("slot3@m1", "Unclaimed", 900),
        _slot("slot4@m1", "Claimed", 1200, RemoteUser="alice@pool"),
    ]
    alice = resource_report(slots, "alice@pool")
    assert alice.eval("Name1") == "slot1@m1@<10.0.0.1:9618>" and alice.eval("StartTime1") == 1000
    assert alice.eval("Name2") == "slot4@m1@<10.0.0.1:9618>" and alice.eval("StartTime2") == 1200
    assert len(alice) == 4
    # bob's slot is charged to his accounting group name, not to bob@pool
    assert len(resource_report(slots, "bob@pool")) == 0
    assert resource_report(slots, "g.bob@pool").eval("StartTime1") == 1100
    assert len(resource_report(slots, "g")) == 0  # a group: nothing, as HTCondor's
