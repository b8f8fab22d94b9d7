"""ReplyCache.once: a batch applied in turns is applied once per request id, whoever
retries it and whenever."""

from __future__ import annotations

import asyncio

import pytest

from mockpool.daemon import ReplyCache


class Batch:
    """A batch that takes its turns until ``release`` is set; counts its runs."""

    def __init__(self, reply: str = "done", fail: bool = False) -> None:
        self.release = asyncio.Event()
        self.runs = 0
        self.finished = 0
        self.reply = reply
        self.fail = fail

    async def __call__(self) -> str:
        self.runs += 1
        await self.release.wait()
        if self.fail:
            raise RuntimeError("the batch failed")
        self.finished += 1
        return f"{self.reply} {self.runs}"


async def test_a_retry_landing_mid_batch_waits_for_the_first_reply() -> None:
    cache, batch = ReplyCache(8), Batch()
    first = asyncio.ensure_future(cache.once("r1", batch))
    await asyncio.sleep(0)
    retry = asyncio.ensure_future(cache.once("r1", batch))
    await asyncio.sleep(0)
    assert not first.done() and not retry.done()
    batch.release.set()
    assert await first == await retry == "done 1"
    assert batch.runs == 1
    # and a later retry is answered from the cache
    assert await cache.once("r1", batch) == "done 1"
    assert batch.runs == 1


async def test_a_cancelled_caller_leaves_the_batch_to_finish() -> None:
    cache, batch = ReplyCache(8), Batch()
    caller = asyncio.ensure_future(cache.once("r1", batch))
    await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert batch.runs == 1 and batch.finished == 0
    batch.release.set()
    # the retry gets the reply of the run that went on without its caller
    assert await cache.once("r1", batch) == "done 1"
    assert (batch.runs, batch.finished) == (1, 1)


async def test_a_failed_batch_is_not_remembered() -> None:
    cache, batch = ReplyCache(8), Batch(fail=True)
    batch.release.set()
    with pytest.raises(RuntimeError, match="the batch failed"):
        await cache.once("r1", batch)
    batch.fail = False
    assert await cache.once("r1", batch) == "done 2"


async def test_requests_without_an_id_are_each_applied() -> None:
    cache, batch = ReplyCache(8), Batch()
    batch.release.set()
    assert await cache.once("", batch) == "done 1"
    assert await cache.once("", batch) == "done 2"


async def test_other_request_ids_do_not_wait() -> None:
    cache, slow, quick = ReplyCache(8), Batch("slow"), Batch("quick")
    first = asyncio.ensure_future(cache.once("r1", slow))
    await asyncio.sleep(0)
    quick.release.set()
    assert await cache.once("r2", quick) == "quick 1"
    assert not first.done()
    slow.release.set()
    assert await first == "slow 1"
