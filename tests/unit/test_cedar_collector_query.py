"""The collector's query ads, read as collector.cpp reads them (make_query_entry): which
table each QUERY_* command reads, Requirements, Projection (a string, or an expression
evaluated per ad), LimitResults, TargetType, LocationQuery and QUERY_MULTIPLE_ADS's
per-table attributes."""

from __future__ import annotations

import pytest

from mockpool.cedar import commands as cmd
from mockpool.cedar.collector_cmds import QueryRefused, _projected, parse_query
from mockpool.classad import ClassAd, parse_expr, unparse
from mockpool.collector.store import AdRecord


def _query(**attrs: object) -> ClassAd:
    ad = ClassAd(MyType="Query")
    for k, v in attrs.items():
        ad[k] = parse_expr(v) if k.endswith("Requirements") and isinstance(v, str) else v
    return ad


@pytest.mark.parametrize(
    ("command", "table"),
    [
        (cmd.QUERY_STARTD_ADS, "Machine"),
        (cmd.QUERY_SCHEDD_ADS, "Scheduler"),
        (cmd.QUERY_MASTER_ADS, "DaemonMaster"),
        (cmd.QUERY_SUBMITTOR_ADS, "Submitter"),
        (cmd.QUERY_COLLECTOR_ADS, "Collector"),
        (cmd.QUERY_NEGOTIATOR_ADS, "Negotiator"),
        (cmd.QUERY_ANY_ADS, "Any"),
        (cmd.QUERY_ACCOUNTING_ADS, "Accounting"),
    ],
)
def test_each_command_reads_its_table(command: int, table: str) -> None:
    q = parse_query(command, _query(Requirements="true", TargetType="whatever"))
    (part,) = q.parts
    assert part.table == table and not q.private and not q.locate


def test_constraint_projection_and_limit() -> None:
    q = parse_query(
        cmd.QUERY_STARTD_ADS,
        _query(Requirements='State == "Claimed"', Projection="Name, Cpus\tMemory", LimitResults=3),
    )
    (part,) = q.parts
    assert unparse(part.constraint) == 'State == "Claimed"'
    assert part.projection == ("Name", "Cpus", "Memory")
    assert q.limit == 3 and part.limit == 3
    # an empty projection or a limit of 0 or less: whole ads, no limit
    (part,) = parse_query(cmd.QUERY_STARTD_ADS, _query(Projection="", LimitResults=0)).parts
    assert part.projection is None and part.limit is None and part.constraint is None


def test_a_projection_expression_is_kept_to_evaluate_per_ad() -> None:
    query = _query()
    query["Projection"] = parse_expr('ifThenElse(TARGET.Cpus > 1, "Name Cpus", "Name")')
    (part,) = parse_query(cmd.QUERY_STARTD_ADS, query).parts
    assert part.projection is None and part.projection_expr is not None


def test_a_projection_expression_may_draw_random() -> None:
    # evaluated per ad with the query's date and a generator of its own (the evaluator
    # has no clock or generator to fall back on)
    query = _query()
    query["Projection"] = parse_expr('random() >= 0 ? "Name Cpus" : "Name"')
    (part,) = parse_query(cmd.QUERY_STARTD_ADS, query).parts
    slot = ClassAd(Name="slot1@x", Cpus=2, Memory=512)
    record = AdRecord("Machine", "slot1@x", slot, last_heard=0, lifetime=900)
    lines = _projected(record, part, query, 1.0e9).lines
    assert sorted(lines) == [b"Cpus = 2\x00", b'Name = "slot1@x"\x00']


def test_startd_target_types_and_locate() -> None:
    (part,) = parse_query(cmd.QUERY_STARTD_ADS, _query(TargetType="StartD")).parts
    assert part.table == "StartD"
    (part,) = parse_query(cmd.QUERY_STARTD_ADS, _query(TargetType="Slot")).parts
    assert part.table == "Machine"
    # a locate looks among the startd daemon ads, then the slot ads
    q = parse_query(cmd.QUERY_STARTD_ADS, _query(LocationQuery="exec1", LimitResults=1))
    assert [p.table for p in q.parts] == ["StartD", "Machine"] and q.locate and q.limit == 1


def test_private_ads_only_for_the_private_commands() -> None:
    q = parse_query(cmd.QUERY_STARTD_PVT_ADS, _query(TargetType="Machine"))
    assert q.private and [p.table for p in q.parts] == ["MachinePrivate"]
    with pytest.raises(QueryRefused, match="not authorized"):
        parse_query(cmd.QUERY_MULTIPLE_ADS, _query(TargetType="Machine,MachinePrivate"))
    with pytest.raises(QueryRefused, match="not authorized"):
        parse_query(cmd.QUERY_GENERIC_ADS, _query(TargetType="MachinePrivate"))
    q = parse_query(cmd.QUERY_MULTIPLE_PVT_ADS, _query(TargetType="Machine,MachinePrivate"))
    assert [p.table for p in q.parts] == ["Machine", "MachinePrivate"] and q.private


def test_multiple_reads_each_tables_own_attributes() -> None:
    q = parse_query(
        cmd.QUERY_MULTIPLE_ADS,
        _query(
            TargetType="StartD,Scheduler",
            Requirements="true",
            LimitResults=10,
            SchedulerRequirements='Name == "s1"',
            SchedulerProjection="Name MyAddress",
            SchedulerLimitResults=2,
        ),
    )
    startd, schedd = q.parts
    assert startd.table == "StartD" and startd.constraint is None  # "true": every ad
    assert startd.limit == 10 and startd.projection is None
    assert schedd.table == "Scheduler" and unparse(schedd.constraint) == 'Name == "s1"'
    assert schedd.projection == ("Name", "MyAddress") and schedd.limit == 2


def test_queries_the_collector_drops() -> None:
    with pytest.raises(QueryRefused, match="QUERY_MULTIPLE"):
        parse_query(cmd.QUERY_MULTIPLE_ADS, _query())
    with pytest.raises(QueryRefused, match="QUERY_GENERIC_ADS"):
        parse_query(cmd.QUERY_GENERIC_ADS, _query())
    with pytest.raises(QueryRefused, match="not a collector query"):
        parse_query(cmd.QUERY_JOB_ADS, _query())
    (part,) = parse_query(cmd.QUERY_GENERIC_ADS, _query(TargetType="CredD")).parts
    assert part.table == "CredD"
