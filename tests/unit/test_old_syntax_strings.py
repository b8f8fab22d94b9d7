"""Old-syntax string escaping (condor_status -long text), worked by hand from
compat_classad.cpp's ConvertEscapingOldToNew: only \\" escapes, unless it ends the line."""

from __future__ import annotations

import pytest

from mockpool.classad import ClassAd, format_ad, parse_ad
from mockpool.classad.oldstrings import new_to_old, old_to_new


@pytest.mark.parametrize(
    ("line_rhs", "value"),
    [
        (r'"a\b"', "a\\b"),  # a backslash is itself
        (r'"C:\dir\"', "C:\\dir\\"),  # \" at the end of the line: backslash, then the closing quote
        (r'"x\"y"', 'x"y'),  # \" inside: a quote
        (r'"a\nb"', "a\\nb"),  # no \n escape: backslash and n
        (r'"\\srv\share"', "\\\\srv\\share"),
        (r'"a\\"b"', 'a\\"b'),  # backslash, then an escaped quote
        ('"tab\there"', "tab\there"),
    ],
)
def test_reading_old_syntax_strings(line_rhs: str, value: str) -> None:
    assert parse_ad(f"S = {line_rhs}\n").eval("S") == value


def test_old_to_new_rewrites_backslashes() -> None:
    assert old_to_new(r'"a\b"') == r'"a\\b"'
    assert old_to_new(r'"x\"y"') == r'"x\"y"'
    assert old_to_new('"C:\\dir\\"\r') == r'"C:\\dir\\"'  # \r ends the line too
    # as HTCondor: only the very next character is looked at, so blanks after the closing
    # quote make it an escaped quote (and the string unterminated); trailing blanks then go
    assert old_to_new('"C:\\dir\\"  ') == r'"C:\\dir\"'


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("a\\b", 'S = "a\\b"\n'),
        ('x"y', 'S = "x\\"y"\n'),
        ("C:\\dir\\", 'S = "C:\\dir\\"\n'),
        ("é", 'S = "é"\n'),
    ],
)
def test_writing_old_syntax_strings(value: str, written: str) -> None:
    assert format_ad(ClassAd(S=value), style="old") == written
    assert parse_ad(written).eval("S") == value


def test_strings_inside_expressions_and_quoted_names() -> None:
    ad = parse_ad('Requirements = TARGET.Path == "D:\\data" && \'odd name\' =?= "q\\"t"\n')
    text = format_ad(ad, style="old")
    assert '"D:\\data"' in text and "'odd name'" in text and '"q\\"t"' in text
    assert new_to_old(r'x == "a\\b"') == 'x == "a\\b"'
    assert parse_ad(text).eval("Requirements") == ad.eval("Requirements")


def test_a_line_break_is_written_as_it_is_like_htcondor() -> None:
    # old syntax has no escape for it: classad2's printOld writes 'S = "a\nb"\n' too, and
    # such text does not read back (it is why `-long` output of such ads is lossy)
    assert format_ad(ClassAd(S="a\nb"), style="old") == 'S = "a\nb"\n'
