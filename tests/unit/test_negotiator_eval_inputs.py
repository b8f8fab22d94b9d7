"""What time() and random() read in a negotiation cycle: the cycle's date and the
generator the negotiator passes, never the wall clock or the random module's own.

The pool's dates are set past the wall clock (``E``), so a read of the wall clock would
never reach them.
"""

from __future__ import annotations

import random

import pytest
from builders.cores import job_request, static_pool

from mockpool.classad import MissingEvalInput
from mockpool.config import parse_config
from mockpool.negotiator import Accountant, CycleAds, negotiate
from mockpool.negotiator.accountant import SubmitterRecord

E = 2_000_000_000  # the date of pool time 0 (2033): later than any wall clock of a test run
NO_RANKS = "NEGOTIATOR_PRE_JOB_RANK = 0\nNEGOTIATOR_POST_JOB_RANK = 0\n"


def _bobs_slot() -> CycleAds:
    """One slot, Claimed by bob at rank 0 (its own Rank 0: a job may take it on priority)."""
    pool = static_pool(0, claimed_by={"bob@mockpool": 1})
    pool.slots[0]["Rank"] = pool.slots[0]["CurrentRank"] = 0.0
    return pool


@pytest.mark.parametrize(("now", "preempts"), [(50.0, False), (150.0, True)])
def test_preemption_requirements_read_the_cycles_date(now: float, preempts: bool) -> None:
    # time() is E + now: E + 50 < E + 100 <= E + 150. alice (RUP 0.5) has the better
    # priority than bob (0.65), so only PREEMPTION_REQUIREMENTS decides.
    config = parse_config(NO_RANKS + f"PREEMPTION_REQUIREMENTS = time() >= {E + 100}\n", "t")
    rups = {"alice@mockpool": 0.5, "bob@mockpool": 0.65}
    res = negotiate(
        _bobs_slot(),
        [job_request("alice@mockpool", 1)],
        Accountant(records={k: SubmitterRecord(priority=p) for k, p in rups.items()}),
        config,
        now,
        ad_epoch=E,
        rng=random.Random(0),
    )
    assert [m.slot_name for m in res.matches] == (["slot1@exec00000"] if preempts else [])


def _matched(rng: random.Random | None) -> list[str]:
    # a job that takes a slot on a draw of random(2) (0 or 1): which of 40 slots match
    # follows the draws, one per slot
    res = negotiate(
        static_pool(40),
        [job_request("alice@mockpool", 40, requirements="random(2) == 1")],
        Accountant(),
        parse_config(NO_RANKS, "t"),
        0.0,
        rng=rng,
    )
    return sorted(m.slot_name for m in res.matches)


def test_a_cycles_draws_come_from_the_generator_it_is_given() -> None:
    first, again = _matched(random.Random(3)), _matched(random.Random(3))
    assert first == again and 0 < len(first) < 40
    assert _matched(random.Random(4)) != first
    with pytest.raises(MissingEvalInput, match="random"):
        _matched(None)
