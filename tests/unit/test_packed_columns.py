"""Columnar snapshots: slot columns kept by the collector as ads arrive, packed for the
wire, checked and read back by the negotiator into the match kernel's columns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool import packedcolumns as pc
from mockpool.classad import ClassAd, parse_expr, unparse
from mockpool.classad.kernel import Column, SlotTable
from mockpool.classad.vector import StringPool
from mockpool.collector.columns import SlotColumns
from mockpool.collector.store import MAX_COLUMNS, AdStore, BadColumns
from mockpool.v1 import collector_pb2 as cpb
from mockpool.wire import WireError

NAMES = ("Cpus", "Memory", "Arch", "Start", "Flag")

# what an attribute may hold: every kind a column row has, and repeats of each
VALUES = st.one_of(
    st.none(),  # missing
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, 2, 4, 16]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["X86_64", "x86_64", "INTEL", ""]),
    st.text(max_size=4),
    st.sampled_from(
        [
            "undefined",
            "error",
            "-3",
            "-2.5",
            "{1, 2}",
            "[a = 1]",
            "MY.Cpus * 2",
            "TARGET.RequestCpus <= MY.Cpus",
            "ifThenElse(Cpus > 1, true, undefined)",
        ]
    ).map(parse_expr),
)


def ad_of(name: str, values: dict[str, object]) -> ClassAd:
    ad = ClassAd(Name=name)
    for attr, v in values.items():
        if v is not None:
            ad[attr] = v
    return ad


ADS = st.lists(st.fixed_dictionaries({n: VALUES for n in NAMES}), min_size=0, max_size=12).map(
    lambda rows: [ad_of(f"slot{k}@m", r) for k, r in enumerate(rows)]
)


def as_read(col: Column, n: int) -> tuple[object, ...]:
    """What a column says of each row, comparable between two columns of one pool."""
    lit = col.lit
    tags = lit.tags()

    def full(a: object, dtype: object) -> np.ndarray:
        return np.broadcast_to(np.asarray(0 if a is None else a, dtype=dtype), (n,))

    ints, reals, strs = full(lit.i, np.int64), full(lit.f, np.float64), full(lit.s, np.int64)
    rows = []
    for r in range(n):
        t = int(tags[r])
        value = (ints[r], reals[r].tobytes(), strs[r], None if lit.o is None else lit.o[r])
        rows.append((bool(col.present[r]), t, value[{2: 0, 3: 0, 4: 1, 5: 2}.get(t, 3)]))
    exprs = sorted((rs.tolist(), unparse(e)) for rs, e in col.exprs)
    in_exprs = {r for rs, _ in exprs for r in rs}
    # an expression row's literal part is not read
    return tuple(x if r not in in_exprs else x[0] for r, x in enumerate(rows)), tuple(
        (tuple(rs), text) for rs, text in exprs
    )


def packed_over(ads: list[ClassAd], names: tuple[str, ...] = NAMES) -> list[pc.PackedColumn]:
    cols = SlotColumns()
    for ad in ads:
        cols.put(ad.eval("Name").lower(), ad)
    return cols.pack(names, cols.rows([ad.eval("Name").lower() for ad in ads]))


def over_the_wire(col: pc.PackedColumn, slot_names: list[str]) -> pc.PackedColumn:
    raw = pc.column_to_pb(col).SerializeToString()
    return pc.column_from_pb(cpb.SlotColumn.FromString(raw), slot_names)


@settings(max_examples=150, deadline=None)
@given(ADS)
def test_a_column_sent_packed_is_the_column_read_from_the_ads(ads: list[ClassAd]) -> None:
    names = [str(ad.eval("Name")) for ad in ads]
    table = SlotTable(ads)
    for packed in packed_over(ads):
        got = over_the_wire(packed, names).column(table.pool)
        assert as_read(got, len(ads)) == as_read(table.column(packed.name), len(ads))
        # the same partition of the rows (slot classes are made of it)
        assert np.array_equal(
            table.codes(got)[0] >= 0, table.codes(table.column(packed.name))[0] >= 0
        )


def test_a_column_packs_each_kind_in_row_order_by_hand() -> None:
    start = parse_expr("TARGET.RequestCpus <= MY.Cpus")
    ads = [
        ad_of("a", {"X": 4}),
        ad_of("b", {"X": "x86_64"}),
        ad_of("c", {}),
        ad_of("d", {"X": True}),
        ad_of("e", {"X": 2.5}),
        ad_of("f", {"X": start}),
        ad_of("g", {"X": "x86_64"}),
        ad_of("h", {"X": parse_expr("-7")}),
        ad_of("i", {"X": parse_expr("TARGET.RequestCpus <= MY.Cpus")}),  # another tree
    ]
    (col,) = packed_over(ads, ("X",))
    assert col.kinds.tolist() == [
        pc.INT,
        pc.STRING,
        pc.MISSING,
        pc.BOOL,
        pc.REAL,
        pc.EXPR,
        pc.STRING,
        pc.INT,
        pc.EXPR,
    ]
    assert col.ints.tolist() == [4, 1, -7] and col.reals.tolist() == [2.5]
    assert list(col.strings) == ["x86_64"] and col.string_rows.tolist() == [0, 0]
    # two trees of one text are sent once
    assert [unparse(e) for e in col.exprs] == [unparse(start)]
    assert col.expr_rows.tolist() == [0, 0]


def test_the_kinds_are_the_wire_enum() -> None:
    for k, name in enumerate(pc.KIND_NAMES):
        assert cpb.ColumnKind.Value(f"COLUMN_{name}") == k


def test_the_collector_keeps_its_columns_as_slots_come_change_and_go() -> None:
    cols = SlotColumns()
    cols.put("s1", ad_of("s1", {"Cpus": 1}))
    cols.put("s2", ad_of("s2", {"Cpus": 2}))
    (c,) = cols.pack(["Cpus"], cols.rows(["s2", "s1"]))  # kept from here on
    assert c.ints.tolist() == [2, 1] and cols.kept() == ["cpus"]
    cols.put("s1", ad_of("s1", {"Cpus": "many"}))
    cols.drop("s2")
    cols.put("s3", ad_of("s3", {}))  # takes s2's row
    assert len(cols) == 2
    (c,) = cols.pack(["cpus"], cols.rows(["s1", "s3"]))
    assert c.kinds.tolist() == [pc.STRING, pc.MISSING] and list(c.strings) == ["many"]
    assert c.name == "cpus"
    # a name no snapshot asks for is kept no more
    for _ in range(SlotColumns.FORGET_AFTER + 1):
        cols.pack(["Memory"], cols.rows(["s1"]))
    assert cols.kept() == ["memory"]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "put", "drop", "pack", "begin", "step"]),
            st.integers(0, 5),
            st.fixed_dictionaries({n: VALUES for n in NAMES[:3]}),
        ),
        max_size=30,
    )
)
def test_kept_columns_are_those_packed_from_the_ads_now(ops: list) -> None:
    """Whatever comes and goes, and while catch-ups are under way a step at a time (a
    collector's turns), a snapshot's columns are those of the ads stored now."""
    cols, ads = SlotColumns(), {}
    cols.ROWS_PER_STEP = 2
    pending = []
    for op, k, values in ops:
        key = f"s{k}"
        if op == "put":
            ads[key] = ad_of(key, values)
            cols.put(key, ads[key])
        elif op == "drop":
            ads.pop(key, None)
            cols.drop(key)
        elif op == "begin":
            pending.append(cols.catch_up([n.lower() for n in NAMES[k % 3 :]]))
        elif op == "step" and pending and next(pending[k % len(pending)], "done") == "done":
            pending.pop(k % len(pending))
        keys = sorted(ads, reverse=k % 2 == 1)
        if op == "pack" or k == 0:
            got = cols.pack(NAMES[:3], cols.rows(keys))
            fresh = packed_over([ads[x] for x in keys], NAMES[:3])
            pool = StringPool()
            for a, b in zip(got, fresh, strict=True):
                assert as_read(a.column(pool), len(keys)) == as_read(b.column(pool), len(keys))


def test_a_snapshot_carries_its_columns_over_every_slot_delta_or_not() -> None:
    store = AdStore()
    for k in (1, 2, 3):
        store.update("Machine", ad_of(f"slot{k}@m", {"Cpus": k}), 0)
    store.update("Machine", ad_of("slot1@m", {"Cpus": 1}), 0)  # the order settled
    snap = store.snapshot(columns=["Cpus"])
    assert [c.ints.tolist() for c in snap.columns] == [[1, 2, 3]]
    store.update("Machine", ad_of("slot2@m", {"Cpus": 20}), 1)
    # a delta in the same order: one ad, but the column of all three
    delta = store.snapshot(since=(store.epoch, snap.seq), columns=["Cpus"])
    assert delta.delta and delta.same_order and len(delta.slots) == 1
    assert [c.ints.tolist() for c in delta.columns] == [[1, 20, 3]]
    # a slot gone: a delta that names the slots, the column in their order
    store.invalidate("Machine", "slot1@m")
    delta = store.snapshot(since=(store.epoch, delta.seq), columns=["Cpus"])
    assert delta.delta and not delta.same_order and delta.slot_order == ["slot2@m", "slot3@m"]
    assert [c.ints.tolist() for c in delta.columns] == [[20, 3]]
    # a constraint selects the rows of the columns too
    snap = store.snapshot("Cpus > 5", columns=["Cpus", "Memory"])
    assert [c.kinds.tolist() for c in snap.columns] == [[pc.INT], [pc.MISSING]]


# ----------------------------------------------------------------------------- bad input

SLOTS = ["slot1@m", "slot2@m", "slot3@m"]


def i64(*values: int) -> bytes:
    return np.array(values, dtype="<i8").tobytes()


def u32(*values: int) -> bytes:
    return np.array(values, dtype="<u4").tobytes()


def good() -> cpb.SlotColumn:
    """Memory over three slots: 1024, "lots", 2048."""
    return cpb.SlotColumn(
        name="Memory",
        kinds=bytes([pc.INT, pc.STRING, pc.INT]),
        ints=i64(1024, 2048),
        strings=["lots"],
        string_rows=u32(0),
    )


def refused(msg: cpb.SlotColumn) -> str:
    with pytest.raises(WireError) as info:
        pc.column_from_pb(msg, SLOTS)
    return str(info.value)


def test_a_good_column_reads_back() -> None:
    col = pc.column_from_pb(good(), SLOTS)
    assert col.ints.tolist() == [1024, 2048] and list(col.strings) == ["lots"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (dict(kinds=bytes([pc.INT, pc.STRING])), "'Memory' has 2 rows for the snapshot's 3 slots"),
        (dict(kinds=bytes([pc.INT, 9, pc.INT])), "'Memory', slot 'slot2@m': kind 9 is not"),
        # a column of the wrong type: its kinds say numbers where it sends strings
        (
            dict(kinds=bytes([pc.INT, pc.INT, pc.INT])),
            "'Memory', slot 'slot3@m': a INT row without its integer value",
        ),
        (dict(ints=i64(1024)), "'Memory', slot 'slot3@m': a INT row without its integer value"),
        (dict(ints=i64(1024)[:5]), "'Memory': 5 bytes of integers are not whole 8-byte values"),
        (
            dict(reals=np.array([1.5]).tobytes()),
            "'Memory' has 1 real values for its 0 rows of that type",
        ),
        (
            dict(kinds=bytes([pc.BOOL, pc.STRING, pc.INT])),
            "'Memory', slot 'slot1@m': a BOOL row holds 1024, not 0 or 1",
        ),
        (dict(string_rows=u32(3)), "'Memory', slot 'slot2@m': string 3 of a table of 1"),
        (
            dict(
                kinds=bytes([pc.INT, pc.EXPR, pc.INT]),
                strings=[],
                string_rows=b"",
                exprs=["Cpus >"],
                expr_rows=u32(0),
            ),
            "'Memory', slot 'slot2@m': expression 'Cpus >' does not parse",
        ),
        (dict(name=" "), "snapshot column without a name"),
    ],
)
def test_a_column_that_does_not_hold_together_names_the_attribute_and_slot(
    change: dict, says: str
) -> None:
    msg = good()
    for field, value in change.items():
        msg.ClearField(field)
        if isinstance(value, list):
            getattr(msg, field).extend(value)
        else:
            setattr(msg, field, value)
    assert says in refused(msg)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["update", "update", "invalidate", "snapshot", "since"]),
            st.integers(0, 4),
            st.sampled_from([1, 2, 4]),
        ),
        max_size=25,
    )
)
def test_a_store_snapshot_s_columns_are_those_of_its_slots_whatever_came_and_went(
    ops: list,
) -> None:
    store, last = AdStore(), None
    for op, k, cpus in ops:
        if op == "update":
            store.update("Machine", ad_of(f"slot{k}@m", {"Cpus": cpus, "Arch": f"a{k}"}), 0)
        elif op == "invalidate":
            store.invalidate("Machine", f"slot{k}@m")
        else:
            since = (store.epoch, last) if op == "since" and last is not None else None
            snap = store.snapshot(since=since, columns=["Cpus", "Arch"])
            last = snap.seq
            whole = store.snapshot()
            want = {
                "Cpus": [r.ad.eval("Cpus") for r in whole.slots],
                "Arch": [r.ad.eval("Arch") for r in whole.slots],
            }
            cpus_col, arch_col = snap.columns
            assert cpus_col.ints.tolist() == want["Cpus"]
            assert [arch_col.strings[i] for i in arch_col.string_rows] == want["Arch"]


def test_a_snapshot_taken_while_a_catch_up_is_half_done_reads_every_change() -> None:
    cols = SlotColumns()
    cols.ROWS_PER_STEP = 2
    keys = [f"s{k}" for k in range(6)]
    for k, key in enumerate(keys):
        cols.put(key, ad_of(key, {"Cpus": k}))
    (c,) = cols.pack(["Cpus"], cols.rows(keys))
    assert c.ints.tolist() == [0, 1, 2, 3, 4, 5]
    for k, key in enumerate(keys[:5]):
        cols.put(key, ad_of(key, {"Cpus": 10 + k}))
    half = cols.catch_up(["cpus"])
    next(half)  # two of the five changed rows read; a turn of the collector's passes
    (c,) = cols.pack(["Cpus"], cols.rows(keys))
    assert c.ints.tolist() == [10, 11, 12, 13, 14, 5]
    assert list(half) == [None, None]  # the rest of it writes what was read already
    (c,) = cols.pack(["Cpus"], cols.rows(keys))
    assert c.ints.tolist() == [10, 11, 12, 13, 14, 5]


def test_a_snapshot_asking_for_too_many_columns_is_refused_and_keeps_none() -> None:
    store = AdStore()
    store.update("Machine", ad_of("slot1@m", {"Cpus": 1}), 0)
    names = [f"Attr{k}" for k in range(MAX_COLUMNS + 1)]
    with pytest.raises(BadColumns, match=f"at most {MAX_COLUMNS} slot columns, not 1025"):
        store.snapshot(columns=names)
    assert store.columns.kept() == []
    # one name in two spellings is one column, sent under the first
    (col,) = store.snapshot(columns=["Cpus", "CPUS", " "]).columns
    assert col.name == "Cpus" and col.ints.tolist() == [1]


def test_a_catch_up_left_half_done_keeps_nothing_and_holds_no_log_back() -> None:
    """A snapshot call cancelled while a new column is read (its catch-up dropped):
    the column is not kept, and the change log is not held for it."""
    cols = SlotColumns()
    cols.ROWS_PER_STEP = 2
    keys = [f"s{k}" for k in range(6)]
    for k, key in enumerate(keys):
        cols.put(key, ad_of(key, {"Cpus": k, "Arch": "x"}))
    cols.pack(["Arch"], cols.rows(keys))
    half = cols.catch_up(["cpus"])
    next(half)
    half.close()
    assert cols.kept() == ["arch"]
    for k, key in enumerate(keys):
        cols.put(key, ad_of(key, {"Cpus": 10 + k, "Arch": "y"}))
    (c,) = cols.pack(["Arch"], cols.rows(keys))
    assert [c.strings[i] for i in c.string_rows] == ["y"] * 6
    assert cols._log == []  # every line read: the log is trimmed
