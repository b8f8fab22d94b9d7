"""The negotiator's core between cycles (negotiator.Negotiator), with no shell: the
aborted cycle's log, userprio changes made while a cycle computes, the end of a cycle
(history, log, events) and a schedd that does not take its matches."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import job_request, static_pool

from mockpool.config import parse_config
from mockpool.durable import MemoryFiles, SimulatedDisk
from mockpool.negotiator.cycle import negotiate
from mockpool.negotiator.negotiator import Negotiator

ALICE = "alice@mockpool"


def core(state: Path | MemoryFiles) -> Negotiator:
    cfg = parse_config("NEGOTIATOR_INTERVAL = 60\n", "test.conf").for_subsystem("NEGOTIATOR")
    n = Negotiator("negotiator", cfg, state)
    n.started(100.0)
    return n


def cycle(n: Negotiator, start: float):  # type: ignore[no-untyped-def]
    return negotiate(
        static_pool(3), [job_request(ALICE, 2)], n.accountant, n.cycle_config, start, finish=False
    )


def test_a_cycle_without_ads_is_logged_as_htcondor_and_counts_no_cycle(tmp_path: Path) -> None:
    n = core(tmp_path)
    n.cycle_aborted(100.0, 100.5, "UNAVAILABLE: no collector")
    lines = n.drain_log()
    assert [line.split(" ", 2)[2] for line in lines] == [
        "---------- Started Negotiation Cycle ----------",
        "Phase 1:  Obtaining ads from collector ...",
        "Couldn't fetch ads: UNAVAILABLE: no collector",
        "Aborting negotiation cycle",
    ]
    assert n.cycles == 0 and n.peer_failures == 1 and n.history.latest is None
    assert n.drain_events() == []


def test_a_priority_factor_set_while_a_cycle_computes_survives_the_cycle(
    tmp_path: Path,
) -> None:
    n = core(tmp_path)
    n.computing()
    result = cycle(n, 100.0)  # computed from the accountant before the change
    n.userprio("setfactor", ALICE, 5.0, 100.2)
    assert n.accountant.factor(ALICE) == 5.0
    n.computed(result)
    # the cycle's accountant (with alice's usage) is the negotiator's, with the change
    assert n.accountant.factor(ALICE) == 5.0
    assert n.accountant.resources_used(ALICE) == 2
    assert (tmp_path / "accountant.json").exists()
    # a change after the cycle is not replayed again
    n.userprio("setfactor", ALICE, 7.0, 101.0)
    assert n.accountant.factor(ALICE) == 7.0


@pytest.mark.parametrize("where", ["folder", "simulated disk"])
def test_the_accountant_a_cycle_leaves_is_what_a_restarted_negotiator_reads(
    tmp_path: Path, where: str
) -> None:
    # a live negotiator's folder, or a virtual run's simulated disk: the same recovery
    state = tmp_path if where == "folder" else SimulatedDisk().files("central")
    n = core(state)
    n.computing()
    n.computed(cycle(n, 100.0))
    again = core(state)
    assert again.accountant.resources_used(ALICE) == 2
    assert again.accountant.to_dict() == n.accountant.to_dict()


def test_the_end_of_a_cycle_and_a_schedd_that_did_not_take_its_matches(
    tmp_path: Path,
) -> None:
    n = core(tmp_path)
    n.computing()
    result = cycle(n, 100.0)
    n.computed(result)
    assert len(result.matches) == 2
    n.matches_failed(result, "schedd1", "127.0.0.1:7000", result.matches, 100.4)
    n.finish_cycle(result, 100.0, 101.0, 0.25, failed=set())
    assert n.cycles == 1 and n.total_matches == 2 and n.peer_failures == 1
    stats = n.history.latest
    assert stats is not None and stats.submitters_failed == {ALICE}
    assert stats.duration == 1.0
    assert any(
        "Failed to send 2 matches to schedd1 <127.0.0.1:7000>" in line for line in n.drain_log()
    )
    (kind, fields), *rest = n.drain_events()
    assert rest == [] and kind == "cycle"
    assert (fields["cycle"], fields["start"], fields["duration"], fields["matches"]) == (
        1,
        100.0,
        1.0,
        2,
    )
    ad = n.negotiator_ad("127.0.0.1:9000", 102.0)
    assert ad.eval("LastNegotiationCycleMatches0") == 2


def test_matches_a_schedd_took_are_the_negotiators_match_and_reject_events(
    tmp_path: Path,
) -> None:
    n = core(tmp_path)
    result = cycle(n, 100.0)
    n.matches_sent(result.matches, result.rejections)
    events = n.drain_events()
    assert [k for k, _ in events] == ["match", "match"]
    assert {f["slot"] for _, f in events} <= {f"slot1@exec{i:05d}" for i in range(3)}
    assert all("secret" not in f["claim"] for _, f in events)  # claim ids are redacted


def test_a_damaged_accountant_on_the_simulated_disk_is_set_aside() -> None:
    disk = SimulatedDisk()
    files = disk.files("central")
    files.replace("accountant.json", b"{not json")
    n = core(files)
    assert n.accountant.to_dict() == core(disk.files("elsewhere")).accountant.to_dict()
    assert files.read("accountant.json") is None
    assert files.read("accountant.json.bad") == b"{not json"
    assert "simulated disk" in files.where("accountant.json")
