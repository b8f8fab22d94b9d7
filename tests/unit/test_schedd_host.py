"""The schedds one actor hosts, as one core (``ScheddHost``): the due ones ticked, each
failing alone; one Advertise for all; each answer to the schedd incarnation that asked.

Times are worked out from the knobs below: SCHEDD_INTERVAL 300, so a schedd started at
0 advertises at 0 and again at 300; a schedd that raises is ticked again RETRY_AFTER
(10) pool seconds later.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import ALICE
from builders.cores import make_schedd as make

from mockpool.auth import Principal, Role
from mockpool.contract import Peer, Ready, Undeliverable
from mockpool.messages import AdvertiseAck, JobsExitedAck, ScheddJobsExited
from mockpool.schedd.driver import ScheddDriver
from mockpool.schedd.host import (
    RETRY_AFTER,
    FromSchedd,
    JointAdvertise,
    JointAnswer,
    ScheddHost,
    ToSchedd,
)

COLLECTOR = "coll:1"
KNOBS = "SCHEDD_INTERVAL = 300\nSCHEDD_MIN_INTERVAL = 5\n"
ANSWERER = Peer(COLLECTOR, Principal(Role.DAEMON, ""))
SLEEP = "executable = /bin/sleep\narguments = 60\nqueue\n"


def schedd(tmp_path: Path, name: str, *, collector: str = COLLECTOR) -> ScheddDriver:
    core = make(tmp_path / f"{name}.sqlite", 0.0, KNOBS, name=name)
    return ScheddDriver(core, 0.0, address=f"{name}:1", collector_address=collector)


@pytest.fixture
def host(tmp_path: Path) -> ScheddHost:
    h = ScheddHost()
    for name in ("schedd1", "schedd2"):
        h.add(schedd(tmp_path, name))
    return h


def joint(ready: Ready) -> JointAdvertise:
    (adv,) = [s.msg for s in ready.sends if isinstance(s.msg, JointAdvertise)]
    return adv


def acked(adv: JointAdvertise) -> JointAnswer:
    return JointAnswer(
        [ToSchedd(p.schedd, AdvertiseAck(p.msg.corr, len(p.msg.updates))) for p in adv.parts]
    )


def test_the_schedds_ad_rounds_go_as_one_advertise_in_the_order_they_were_named(
    host: ScheddHost,
) -> None:
    assert host.next_wakeup() == 0.0
    adv = joint(host.tick(0.0))
    assert [p.schedd.name for p in adv.parts] == ["schedd1", "schedd2"]
    assert all(p.msg.updates[0].ad_type == "Scheduler" for p in adv.parts)
    # in flight: neither starts another round until its answer
    assert [s.msg for s in host.tick(1.0).sends if isinstance(s.msg, JointAdvertise)] == []
    host.deliver(acked(adv), ANSWERER, 1.0)
    assert all(d.can_join_ad_round() for d in host.drivers.values())


def test_a_round_that_starts_takes_the_other_schedds_rounds_with_it(
    host: ScheddHost, tmp_path: Path
) -> None:
    host.deliver(acked(joint(host.tick(0.0))), ANSWERER, 0.0)
    # schedd2's queue changes at 40: its ads are due at 40 (SCHEDD_MIN_INTERVAL after
    # the last round, long past); schedd1's own are not due until 300, but join it
    two = host.drivers["schedd2"]
    two.core.submit(SLEEP, "job.sub", ALICE, 40.0)
    host.wrap(two, two.submitted(40.0))
    assert host.next_wakeup() == 40.0
    adv = joint(host.tick(40.0))
    assert [p.schedd.name for p in adv.parts] == ["schedd1", "schedd2"]
    host.deliver(acked(adv), ANSWERER, 40.0)
    # both rounds start from 40: the next at 340 for both
    assert {d.core.ad_cadence.due() for d in host.drivers.values()} == {340.0}


def test_an_answer_reaches_only_the_incarnation_that_asked(
    host: ScheddHost, tmp_path: Path
) -> None:
    adv = joint(host.tick(0.0))
    old = adv.parts[1]
    host.remove("schedd2")
    again = schedd(tmp_path, "schedd2")
    host.add(again)
    host.restart(again, 0.0)
    mine = joint(host.tick(0.0))
    (new,) = [p for p in mine.parts if p.schedd.name == "schedd2"]
    # the crashed schedd2 counted its ids as the new one does: the same corr
    assert new.msg.corr == old.msg.corr and new.schedd is again and old.schedd is not again
    stale = ToSchedd(old.schedd, AdvertiseAck(old.msg.corr, 1))
    assert host.deliver(stale, ANSWERER, 1.0) == Ready()
    assert not again.can_join_ad_round()  # still waiting for its own answer
    host.deliver(ToSchedd(new.schedd, AdvertiseAck(new.msg.corr, 1)), ANSWERER, 1.0)
    assert again.can_join_ad_round()


def test_nothing_goes_out_for_a_schedd_that_crashed(host: ScheddHost) -> None:
    two = host.drivers["schedd2"]
    host.remove("schedd2")
    ready = two.tick(0.0)
    assert ready.sends
    assert host.wrap(two, ready).sends == []


def test_a_failed_send_comes_back_to_its_schedd_as_undeliverable(host: ScheddHost) -> None:
    adv = joint(host.tick(0.0))
    failed = host.failed(adv, "UNAVAILABLE", "collector down")
    assert isinstance(failed, JointAnswer)
    assert [a.answer.code for a in failed.answers] == ["UNAVAILABLE", "UNAVAILABLE"]
    host.deliver(failed, ANSWERER, 2.0)
    # the round ended unanswered: each may start the next
    assert all(d.can_join_ad_round() for d in host.drivers.values())
    one = FromSchedd(host.drivers["schedd1"], object())
    assert host.failed(one, "DEADLINE_EXCEEDED", "").answer.code == "DEADLINE_EXCEEDED"


def test_a_schedd_whose_timers_raise_is_tried_again_later_and_the_other_runs_on(
    host: ScheddHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = host.drivers["schedd1"]

    def broken(now: float) -> Ready:
        raise RuntimeError("a bug")

    monkeypatch.setattr(one, "tick", broken)
    adv = joint(host.tick(0.0))
    # schedd2 ran; schedd1's ad round (no timer of its own) joined it as ever
    assert [p.schedd.name for p in adv.parts] == ["schedd1", "schedd2"]
    assert [(name, str(exc)) for name, exc in host.failures] == [("schedd1", "a bug")]
    # schedd1 is due at 0 still (its first keepalive look), but not before its retry
    assert host.drivers["schedd1"].next_wakeup() == 0.0
    host.deliver(acked(adv), ANSWERER, 0.0)
    assert host.next_wakeup() == RETRY_AFTER


def test_a_caller_request_goes_to_the_schedd_it_names(host: ScheddHost) -> None:
    caller = Peer("", Principal(Role.DAEMON, "startd/exec1"))
    ready = host.deliver(ScheddJobsExited("x1", "schedd2", []), caller, 5.0)
    replies = [s.msg for s in ready.sends]
    assert len(replies) == 1 and isinstance(replies[0], JobsExitedAck)
    host.remove("schedd2")
    ready = host.deliver(ScheddJobsExited("x2", "schedd2", []), caller, 6.0)
    ((_, refusal),) = [(s.address, s.msg) for s in ready.sends]
    assert isinstance(refusal, Undeliverable) and refusal.code == "UNAVAILABLE"
    assert "schedd2 is not running" in refusal.detail


def test_a_schedd_back_in_a_running_actor_keeps_alive_with_the_actors_round(
    host: ScheddHost, tmp_path: Path
) -> None:
    # the other schedd's next keepalive look is at 0 (new); the restarted one's goes with
    # it, not MIN_ALIVE_EVERY later
    host.remove("schedd2")
    again = schedd(tmp_path, "schedd2")
    host.add(again)
    host.restart(again, 3.0)
    assert again.keepalive_look == host.drivers["schedd1"].keepalive_look == 0.0
