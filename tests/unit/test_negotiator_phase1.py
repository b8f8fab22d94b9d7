"""Phase 1's plan: the schedds a cycle asks, from the submitter ads."""

from __future__ import annotations

from mockpool.classad import ClassAd
from mockpool.negotiator.phase1 import schedds_to_ask
from mockpool.negotiator.selfad import negotiator_ad


def _sub(name: str, schedd: str | None, addr: str | None, idle: object) -> ClassAd:
    ad = ClassAd({"MyType": "Submitter", "Name": name, "IdleJobs": idle})
    if schedd is not None:
        ad["ScheddName"] = schedd
    if addr is not None:
        ad["ScheddIpAddr"] = addr
    return ad


def test_only_schedds_with_idle_jobs_are_asked() -> None:
    plan = schedds_to_ask(
        [
            _sub("alice@p", "s2", "<10.0.0.2:1>", 3),
            _sub("bob@p", "s1", "<10.0.0.1:1>", 0),  # nothing idle: not asked
            _sub("carol@p", "s1", "<10.0.0.1:1>", True),  # a boolean is not a count
            _sub("dave@p", "s3", "<10.0.0.3:1>", 1),
            _sub("eve@p", None, "<10.0.0.9:1>", 5),  # no schedd name: ignored
            _sub("fay@p", "s4", None, 5),  # no address: ignored
        ]
    )
    assert plan.names() == ["s2", "s3"]
    assert plan.addresses == {"s2": "<10.0.0.2:1>", "s3": "<10.0.0.3:1>"}
    # s1's submitters are known (a failure of s1 would fail them) though s1 is not asked
    assert plan.submitters_at == {"s2": {"alice@p"}, "s1": {"bob@p", "carol@p"}, "s3": {"dave@p"}}
    assert plan.ignored == 2


def test_the_negotiator_ad() -> None:
    ad = negotiator_ad("neg", "127.0.0.1:9618", start_time=3, now=99.7, update_interval=300.0)
    assert ad.eval("MyAddress") == "<127.0.0.1:9618>" == ad.eval("NegotiatorIpAddr")
    assert (ad.eval("MyCurrentTime"), ad.eval("DaemonStartTime"), ad.eval("UpdateInterval")) == (
        99,
        3,
        300,
    )
