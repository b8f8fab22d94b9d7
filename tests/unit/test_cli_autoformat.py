"""mockpool.cli.autoformat: -af / -format / -json as HTCondor's print mask prints them.

Expected text is worked out by hand from src/condor_utils/ad_printmask.cpp
(parse_autoformat_args, AttrListPrintMask::display): -af puts " " before every column but
the first (tab with :t, nothing with :g), the :, / :n suffix after every column but the
last, "\\n" after each row; %v prints strings bare and anything else as the old-syntax
unparser (reals %.16G); a value that does not suit a -format conversion prints nothing.
JSON and value spellings are also checked against classad2 (HTCondor's library)."""

from __future__ import annotations

import pytest

from mockpool.classad import parse_ad, parse_expr
from mockpool.cli.autoformat import (
    PrintMask,
    format_json,
    old_text,
    project,
    render,
    split_attributes,
    take_format_args,
)

ADS = [
    parse_ad(
        '[ ClusterId = 1; ProcId = 0; Owner = "alice"; RequestMemory = 2048; Rate = 0.5;'
        ' Req = Owner == "bob" && x > 1.0; Flag = true ]'
    ),
    parse_ad('[ ClusterId = 12; ProcId = 3; Owner = "bobby-long"; Rate = 2.0 ]'),
]


def af(*args: str) -> str:
    rest, mask = take_format_args(list(args))
    assert rest == [] and mask is not None
    return render(mask, ADS)


def test_af_plain_space_separated_undefined_printed() -> None:
    assert af("-af", "Owner", "RequestMemory", "Rate", "Missing") == (
        "alice 2048 0.5 undefined\nbobby-long undefined 2.0 undefined\n"
    )


def test_af_expressions_bools_and_reals() -> None:
    assert af("-autoformat", "Rate * 4", "Flag", "RequestMemory / 1024.0") == (
        "2.0 true 2.0\n8.0 undefined undefined\n"
    )


def test_af_tab_and_headings_pad_to_widest_value() -> None:
    # :h makes every column autowidth, left-aligned: "Owner" 5 < "bobby-long" 10,
    # "RequestMemory" 13 > "undefined" 9; the last column is padded too.
    assert af("-af:th", "Owner", "RequestMemory") == (
        "Owner     \tRequestMemory\nalice     \t2048         \nbobby-long\tundefined    \n"
    )


def test_af_job_id_and_labels() -> None:
    assert af("-af:jl", "Owner", "Rate") == (
        "ID = 1.0 Owner = alice Rate = 0.5\nID = 12.3 Owner = bobby-long Rate = 2.0\n"
    )
    # the id column's heading is " ID", widened to "12.3"
    assert af("-af:jh", "Owner") == " ID  Owner     \n1.0  alice     \n12.3 bobby-long\n"


def test_af_raw_prints_expressions_and_quotes_strings() -> None:
    # an attribute missing from the ad is a bare reference: "undefined"; an expression
    # that is not in the ad prints as its text
    assert af("-af:r", "Owner", "Req", "Missing", "Rate*2") == (
        '"alice" Owner == "bob" && x > 1.0 undefined Rate * 2\n'
        '"bobby-long" undefined undefined Rate * 2\n'
    )


def test_af_capital_v_comma_and_newline_suffixes() -> None:
    assert af("-af:V", "Owner") == '"alice"\n"bobby-long"\n'
    assert af("-af:,", "Owner", "Rate") == "alice, 0.5\nbobby-long, 2.0\n"
    # :n is a suffix: the column prefix " " still comes before the second column
    assert af("-af:n", "Owner", "Rate") == "alice\n 0.5\nbobby-long\n 2.0\n"
    # :g: no column prefix, a newline before each row
    assert af("-af:g", "Owner", "Rate") == "\nalice0.5\n\nbobby-long2.0\n"


def test_format_printf_conversions() -> None:
    assert af("-format", "%d.", "ClusterId", "-format", "%-3d|", "ProcId") == "1.0  |12.3  |"
    assert af("-format", "%.2f\\n", "Rate") == "0.50\n2.00\n"
    # %s over a non-string attribute unparses it; %d over a string prints nothing
    assert af("-format", "%s\\n", "Req") == 'Owner == "bob" && x > 1.0\n'
    assert af("-format", "%s\\n", "ClusterId") == "1\n12\n"
    assert af("-format", "[%d]", "Owner") == ""
    # %v/%V and a conversion-less format (printed as it is, once per ad)
    assert af("-format", "%v ", "Missing", "-format", "%V\\n", "Owner") == (
        'undefined "alice"\nundefined "bobby-long"\n'
    )
    assert af("-format", "x\\t", "Owner") == "x\tx\t"
    # %5s pads a string; %x an integer
    assert af("-format", "%5s|", "ProcId", "-format", "%x\\n", "ClusterId") == (
        "    0|1\n    3|c\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-af"], "needs at least one attribute"),
        (["-af", "a +"], "is not an attribute or expression"),
        (["-format", "%d"], "needs a format and an attribute"),
        (["-format", "%d %d", "A"], "2 conversions"),
        (["-format", "%*d", "A"], "is not a conversion"),
        (["-af:T", "A"], "not supported"),
    ],
)
def test_bad_format_arguments_are_named(args: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        take_format_args(args)


def test_take_format_args_leaves_the_rest_and_stops_at_a_flag() -> None:
    rest, mask = take_format_args(["-af", "A", "B", "-run", "7", "-format", "%d", "C", "x"])
    assert rest == ["-run", "7", "x"]
    assert mask is not None and [c.attr for c in mask.columns] == ["A", "B", "C"]
    assert take_format_args(["-nobatch"]) == (["-nobatch"], None)
    assert mask.attributes == ["a", "b", "c"]


def test_mask_attributes_name_what_the_expressions_read() -> None:
    mask = PrintMask()
    mask.add_autoformat("j", ["RequestMemory / 1024", "Owner"])
    assert mask.attributes == ["clusterid", "procid", "requestmemory", "owner"]


def test_no_rows_no_headings() -> None:
    _, mask = take_format_args(["-af:h", "Owner"])
    assert mask is not None and render(mask, []) == ""


# -- JSON -----------------------------------------------------------------------------------


def test_json_layout_sorted_case_ignored_with_commas_between_ads() -> None:
    ads = [parse_ad('[ b = 1; A = "x"; c = undefined ]'), parse_ad("[ z = 2.0 ]")]
    assert format_json(ads) == (
        '[\n{\n  "A": "x",\n  "b": 1,\n  "c": null\n}\n,\n{\n  "z": 2.0\n}\n]\n'
    )
    assert format_json([]) == ""
    assert format_json(ads, ["b", "z"]) == '[\n{\n  "b": 1\n}\n,\n{\n  "z": 2.0\n}\n]\n'


def test_project_and_split_attributes() -> None:
    assert split_attributes("Owner,ClusterId  ProcId") == ["Owner", "ClusterId", "ProcId"]
    (cut,) = project([ADS[0]], ["owner", "Rate"])
    assert list(cut) == ["Owner", "Rate"]


# -- against HTCondor's own library -----------------------------------------------------------

ORACLE_VALUES = [
    "1.5",
    '"x/y\\"z"',
    "undefined",
    "a + 1",
    '{ 1, 2.0, "s" }',
    '[ x = 1; y = "q" ]',
    "true",
    "1e20",
    "3.0",
    "0.1",
    "-2",
    "123456789.123",
    "1e-7",
    "-0.5",
    "{ }",
    "error",
    "12345678901234567.0",
    '"a\\nb\\tc\\\\ é /"',
    'y > 1.5 && { 1, 2 } == z && a =!= b && ifThenElse(x, "a", 2) && [ q = 1 ].q && !x && -y'
    " && x ? 1 : 2",
    'strcat("a/b", x) =?= "q"',
    "x ?: 3",
    "x > -2 && y == -1.5 && f(x, -3)",
    "a - 2",
]


@pytest.mark.parametrize("text", ORACLE_VALUES)
def test_json_value_and_old_text_as_classad2_prints_them(text: str) -> None:
    classad2 = pytest.importorskip("classad2")
    theirs = classad2.ClassAd()
    theirs["v"] = classad2.ExprTree(text)
    assert format_json([parse_ad(f"[ v = {text} ]")]) == "[\n" + theirs.printJson() + "\n]\n"
    assert "v = " + old_text(parse_expr(text)) + "\n" == theirs.printOld()
