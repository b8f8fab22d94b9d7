"""Big batches handled in turns, one turn per event-loop round across the whole loop.

A daemon that receives 10,000 matches or claims at once must still wake its timers on
time. Handling a batch in slices with ``await asyncio.sleep(0)`` between them is not
enough when several batches are in hand at once (a schedd applying four startds' claim
replies, a collector decoding every startd actor's updates): each slice goes back on the
ready queue, asyncio runs every ready callback of a round before it looks at its timers,
so a timer waits for one slice of *every* batch, and the loop's lag grows with how many
batches are in flight.

Here the batches of one loop queue for their turns instead: a pump wakes one waiting
slice per round of the loop, so a round runs at most one slice (plus whatever else is
ready), and a timer waits for one slice whatever the number of batches. Turns go in the
order they were asked for; a slice waits only while another batch holds the loop, so a
lone batch runs as before. Nothing is held across the caller's own awaits: a waiting
batch holds no lock, and a cancelled one passes its turn on.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any

__all__ = ["ADS_PER_TURN", "YIELD_EVERY", "in_turns", "others_waiting", "own_turn"]

# Items of one batch handled in a turn: a turn should take a few milliseconds.
YIELD_EVERY = 256
# Items that each cost an ad built, encoded or decoded (matches, claims, activations,
# exits: a quarter to half a millisecond each, the queue written besides): fewer a turn,
# so that a turn stays near 10 ms (under 1 pool second at time scale 60).
ADS_PER_TURN = 32


class _Turns:
    """The slices waiting for a turn on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.waiting: deque[asyncio.Future[None]] = deque()
        self._pumping = False

    async def take(self) -> None:
        fut: asyncio.Future[None] = self._loop.create_future()
        self.waiting.append(fut)
        if not self._pumping:
            self._pumping = True
            self._loop.call_soon(self._pump)
        await fut

    def _pump(self) -> None:
        # The woken slice runs next round; this pump runs again after it, in that round.
        while self.waiting:
            fut = self.waiting.popleft()
            if not fut.done():  # a cancelled waiter passes its turn on
                fut.set_result(None)
                break
        if self.waiting:
            self._loop.call_soon(self._pump)
        else:
            self._pumping = False


_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = weakref.WeakKeyDictionary()


def _turns() -> _Turns:
    loop = asyncio.get_running_loop()
    turns = _TURNS.get(loop)
    if turns is None:
        turns = _TURNS[loop] = _Turns(loop)
    return turns


async def in_turns(items: Sequence[Any], size: int = YIELD_EVERY) -> AsyncIterator[Sequence[Any]]:
    """``items`` in slices of ``size``, each in a turn of its own: the first at once
    unless other batches wait for theirs, the others after a round of the loop."""
    turns = _turns()
    for start in range(0, len(items), size):
        if start or turns.waiting:
            await turns.take()
        yield items[start : start + size]


def others_waiting() -> bool:
    """Whether batches of this loop wait for their turns (a new batch then waits for
    its first one, as :func:`in_turns` does)."""
    return bool(_turns().waiting)


async def own_turn() -> None:
    """Wait for a round of the loop of one's own before one big piece of work that
    cannot be sliced (a submit of thousands of jobs, one transaction): pieces that
    arrive together then run a round apart, with the loop's timers between them,
    instead of all in one round."""
    await _turns().take()
