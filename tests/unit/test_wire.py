"""mockpool.wire: an ad the wire cannot carry is a WireError naming the attribute (never
protobuf's ValueError), and ``ads_to_pb`` can leave it out so the other ads still go."""

from __future__ import annotations

import pytest

from mockpool.classad import ClassAd
from mockpool.v1 import schedd_pb2
from mockpool.wire import WireError, ad_to_pb, ads_from_pb, ads_to_pb


def test_int64_limits_travel_typed() -> None:
    msg = ad_to_pb(ClassAd(Lo=-(2**63), Hi=2**63 - 1))
    assert [a.literal.integer for a in msg.attributes] == [-(2**63), 2**63 - 1]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**300])
def test_an_integer_past_64_bits_is_a_wire_error(value: int) -> None:
    with pytest.raises(WireError, match=f"attribute RequestMemory: integer {value} does not fit"):
        ad_to_pb(ClassAd(A=1, RequestMemory=value))


def test_ads_to_pb_raises_without_skip_and_leaves_nothing_half_written() -> None:
    reply = schedd_pb2.JobQueryReply()
    with pytest.raises(WireError):
        ads_to_pb([ClassAd(A=1), ClassAd(A=2**64), ClassAd(A=3)], reply.jobs)
    assert len(reply.jobs) == 1


def test_ads_to_pb_skips_and_reports_a_bad_ad() -> None:
    reply = schedd_pb2.JobQueryReply()
    skipped: list[tuple[object, str]] = []
    ads = [ClassAd(ProcId=0), ClassAd(ProcId=1, X=2**64), ClassAd(ProcId=2)]
    ads_to_pb(ads, reply.jobs, lambda ad, exc: skipped.append((ad.get_value("ProcId"), str(exc))))
    assert [a.get_value("ProcId") for a in ads_from_pb(reply.jobs)] == [0, 2]
    assert skipped == [(1, "attribute X: integer 18446744073709551616 does not fit in 64 bits")]
