"""Batches handled in turns: one slice per round of the loop, however many batches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from mockpool import turns


async def _handle(name: str, items: list[int], seen: list[str]) -> None:
    async for part in turns.in_turns(items, size=2):
        seen.append(f"{name}{','.join(map(str, part))}")


async def _per_round(seen: list[str], work: Awaitable[object]) -> list[int]:
    """How many items ``work`` added to ``seen`` between the runs of a probe that runs
    once a round of the loop (as a due timer would)."""
    loop = asyncio.get_running_loop()
    per_round: list[int] = []
    done = False

    def probe(before: int) -> None:
        per_round.append(len(seen) - before)
        if not done:
            loop.call_soon(probe, len(seen))

    loop.call_soon(probe, 0)
    await work
    done = True
    await asyncio.sleep(0)
    return per_round


async def test_a_lone_batch_gives_the_loop_a_turn_between_slices() -> None:
    seen: list[str] = []

    async def other() -> None:
        seen.append("other")

    task = asyncio.ensure_future(other())
    await _handle("", list(range(5)), seen)
    await task
    assert seen == ["0,1", "other", "2,3", "4"]


async def test_batches_in_flight_together_take_one_turn_per_round_in_order() -> None:
    # A probe that runs once a round (as a due timer would) sees at most one slice
    # handled since its last run: 5 batches of 4 slices take 20 rounds, not 4.
    seen: list[str] = []
    work = asyncio.gather(*(_handle(name, list(range(8)), seen) for name in "abcde"))
    per_round = await _per_round(seen, work)
    assert len(seen) == 20 and max(per_round) == 1
    # turns go in the order they were asked for: the first batch ran its first slice
    # at once and asked first; then round robin
    assert seen[:8] == ["a0,1", "a2,3", "b0,1", "c0,1", "d0,1", "e0,1", "a4,5", "b2,3"]
    for name in "abcde":
        assert [s for s in seen if s[0] == name] == [
            f"{name}0,1",
            f"{name}2,3",
            f"{name}4,5",
            f"{name}6,7",
        ]


async def test_pieces_of_work_that_arrive_together_run_a_round_apart() -> None:
    # three submits in one round: a probe that runs once a round (as a due timer would)
    # sees one of them handled between its runs; a batch arriving among them waits its
    # turn behind those that asked before it (its first slice too)
    seen: list[str] = []

    async def piece(name: str) -> None:
        await turns.own_turn()
        seen.append(name)

    work = asyncio.gather(piece("x"), piece("y"), _handle("a", list(range(4)), seen), piece("z"))
    assert max(await _per_round(seen, work)) == 1
    assert seen == ["x", "y", "a0,1", "z", "a2,3"]


async def test_a_cancelled_batch_passes_its_turn_on() -> None:
    seen: list[str] = []
    first = asyncio.ensure_future(_handle("a", list(range(6)), seen))
    second = asyncio.ensure_future(_handle("b", list(range(6)), seen))
    third = asyncio.ensure_future(_handle("c", list(range(6)), seen))
    while not any(s.startswith("b") for s in seen):
        await asyncio.sleep(0)
    second.cancel()
    await asyncio.gather(first, third)
    assert [s for s in seen if s[0] == "a"] == ["a0,1", "a2,3", "a4,5"]
    assert [s for s in seen if s[0] == "c"] == ["c0,1", "c2,3", "c4,5"]
    assert second.cancelled()
