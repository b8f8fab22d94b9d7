"""NegotiatorLog lines: HTCondor's wording and timestamps, the line cap, parse round trip."""

from __future__ import annotations

import itertools

from builders.cycle import SCHEDD, STARTD, pool, pslot, request, slot

from mockpool.config import parse_config
from mockpool.negotiator import (
    Accountant,
    LogLine,
    NegotiatorLog,
    format_line,
    format_lines,
    negotiate,
    parse_negotiator_log,
)
from mockpool.negotiator.cycleinput import CycleConfig

BASE = 1_700_000_000.0  # 11/14/23 22:13:20 UTC


def test_timestamp_is_base_wall_plus_pool_seconds_utc():
    assert format_line(LogLine(0.0, "x"), BASE) == "11/14/23 22:13:20 x"
    assert format_line(LogLine(100.0, "y"), BASE) == "11/14/23 22:15:00 y"
    assert format_line(LogLine(86400.0 + 59.9, "z"), BASE) == "11/15/23 22:14:19 z"


def test_golden_cycle():
    snap = pool(slot("slot1@exec0001"), slot("slot2@exec0001"))
    reqs = [request(1, 3), request(2, 1, submitter="bob@mockpool", memory=99999)]
    res = negotiate(snap, reqs, Accountant(), parse_config(""), 100.0)
    lines = format_lines(res.log, BASE)
    s, t = f"<{SCHEDD}>", f"<{STARTD}>"
    expected = [
        "---------- Started Negotiation Cycle ----------",
        "Phase 1:  Obtaining ads from collector ...",
        "Got ads: 2 public and 2 private",
        "Public ads include 0 submitter, 2 startd",
        "Phase 2:  Performing accounting ...",
        "Phase 3:  Sorting submitter ads by priority ...",
        "Phase 4.1:  Negotiating with schedds ...",
        f"  Negotiating with alice@mockpool at {s}",
        "0 seconds so far for this submitter",
        "0 seconds so far for this schedd",
        "    Request 00001.00000: autocluster 1 (request count 1 of 3)",
        f"      Matched 1.0 alice@mockpool {s} preempting none {t} slot1@exec0001",
        "      Successfully matched with slot1@exec0001",
        # Equal priorities: a limit of 1 slot each. Past it on the first spin only a
        # startd-rank preemption could match, so the next job finds nothing.
        "    Request 00001.00000: autocluster 1 (request count 2 of 3)",
        f"      Rejected 1.0 alice@mockpool {s}: no match found",
        "    Got NO_MORE_JOBS;  schedd has no more requests",
        f"  Negotiating with bob@mockpool at {s}",
        "0 seconds so far for this submitter",
        "0 seconds so far for this schedd",
        "    Request 00002.00000: autocluster 2 (request count 1 of 1)",
        f"      Rejected 2.0 bob@mockpool {s}: no match found",
        "    Got NO_MORE_JOBS;  schedd has no more requests",
        # bob is done; the second spin gives alice the whole pie: limit 2 - 1 used.
        "Phase 4.2:  Negotiating with schedds ...",
        f"  Negotiating with alice@mockpool at {s}",
        "0 seconds so far for this submitter",
        "0 seconds so far for this schedd",
        "    Request 00001.00000: autocluster 1 (request count 2 of 3)",
        f"      Matched 1.0 alice@mockpool {s} preempting none {t} slot2@exec0001",
        "      Successfully matched with slot2@exec0001",
        "    Reached submitter resource limit: 1.000000 ... stopping",
        " negotiateWithGroup resources used submitterAds length 1 ",
        "---------- Finished Negotiation Cycle ----------",
    ]
    assert lines == ["11/14/23 22:15:00 " + x for x in expected]


def test_timer_stamps_lines_and_phases():
    ticks = itertools.count(10.0, 0.5)
    snap = pool(slot("slot1@exec0001"))
    res = negotiate(
        snap, [request(1, 1)], Accountant(), parse_config(""), 8.0, timer=lambda: next(ticks)
    )
    assert res.log[0].t == 8.0 and res.log[0].text.startswith("----------")
    times = [ln.t for ln in res.log]
    assert times == sorted(times)
    s = res.stats
    assert s.duration_phase1 == 2.0  # fetch took 8 -> 10
    assert s.duration == s.end_time - s.start_time
    total = s.duration_phase1 + s.duration_phase2 + s.duration_phase3 + s.duration_phase4
    assert abs(total - s.duration) < 1e-9


def test_finish_later_counts_sending_in_phase4():
    snap = pool(slot("slot1@exec0001"))
    res = negotiate(snap, [request(1, 1)], Accountant(), parse_config(""), 50.0, finish=False)
    assert (
        not res.finished and res.log[-1].text != "---------- Finished Negotiation Cycle ----------"
    )
    res.finish(53.0)
    assert (
        res.stats.end_time == 53.0
        and res.stats.duration == 3.0
        and res.stats.duration_phase4 == 3.0
    )
    assert res.log[-1] == LogLine(53.0, "---------- Finished Negotiation Cycle ----------")
    res.finish(60.0)  # only once
    assert res.stats.end_time == 53.0


def test_parse_round_trip_with_several_cycles():
    acct = Accountant()
    text_lines = []
    snap = pool(slot("slot1@exec0001"), slot("slot2@exec0001"))
    for now in (0.0, 60.0):
        res = negotiate(
            snap,
            [request(1, 1), request(5, 1, memory=10**6, cluster=9)],
            acct,
            parse_config(""),
            now,
        )
        acct = res.accountant
        text_lines += format_lines(res.log, BASE)
    text_lines.insert(3, "11/14/23 22:13:20 some other daemon chatter")
    text_lines.append("garbage without a timestamp")
    cycles = parse_negotiator_log("\n".join(text_lines))
    assert len(cycles) == 2
    c0, c1 = cycles
    assert (c0.start, c0.end, c1.start, c1.end) == (BASE, BASE, BASE + 60, BASE + 60)
    assert [(m.job, m.autocluster, m.submitter, m.slot) for m in c0.matches] == [
        ("1.0", 1, "alice@mockpool", "slot1@exec0001")
    ]
    assert [(r.job, r.autocluster, r.reason) for r in c0.rejections] == [
        ("9.0", 5, "no match found")
    ]
    assert c0.submitters == ["alice@mockpool"]
    assert (c0.public_ads, c0.private_ads) == (2, 2)


def test_idle_pool_cycle_still_logs_every_phase():
    res = negotiate(pool(slot("slot1@exec0001")), [], Accountant(), parse_config(""), 0.0)
    assert [ln.text for ln in res.log][4:] == [
        "Phase 2:  Performing accounting ...",
        "Phase 3:  Sorting submitter ads by priority ...",
        "Phase 4.1:  Negotiating with schedds ...",
        " negotiateWithGroup resources used submitterAds length 0 ",
        "---------- Finished Negotiation Cycle ----------",
    ]
    assert res.stats.pie_spins == 1 and res.matches == []


def test_parse_unfinished_cycle():
    lines = [
        "11/14/23 22:13:20 ---------- Started Negotiation Cycle ----------",
        "11/14/23 22:13:20 Phase 1:  Obtaining ads from collector ...",
    ]
    (c,) = parse_negotiator_log("\n".join(lines))
    assert c.end is None and c.matches == []


def test_match_lines_are_capped_and_summarised():
    ad, ids = pslot(cpus=10, memory=20480, claims=20)
    snap = pool(ad, claims={"slot1@exec0001": ids})
    cfg = CycleConfig.from_config(parse_config(""), log_match_limit=3)
    res = negotiate(snap, [request(1, 8)], Accountant(), cfg, 0.0)
    assert len(res.matches) == 8
    text = "\n".join(format_lines(res.log, BASE))
    assert text.count("Successfully matched") == 3
    assert (
        "    ... 5 more matches not logged (NegotiatorLog shows at most 3 matches a cycle)" in text
    )
    (c,) = parse_negotiator_log(text)
    assert len(c.matches) == 3 and c.unlogged_matches == 5


def test_negotiator_log_view_and_match_pairs(tmp_path):
    snap = pool(slot("slot1@exec0001"))
    res = negotiate(snap, [request(4, 1)], Accountant(), parse_config(""), 0.0)
    path = tmp_path / "NegotiatorLog"
    path.write_text("".join(x + "\n" for x in format_lines(res.log, BASE)))
    nlog = NegotiatorLog.read(path)
    assert len(nlog) == len(res.log)
    (m,) = nlog.cycles[0].matches
    job, slot_name = m  # a match unpacks as (job, slot)
    assert (job, slot_name) == ("4.0", "slot1@exec0001")
    assert (m.autocluster, m.submitter, m.schedd) == (4, "alice@mockpool", f"<{SCHEDD}>")
    assert "slot1@exec0001" in repr(m)
