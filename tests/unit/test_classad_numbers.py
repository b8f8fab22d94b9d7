"""mockpool.classad.numbers: literals the ClassAd language would not keep as written.

HTCondor's lexer reads an integer literal past 2**63 - 1 as 0 and a real past the largest
double as INF (tests/conformance/test_numbers_oracle.py checks these against classad2).
"""

from __future__ import annotations

import pytest

from mockpool.classad.numbers import INT64_MAX, out_of_range_number


def test_int64_max() -> None:
    assert INT64_MAX == 9223372036854775807


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("9223372036854775807", None),  # 2**63 - 1 fits
        ("9223372036854775808", "9223372036854775808"),  # 2**63 does not...
        ("-9223372036854775808", None),  # ...except as the smallest integer
        ("(-9223372036854775808)", None),
        ("1 + -9223372036854775808", None),
        ("x - 9223372036854775808", "9223372036854775808"),  # subtraction, not a negation
        ("a[0] - 9223372036854775808", "9223372036854775808"),
        ("99999999999999999999", "99999999999999999999"),
        ("1 + 123456789012345678901234567890", "123456789012345678901234567890"),
        ("1e308", None),
        ("1.7976931348623157e308", None),  # the largest double
        ("1e309", "1e309"),
        ("2.5E400 * 0", "2.5E400"),
        ('"99999999999999999999"', None),  # in a string it is text
        ("Memory > 1024 && Cpus >= 2", None),
        ('"unterminated', None),  # not tokenizable: the parser reports that instead
    ],
)
def test_out_of_range_number(text: str, found: str | None) -> None:
    assert out_of_range_number(text) == found
