"""Trace replay: reading condor_history -json/-long and SWF, replay items, bad input.

The expected numbers come from the shipped trace (tests/data/trace, made by
scripts/make_trace.py --seed 11) read by eye: its first QDate is 1700000007.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mockpool.classad import parse_expr
from mockpool.pool.spec import load_spec, parse_spec
from mockpool.pool.specmodel import SpecError
from mockpool.pool.trace import (
    TraceError,
    TraceJob,
    TraceRecord,
    parse_history_json,
    parse_history_long,
    parse_swf,
    read_trace,
    remove_constraint,
    replay,
    submit_clusters,
)
from mockpool.schedd.submit import parse_submit

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "trace"
T0 = 1700000007


def _by_id(records: list[TraceRecord]) -> dict[str, TraceRecord]:
    return {r.job_id: r for r in records}


# ------------------------------------------------------------------ the shipped trace


@pytest.mark.parametrize("name", ["history.json", "history.long"])
def test_shipped_history_reads_job_by_job(name: str) -> None:
    read = read_trace(DATA / name)
    assert read.skipped == [] and len(read.records) == 20
    jobs = _by_id(read.records)
    # 101.0: a plain completed job, RequestDisk a number
    j = jobs["101.0"]
    assert (j.submit, j.duration, j.cpus, j.memory, j.disk) == (T0, 60.0, 1, 512, 2478)
    assert (j.owner, j.accounting_group, j.removed) == ("alice", "", None)
    # 102.0: RequestDisk = DiskUsage (an expression, evaluated in the job's ad: 4354)
    j = jobs["102.0"]
    assert (j.submit - T0, j.duration, j.cpus, j.memory, j.disk) == (16, 30.0, 2, 1024, 4354)
    # 104.0: carol, group from AccountingGroup "group_b.carol" less ".carol"
    assert (jobs["104.0"].owner, jobs["104.0"].accounting_group) == ("carol", "group_b")
    # 107.0: bob in AcctGroup group_a; no RemoteWallClockTime: 1700000175 - 1700000130
    j = jobs["107.0"]
    assert (j.owner, j.accounting_group, j.duration) == ("bob", "group_a", 45.0)
    # 105.0: removed before it ran (EnteredCurrentStatus QDate + 20)
    j = jobs["105.0"]
    assert (j.submit - T0, j.duration, j.removed - T0) == (56, 0.0, 76)
    # 110.0: removed while running, after 22 s of its 45 (it started 9 s after its QDate)
    j = jobs["110.0"]
    assert (j.submit - T0, j.duration, j.removed - T0) == (140, 22.0, 171)


def test_json_and_long_twins_hold_the_same_jobs() -> None:
    a = read_trace(DATA / "history.json").records
    b = read_trace(DATA / "history.long").records
    strip = [(r.job_id, r.submit, r.duration, r.cpus, r.memory, r.disk, r.owner) for r in a]
    assert strip == [(r.job_id, r.submit, r.duration, r.cpus, r.memory, r.disk, r.owner) for r in b]
    assert [r.removed for r in a] == [r.removed for r in b]
    # each job's line is where its ad opens: the JSON's "{", the -long ad's first line
    text = (DATA / "history.json").read_text().split("\n")
    assert all(text[r.line - 1] == "{" for r in a)
    long_lines = (DATA / "history.long").read_text().split("\n")
    assert all(
        long_lines[r.line - 1].startswith("AccountingGroup")
        or long_lines[r.line - 1].startswith("Args")
        for r in b
    )


def test_shipped_swf_reads_the_same_schedule() -> None:
    swf = read_trace(DATA / "history.swf")
    hist = read_trace(DATA / "history.json").records
    assert swf.skipped == [] and len(swf.records) == 20
    assert [r.submit for r in swf.records] == [r.submit - T0 for r in hist]
    assert [r.duration for r in swf.records] == [r.duration for r in hist]
    assert [r.cpus for r in swf.records] == [r.cpus for r in hist]
    assert [r.memory for r in swf.records] == [r.memory for r in hist]
    assert [r.removed for r in swf.records] == [
        None if r.removed is None else r.removed - T0 for r in hist
    ]
    first, cancelled = swf.records[0], swf.records[5]
    assert (first.job_id, first.owner, first.accounting_group, first.line) == ("1", "user1", "", 8)
    # job 6: status 5, wait 20, run -1: cancelled 20 s after its submit at 56
    assert (cancelled.owner, cancelled.accounting_group) == ("user3", "group_2")
    assert (cancelled.submit, cancelled.duration, cancelled.removed) == (56, 0.0, 76)


def test_the_generator_script_reproduces_the_shipped_files(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_trace.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for name in ("history.json", "history.long", "history.swf"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


# ------------------------------------------------------------------ replay


def _rec(job_id: str, submit: float, duration: float, removed: float | None = None) -> TraceRecord:
    return TraceRecord(job_id, 1, submit, duration, 1, 128, 1024, "alice", "", removed)


def test_replay_takes_submit_times_from_the_first_and_compresses_and_shifts() -> None:
    recs = [_rec("2.0", 1000, 30), _rec("1.0", 900, 60), _rec("3.0", 1100, 10, removed=1150)]
    jobs = replay(recs, compress=2.0, shift=10.0)
    # sorted by submit; at = 10 + (submit - 900) / 2; durations as recorded
    assert [(j.job_id, j.at, j.duration) for j in jobs] == [
        ("1.0", 10.0, 60.0),
        ("2.0", 60.0, 30.0),
        ("3.0", 110.0, 51.0),  # removed: 50 s after its submit, asks for 50 + 1
    ]
    assert [j.remove_at for j in jobs] == [None, None, 160.0]  # 110 + 50, not compressed


def test_replay_limit_and_removals_off() -> None:
    recs = [_rec("1.0", 0, 5), _rec("2.0", 10, 5, removed=12), _rec("3.0", 20, 5)]
    assert [j.job_id for j in replay(recs, limit=2)] == ["1.0", "2.0"]
    assert [j.job_id for j in replay(recs, removals=False)] == ["1.0", "3.0"]
    assert replay([], compress=3) == []


def test_replay_shipped_trace_compressed() -> None:
    jobs = {j.job_id: j for j in replay(read_trace(DATA / "history.json").records, compress=2)}
    assert (jobs["102.0"].at, jobs["102.0"].duration) == (8.0, 30.0)
    assert (jobs["105.0"].at, jobs["105.0"].remove_at, jobs["105.0"].duration) == (28.0, 48.0, 21.0)
    assert (jobs["110.0"].at, jobs["110.0"].remove_at, jobs["110.0"].duration) == (
        70.0,
        101.0,
        32.0,
    )
    assert jobs["115.0"].at == 126.5  # 253 / 2


def test_replay_renames_a_repeated_job_id() -> None:
    jobs = replay([_rec("1.0", 0, 5), _rec("1.0", 3, 5)])
    assert [j.job_id for j in jobs] == ["1.0", "1.0~2"]


def test_replay_refuses_impossible_options() -> None:
    with pytest.raises(ValueError, match="compress"):
        replay([_rec("1.0", 0, 5)], compress=0)
    with pytest.raises(ValueError, match="shift"):
        replay([_rec("1.0", 0, 5)], shift=-1)


def test_submit_clusters_group_equal_jobs_and_tag_each_one() -> None:
    same = dict(duration=60.0, cpus=2, memory=512, disk=100, owner="bob", accounting_group="g")
    jobs = [
        TraceJob("7.0", 5.0, remove_at=None, **same),  # type: ignore[arg-type]
        TraceJob("7.1", 5.0, remove_at=None, **same),  # type: ignore[arg-type]
        TraceJob("8.0", 5.0, remove_at=None, **{**same, "cpus": 1}),  # type: ignore[arg-type]
        TraceJob("9.0", 1.5, remove_at=None, **same),  # type: ignore[arg-type]
    ]
    clusters = submit_clusters(jobs, "t", max_per_cluster=100)
    assert [(c.at, c.job_ids) for c in clusters] == [
        (1.5, ("9.0",)),
        (5.0, ("7.0", "7.1")),
        (5.0, ("8.0",)),
    ]
    result = parse_submit(clusters[1].description, "x", owner="bob", validate=parse_expr)
    procs = result.procs
    assert [p["MockTraceJob"] for p in procs] == ['"7.0"', '"7.1"']
    assert all(p["MockTrace"] == '"t"' and p["MockDuration"] == "60" for p in procs)
    assert (procs[0]["RequestCpus"], procs[0]["AcctGroup"]) == ("2", '"g"')
    # a cluster larger than MAX_JOBS_PER_SUBMISSION is split
    assert [c.job_ids for c in submit_clusters(jobs[:2], "t", max_per_cluster=1)] == [
        ("7.0",),
        ("7.1",),
    ]
    assert remove_constraint("t", "7.1") == 'MockTrace == "t" && MockTraceJob == "7.1"'


# ------------------------------------------------------------------ bad input

GOOD_AD = '{ "ClusterId": %d, "ProcId": 0, "Owner": "a", "QDate": 100, "JobStatus": 4,\n  "RemoteWallClockTime": %s }'


def _json(*ads: str) -> str:
    return "[\n" + "\n,\n".join(ads) + "\n]\n"


def test_malformed_json_line_is_refused_with_its_line() -> None:
    text = _json(GOOD_AD % (1, "5.0"), '{ "ClusterId": 2, "Owner" "a" }', GOOD_AD % (3, "7.0"))
    with pytest.raises(TraceError, match=r"^h\.json:5: malformed JSON: Expecting ':'"):
        parse_history_json(text, "h.json")


def test_malformed_json_ad_is_skipped_and_counted() -> None:
    text = _json(GOOD_AD % (1, "5.0"), '{ "ClusterId": 2, "Owner" "a" }', GOOD_AD % (3, "7.0"))
    read = parse_history_json(text, "h.json", on_error="skip")
    assert [r.job_id for r in read.records] == ["1.0", "3.0"]
    assert len(read.skipped) == 1 and read.skipped[0].startswith("h.json:5: malformed JSON")
    assert read.skipped[0].endswith("(skipped)")


def test_bad_expression_in_json_ad_names_its_line() -> None:
    bad = '{ "ClusterId": 2, "RequestDisk": "\\/Expr(1 +)\\/" }'
    with pytest.raises(TraceError, match=r"^h\.json:5: bad job ad"):
        parse_history_json(_json(GOOD_AD % (1, "5.0"), bad), "h.json")


def test_negative_duration_is_refused_or_skipped() -> None:
    text = _json(GOOD_AD % (1, "-5.0"), GOOD_AD % (2, "7.0"))
    with pytest.raises(TraceError, match=r"^h\.json:2: job 1\.0: negative duration \(-5 s\)"):
        parse_history_json(text, "h.json")
    read = parse_history_json(text, "h.json", on_error="skip")
    assert [r.job_id for r in read.records] == ["2.0"] and len(read.skipped) == 1


@pytest.mark.parametrize(
    ("attrs", "problem"),
    [
        ("JobStatus = 2", "JobStatus is 2"),
        ("JobStatus = 4", "no run time"),
        ("JobStatus = 4\nRemoteWallClockTime = 5\nRequestMemory = -1", "RequestMemory is negative"),
        ('JobStatus = 4\nRemoteWallClockTime = "x"', "RemoteWallClockTime is not a number"),
        ("JobStatus = 3", "needs EnteredCurrentStatus"),
        ("JobStatus = 3\nEnteredCurrentStatus = 50", "removed (EnteredCurrentStatus 50) before"),
        (
            "JobStatus = 4\nRemoteWallClockTime = 1\nCompletionDate = 0\nOwner = 7",
            "Owner is not a string (got 7)",
        ),
        ('JobStatus = 4\nRemoteWallClockTime = 1\nAcctGroup = "a b"', "accounting group must"),
        (
            "JobStatus = 4\nJobStartDate = 200\nCompletionDate = 150",
            "negative duration (-50 s)",
        ),
    ],
)
def test_impossible_job_ads(attrs: str, problem: str) -> None:
    text = f'\nClusterId = 4\nProcId = 1\nQDate = 100\nOwner = "a"\n{attrs}\n'
    with pytest.raises(TraceError) as e:
        parse_history_long(text, "h.long")
    assert str(e.value).startswith("h.long:2: job 4.1: ") and problem in str(e.value)


def test_bad_long_line_is_refused_or_skipped_with_its_line() -> None:
    text = 'ClusterId = 1\nProcId = 0\nQDate = 1\nOwner = "a"\nJobStatus = 4\nRemoteWallClockTime = 2\n\n'
    text += "ClusterId = 2\nthis is not an attribute\n\n" + text
    with pytest.raises(TraceError, match=r"^h\.long:9: bad -long line: expected Name = expression"):
        parse_history_long(text, "h.long")
    read = parse_history_long(text, "h.long", on_error="skip")
    assert [r.line for r in read.records] == [1, 11] and len(read.skipped) == 1


SWF_LINE = "1 0 5 60 2 -1 -1 2 -1 1024 1 7 -1 1 1 -1 -1 -1"


def test_swf_line_with_the_wrong_field_count() -> None:
    text = f"; header\n{SWF_LINE}\n2 10 5 60 2 -1 -1 2 -1 1024 1 7 -1 1 1 -1 -1\n"
    with pytest.raises(TraceError, match=r"^w\.swf:3: an SWF line has 18 fields, this one has 17"):
        parse_swf(text, "w.swf")
    read = parse_swf(text, "w.swf", on_error="skip")
    assert [r.job_id for r in read.records] == ["1"] and read.skipped[0].startswith("w.swf:3:")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("1 0 5 x 2 -1 -1 2 -1 1024 1 7 -1 1 1 -1 -1 -1", "field 4 is not a number: 'x'"),
        ("1 0 5 -7 2 -1 -1 2 -1 1024 1 7 -1 1 1 -1 -1 -1", "negative run time (-7 s)"),
        ("1 0 5 -1 2 -1 -1 2 -1 1024 1 7 -1 1 1 -1 -1 -1", "no run time"),
        ("1 -1 5 6 2 -1 -1 2 -1 1024 1 7 -1 1 1 -1 -1 -1", "submit time is -1"),
    ],
)
def test_impossible_swf_lines(line: str, problem: str) -> None:
    with pytest.raises(TraceError) as e:
        parse_swf(f";\n;\n{line}\n", "w.swf")
    assert str(e.value).startswith("w.swf:3: ") and problem in str(e.value)


def test_swf_fields_by_hand() -> None:
    # allocated 2 processors, 1024 KB requested per processor: 2 MB; user 7, no group
    (r,) = parse_swf(SWF_LINE + "\n", "w.swf").records
    assert (r.submit, r.duration, r.cpus, r.memory, r.owner, r.accounting_group) == (
        0.0,
        60.0,
        2,
        2,
        "user7",
        "",
    )
    # allocated unknown: the requested 4; memory unknown: used 2048 KB x 4 = 8 MB; group 3
    (r,) = parse_swf("5 9 -1 30 -1 -1 2048 4 -1 -1 0 2 3 -1 -1 -1 -1 -1\n", "w.swf").records
    assert (r.job_id, r.submit, r.cpus, r.memory, r.accounting_group, r.removed) == (
        "5",
        9.0,
        4,
        8,
        "group_3",
        None,  # failed (0) jobs ran: replayed for their run time
    )


def test_read_trace_names_unreadable_files_and_unknown_formats(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nope\.json:1: cannot read"):
        read_trace(tmp_path / "nope.json", source="nope.json")
    with pytest.raises(ValueError, match="unknown trace format 'csv'"):
        read_trace(DATA / "history.json", "csv")


# ------------------------------------------------------------------ the spec's [[trace]]

SPEC = """\
[pool]
time_scale = 10

[[startds]]
count = 1
config = "NUM_CPUS = 4"

[[schedds]]
count = 2

[[trace]]
file = "{file}"
schedd = 1
compress = 2
shift = 5
{extra}
"""


def _spec(file: str, extra: str = "", base: Path = DATA) -> object:
    return parse_spec(SPEC.format(file=file, extra=extra), "pool.toml", base_dir=base)


def test_spec_trace_becomes_submit_items_and_removals() -> None:
    spec = _spec("history.json")
    assert len(spec.submits) == 20  # every job differs from the others in disk or time
    first = spec.submits[0]
    assert (first.at, first.schedd, first.owner, first.source) == (
        5.0,
        "schedd2",
        "alice",
        "history.json:2",
    )
    assert '+MockTrace = "trace1"' in first.description and "\n101.0\n" in first.description
    assert [(r.at, r.constraint) for r in spec.removals] == [
        (5 + 28 + 20, 'MockTrace == "trace1" && MockTraceJob == "105.0"'),
        (5 + 70 + 31, 'MockTrace == "trace1" && MockTraceJob == "110.0"'),
    ]
    assert spec.removals[0].source == "history.json:123" and spec.removals[0].schedd == "schedd2"
    (t,) = spec.traces
    assert (t.name, t.file, t.jobs, t.removals, t.skipped) == ("trace1", "history.json", 20, 2, ())


def test_spec_timeline_puts_removals_after_submits_of_the_same_instant(tmp_path: Path) -> None:
    # job 1 submitted at 0 and cancelled at once (wait 0, run -1); job 2 submitted at 0
    (tmp_path / "w.swf").write_text(
        "1 0 0 -1 1 -1 -1 1 -1 -1 5 1 -1 -1 -1 -1 -1 -1\n2 0 0 9 1 -1 -1 1 -1 -1 1 1 -1 -1 -1 -1 -1 -1\n"
    )
    spec = _spec("w.swf", base=tmp_path)  # shift 5
    kinds = [(type(x).__name__, x.at) for x in spec.timeline()]
    assert kinds == [("SubmitItem", 5.0), ("SubmitItem", 5.0), ("RemoveItem", 5.0)]
    # job 1 asks to run 0 + 1 s, so its removal (at its submit) comes before its end
    assert ["arguments = 1\n" in x.description for x in spec.submits] == [True, False]
    assert spec.removals[0].constraint == 'MockTrace == "trace1" && MockTraceJob == "1"'


def test_spec_trace_format_by_extension_and_by_key(tmp_path: Path) -> None:
    (tmp_path / "jobs.txt").write_text((DATA / "history.swf").read_text())
    spec = _spec("jobs.txt", 'format = "swf"\nremovals = false\nlimit = 4', base=tmp_path)
    # jobs 1 and 2 arrive together with one shape: one cluster of two
    assert ["\n1\n2\n)" in s.description for s in spec.submits] == [True, False, False]
    assert [s.owner for s in spec.submits] == ["user1"] * 3 and spec.removals == []
    with pytest.raises(SpecError, match=r"jobs\.txt:1: bad -long line"):
        _spec("jobs.txt", base=tmp_path)  # .txt reads as -long text


def test_spec_trace_bad_line_refused_with_trace_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "w.swf").write_text(f"; h\n{SWF_LINE}\n1 2 3\n")
    with pytest.raises(
        SpecError,
        match=r"^w\.swf:3: an SWF line has 18 fields.*\[\[trace\]\] #1 at pool\.toml:\d+\)",
    ):
        _spec("w.swf", base=tmp_path)
    spec = _spec("w.swf", 'on_error = "skip"', base=tmp_path)
    assert len(spec.submits) == 1
    assert spec.traces[0].skipped == (
        "w.swf:3: an SWF line has 18 fields, this one has 3 (skipped)",
    )
    assert spec.traces[0].describe() == (
        "Trace trace1 (w.swf): 1 jobs, 0 removals; 1 skipped:\n"
        "  w.swf:3: an SWF line has 18 fields, this one has 3 (skipped)"
    )
    assert spec.traces[0].describe(shown=0).endswith("1 skipped:\n  ... and 1 more")


def test_example_spec_replays_the_shipped_trace() -> None:
    spec = load_spec(ROOT / "examples" / "trace.toml")
    (t,) = spec.traces
    assert (t.name, t.jobs, t.removals, t.skipped) == ("shipped", 20, 2, ())
    assert len(spec.submits) == 20 and [r.at for r in spec.removals] == [106.0, 201.0]


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (
            'on_error = "ignore"',
            r"pool\.toml:16: \[\[trace\]\] #1 on_error: must be one of refuse, skip",
        ),
        (
            'format = "csv"',
            r"pool\.toml:16: \[\[trace\]\] #1 format: must be one of json, long, swf",
        ),
        ("speed = 2", r"pool\.toml:16: \[\[trace\]\] #1 speed: unknown key"),
        ("limit = -1", r"pool\.toml:16: \[\[trace\]\] #1 limit: must be >= 0"),
        ('name = "a b"', r"pool\.toml:16: \[\[trace\]\] #1 name: must be a name"),
        ("removals = 1", r"pool\.toml:16: \[\[trace\]\] #1 removals: must be true or false"),
    ],
)
def test_spec_trace_bad_keys(extra: str, problem: str) -> None:
    with pytest.raises(SpecError, match=problem):
        _spec("history.json", extra)


def test_spec_trace_bad_compress_and_missing_file() -> None:
    with pytest.raises(SpecError, match=r"pool\.toml:14: \[\[trace\]\] #1 compress: must be > 0"):
        parse_spec(
            SPEC.format(file="history.json", extra="").replace("compress = 2", "compress = 0"),
            "pool.toml",
            base_dir=DATA,
        )
    with pytest.raises(SpecError, match=r"missing\.json:1: cannot read"):
        _spec("missing.json")
    with pytest.raises(SpecError, match=r"pool\.toml:11: \[\[trace\]\] #1: needs file"):
        parse_spec(
            SPEC.format(file="x", extra="").replace('file = "x"\n', ""), "pool.toml", base_dir=DATA
        )
