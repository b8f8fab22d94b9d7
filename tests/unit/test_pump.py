"""The generic pump (``pump.py``) over a core of a few lines, on a ManualClock: it ticks
the core when the core asks, sends what the core sends and delivers each answer (or a
failure) back, answers a caller's request, runs work the core hands out off the loop,
and survives a core that raises."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from builders.waiting import until

from mockpool.clock import ManualClock
from mockpool.config import parse_config
from mockpool.contract import Peer, Ready, Send, Undeliverable
from mockpool.daemon import DaemonContext, EventLog
from mockpool.messages import RescheduleAck
from mockpool.principals import Principal, Role
from mockpool.pump import Pump


@dataclass
class Ask:  # a message the core sends
    corr: str


@dataclass
class Told:  # its answer
    corr: str


@dataclass
class Hello:  # a caller's request; the core replies (a reply type of messages.py) and
    corr: str  # sends an Ask


class Core:
    """Ticks every 10 pool seconds (sending an Ask each time); remembers what it is
    delivered; hands out one piece of work when told to."""

    def __init__(self) -> None:
        self.due: float | None = 10.0
        self.ticks: list[float] = []
        self.delivered: list[tuple[Any, str, float]] = []
        self.work: Any = None
        self.results: list[Any] = []
        self.raise_on_tick = False

    def next_wakeup(self) -> float | None:
        return self.due

    def tick(self, now: float) -> Ready:
        if self.raise_on_tick:
            self.raise_on_tick = False
            raise RuntimeError("a bug")
        self.ticks.append(now)
        self.due = now + 10.0
        ready = Ready(events=[("core", "ticked", {"at": now})])
        ready.send("peer:1", Ask(f"t{len(self.ticks)}"))
        return ready

    def deliver(self, msg: Any, sender: Peer, now: float) -> Ready:
        self.delivered.append((msg, sender.address, now))
        ready = Ready()
        if isinstance(msg, Hello):
            ready.send(sender.address, RescheduleAck(msg.corr, now))  # the reply
            ready.send("peer:2", Ask("from-hello"))  # and something to send
        return ready

    def pending(self) -> Any:
        work, self.work = self.work, None
        return work

    def done(self, result: Any, now: float) -> Ready:
        self.results.append((result, now))
        return Ready(events=[("core", "worked", {"result": repr(result)})])


@dataclass
class Running:
    core: Core
    pump: Pump
    clock: ManualClock
    ctx: DaemonContext
    sent: list[Send]
    errors: list[str]


@pytest.fixture
async def r(tmp_path: Path) -> AsyncIterator[Running]:
    clock = ManualClock(0.0)
    ctx = DaemonContext(
        clock=clock,
        config=parse_config("", "test"),
        secret="s",
        collector_address="",
        events=EventLog(clock),
        state_dir=tmp_path,
    )
    core = Core()
    sent: list[Send] = []
    errors: list[str] = []

    async def ask(send: Send) -> Any:
        sent.append(send)
        if send.address == "peer:down":
            raise ConnectionError("peer:down is not answering")
        return None if send.msg.corr == "from-hello" else Told(send.msg.corr)

    pump = Pump(
        core,  # type: ignore[arg-type]
        ctx,
        {Ask: ask},
        name="test core",
        retry_after=5.0,
        offload=(core.pending, core.done),
        on_error=lambda: errors.append("error"),
    )
    pump.start(Ready())
    yield Running(core, pump, clock, ctx, sent, errors)
    await pump.stop()


def kinds(r: Running) -> list[str]:
    return [e["kind"] for e in r.ctx.events.drain()]


async def test_it_ticks_when_the_core_asks_and_delivers_each_answer_back(r: Running) -> None:
    await r.clock.advance(9.0)
    assert r.core.ticks == []  # not before the core's wake-up
    await r.clock.advance(1.0)
    await until(lambda: r.core.delivered)
    assert r.core.ticks == [10.0]
    assert [s.msg for s in r.sent] == [Ask("t1")]
    assert r.core.delivered == [(Told("t1"), "peer:1", 10.0)]
    assert kinds(r) == ["ticked"]
    await r.clock.advance(10.0)
    await until(lambda: len(r.core.delivered) == 2)
    assert r.core.ticks == [10.0, 20.0]


async def test_a_failed_call_comes_back_as_an_undeliverable(r: Running) -> None:
    r.pump.act(Ready(sends=[Send("peer:down", Ask("x"))]))
    await until(lambda: r.core.delivered)
    ((msg, address, _),) = r.core.delivered
    assert isinstance(msg, Undeliverable) and msg.msg == Ask("x") and address == "peer:down"
    assert msg.code == "UNAVAILABLE" and "not answering" in msg.detail


async def test_a_request_gets_its_reply_and_the_rest_is_sent(r: Running) -> None:
    reply = r.pump.request(Hello("h1"), Principal(Role.ADMIN), r.clock.now())
    assert reply == RescheduleAck("h1", 0.0)
    await until(lambda: r.sent)
    assert [(s.address, s.msg) for s in r.sent] == [("peer:2", Ask("from-hello"))]
    # a one-way message (its sender returns None): nothing comes back
    assert [m for m, _, _ in r.core.delivered] == [Hello("h1")]


async def test_work_the_core_hands_out_runs_off_the_loop_and_its_result_goes_back(
    r: Running,
) -> None:
    r.core.work = lambda: 6 * 7
    r.pump.act(Ready())
    await until(lambda: r.core.results)
    assert r.core.results == [(42, 0.0)]
    r.core.work = lambda: 1 / 0
    r.pump.act(Ready())
    await until(lambda: len(r.core.results) == 2)
    assert isinstance(r.core.results[1][0], ZeroDivisionError)  # the core decides


async def test_a_tick_that_raises_is_retried_after_a_while(r: Running) -> None:
    r.core.raise_on_tick = True
    await r.clock.advance(10.0)
    await until(lambda: r.errors)
    assert r.core.ticks == []
    await r.clock.advance(4.0)
    assert r.core.ticks == []  # the retry waits retry_after (5 s)
    await r.clock.advance(1.0)
    await until(lambda: r.core.ticks)
    assert r.core.ticks == [15.0]


async def test_a_delivery_that_moves_the_wake_up_earlier_wakes_the_loop(r: Running) -> None:
    r.core.due = 100.0
    r.pump.act(Ready())  # the loop sleeps until 100
    await r.clock.advance(1.0)
    r.core.due = 3.0
    r.pump.act(Ready())  # rings: the loop looks again
    await r.clock.advance(2.0)
    await until(lambda: r.core.ticks)
    assert r.core.ticks == [3.0]
