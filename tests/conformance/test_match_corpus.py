"""500 realistic (job, slot) pairs (scripts/make_match_corpus.py): the match and the job's
Rank through our scalar evaluator and the kernel must equal classad2's symmetricMatch
and Rank evaluation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders.oracle import make_ads, require_oracle

from mockpool.classad import evaluate, matches
from mockpool.classad.kernel import SlotTable, match_vector

pytestmark = pytest.mark.oracle
require_oracle()

_DIR = Path(__file__).parent / "match_corpus"


def _specs(name: str) -> list[dict[str, str]]:
    specs = []
    for block in (_DIR / name).read_text().split("\n\n"):
        spec = {}
        for line in block.strip().splitlines():
            attr, _, text = line.partition(" = ")
            spec[attr] = text
        specs.append(spec)
    return specs


JOBS = _specs("jobs.ads")
SLOTS = _specs("slots.ads")


def _number(v) -> float:
    return float(v) if type(v) in (bool, int, float) else 0.0


def test_corpus_is_500_pairs() -> None:
    assert len(JOBS) * len(SLOTS) == 500


def test_corpus_is_what_the_script_writes(tmp_path) -> None:
    import runpy

    runpy.run_path(str(_DIR.parents[2] / "scripts" / "make_match_corpus.py"))["write"](tmp_path)
    for name in ("jobs.ads", "slots.ads"):
        assert (tmp_path / name).read_text() == (_DIR / name).read_text()


@pytest.mark.parametrize("j", range(len(JOBS)))
def test_match_and_rank_agree_with_classad2(j: int) -> None:
    job, job2 = make_ads(JOBS[j])
    pairs = [make_ads(s) for s in SLOTS]
    slots = [p[0] for p in pairs]
    result = match_vector(job, SlotTable.from_ads(slots))
    assert result.fallbacks >= 0
    for i, (slot, slot2) in enumerate(pairs):
        where = f"job {j} ({JOBS[j]['Requirements']}) slot {i} ({SLOTS[i]['START']})"
        oracle = bool(job2.symmetricMatch(slot2))
        assert matches(job, slot) == oracle, where
        assert bool(result.matches[i]) == oracle, where
        if "Rank" in JOBS[j]:
            want = _number(job2["Rank"].eval(job2, slot2))
            assert _number(evaluate(job.lookup("Rank"), job, slot)) == want, where
            assert float(result.rank[i]) == want, where
        else:
            assert float(result.rank[i]) == 0.0


def test_corpus_exercises_both_outcomes() -> None:
    # a corpus where nothing (or everything) matches would test little
    counts = np.zeros(2, dtype=int)
    for spec in JOBS:
        job, _ = make_ads(spec)
        counts += np.bincount(
            match_vector(job, [make_ads(s)[0] for s in SLOTS]).matches.astype(int), minlength=2
        )
    assert counts[0] > 100 and counts[1] > 50, counts
