"""The shipped trace against HTCondor's own ClassAd library: classad2 reads history.long
(old syntax) and each ad of history.json (its JSON parser) to the values our trace reader
replays, expressions such as ``RequestDisk = DiskUsage`` included."""

from __future__ import annotations

import math
from pathlib import Path

from builders.oracle import require_oracle

from mockpool.pool.trace import read_trace

require_oracle()

import classad2  # noqa: E402  (after require_oracle: htcondor2 is imported first there)

DATA = Path(__file__).resolve().parents[1] / "data" / "trace"


def _oracle_ads() -> tuple[list[classad2.ClassAd], list[classad2.ClassAd]]:
    long_ads = list(classad2.parseAds((DATA / "history.long").read_text(), classad2.ParserType.Old))
    text = (DATA / "history.json").read_text().strip()
    assert text.startswith("[\n") and text.endswith("\n]")
    # classad2's JSON parser reads one ad at a time; condor_history -json puts them in a list
    chunks = text[2:-2].split("\n,\n")
    json_ads = [next(classad2.parseAds(c, classad2.ParserType.JSON)) for c in chunks]
    return long_ads, json_ads


def _value(ad: classad2.ClassAd, name: str) -> object:
    return ad.eval(name) if name in ad else None


def test_oracle_reads_both_twins_to_the_values_we_replay() -> None:
    long_ads, json_ads = _oracle_ads()
    ours = read_trace(DATA / "history.json").records
    assert len(long_ads) == len(json_ads) == len(ours) == 20
    names = ("QDate", "JobStatus", "RequestCpus", "RequestMemory", "RequestDisk", "Owner")
    names += ("AcctGroup", "AccountingGroup", "RemoteWallClockTime", "EnteredCurrentStatus")
    for lad, jad, rec in zip(long_ads, json_ads, ours, strict=True):
        assert {n: _value(lad, n) for n in names} == {n: _value(jad, n) for n in names}
        assert f"{lad.eval('ClusterId')}.{lad.eval('ProcId')}" == rec.job_id
        assert (lad.eval("QDate"), lad.eval("Owner")) == (rec.submit, rec.owner)
        assert lad.eval("RequestDisk") == rec.disk  # an expression in some ads
        assert (lad.eval("RequestCpus"), lad.eval("RequestMemory")) == (rec.cpus, rec.memory)
        wall = _value(lad, "RemoteWallClockTime")
        if lad.eval("JobStatus") == 3:
            assert lad.eval("EnteredCurrentStatus") == rec.removed
        elif wall is None:  # read from the dates as the module says
            assert lad.eval("CompletionDate") - lad.eval("JobCurrentStartDate") == rec.duration
        else:
            assert math.isclose(wall, rec.duration)
        group = _value(lad, "AcctGroup") or (
            str(_value(lad, "AccountingGroup") or "").removesuffix("." + rec.owner)
        )
        assert group == rec.accounting_group
