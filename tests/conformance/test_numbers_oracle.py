"""Number literals past 64 bits or a double, against classad2: HTCondor reads such an
integer as 0 and such a real as INF, which is why the submit path refuses them
(mockpool.classad.numbers) rather than store a value the user did not write."""

from __future__ import annotations

import math

import pytest
from builders.oracle import OracleExpr, require_oracle

from mockpool.classad import evaluate
from mockpool.classad.numbers import out_of_range_number

require_oracle()


@pytest.mark.parametrize(
    "text",
    [
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551616",
        "99999999999999999999",
        "123456789012345678901234567890",
        "-9223372036854775808",
        "1e308",
        "1e309",
        "1e400",
    ],
)
def test_flagged_exactly_when_htcondor_reads_another_value(text: str) -> None:
    theirs = OracleExpr(text).eval()
    written = float(text) if "e" in text else int(text)
    kept = theirs == written and not (isinstance(theirs, float) and math.isinf(theirs))
    assert (out_of_range_number(text) is None) == kept
    assert evaluate(text) == theirs  # and mockpool's language reads it as HTCondor does
