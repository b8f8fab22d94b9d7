"""The schedds one actor hosts, as one core (the contract's ``Core``) for the live pump.

HTCondor runs one schedd per process; an actor of ours may host several, and they share
one timer loop as the daemons of one process would. What that sharing decides lives
here, so the shell (``service.py``) stays a codec on the generic pump:

- which schedds are due, each ticked alone: one whose timers raise is tried again
  :data:`RETRY_AFTER` pool seconds later, and the others run on;
- one Advertise for all: when one schedd's ad round starts, the others' rounds that may
  start join it (as one timer did), and the collector's answer is split per schedd;
- the answers routed back: each message a schedd sends goes out wrapped as
  :class:`FromSchedd` (the schedd that sent it); its answer comes back as
  :class:`ToSchedd` and reaches that schedd only if it is still running (one restarted
  under the same name is another driver, and counts its correlation ids from 1 again);
- a schedd that came back inside a running actor keeps its keepalives on the actor's
  round.

The virtual kernel runs each schedd as a core of its own (no shared loop): the joint
round is a live process's habit, not an HTCondor rule the kernel must show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..contract import Peer, Ready, Send, Undeliverable
from ..messages import REPLIES, CollectorAdvertise
from .driver import ScheddDriver
from .keepalive import MIN_ALIVE_EVERY

__all__ = [
    "RETRY_AFTER",
    "FromSchedd",
    "JointAdvertise",
    "JointAnswer",
    "Outputs",
    "ScheddHost",
    "ToSchedd",
]

# pool seconds before a schedd whose timers raised is ticked again (as the loops slept)
RETRY_AFTER = 10.0

_REPLY_TYPES = (*REPLIES, Undeliverable)


@dataclass(frozen=True, slots=True)
class FromSchedd:
    """A message one schedd of the actor sends (``schedd``: the driver that sent it)."""

    schedd: ScheddDriver
    msg: Any


@dataclass(frozen=True, slots=True)
class ToSchedd:
    """The answer to a :class:`FromSchedd` (a reply record or an ``Undeliverable``)."""

    schedd: ScheddDriver
    answer: Any


@dataclass(frozen=True, slots=True)
class JointAdvertise:
    """The actor's schedds' ads in one Advertise: each part a ``CollectorAdvertise``, in
    the order the schedds were named."""

    parts: list[FromSchedd] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class JointAnswer:
    """The collector's answer to a :class:`JointAdvertise`, one per part."""

    answers: list[ToSchedd] = field(default_factory=list)


@dataclass(slots=True)
class Outputs:
    """What a schedd left for its shell besides the ``Ready``: log lines and the text
    of the job event logs to append (per file, and the first job that wrote there)."""

    driver: ScheddDriver
    notes: list[tuple[int, str]]
    user_logs: dict[str, str]
    log_jobs: dict[str, str]


class ScheddHost:
    """The schedds of one actor, by lower-case name, as one core."""

    def __init__(self) -> None:
        self.drivers: dict[str, ScheddDriver] = {}
        self._failed: dict[str, float] = {}  # a schedd whose tick raised: when to try again
        self._touched: dict[str, ScheddDriver] = {}  # since the last take_outputs
        self.failures: list[tuple[str, BaseException]] = []  # ticks that raised, for the log

    # --- the schedds ------------------------------------------------------------------

    def add(self, driver: ScheddDriver) -> None:
        key = driver.name.lower()
        self.drivers[key] = driver
        self._failed.pop(key, None)

    def remove(self, name: str) -> ScheddDriver:
        """Schedd ``name`` gone (crashed): nothing it sent is answered to it again."""
        key = name.lower()
        self._failed.pop(key, None)
        self._touched.pop(key, None)
        return self.drivers.pop(key)

    def running(self, driver: ScheddDriver) -> bool:
        """Whether ``driver`` is still the schedd of its name (not crashed meanwhile)."""
        return self.drivers.get(driver.name.lower()) is driver

    def start(self, now: float) -> Ready:
        """What every schedd sends at once."""
        ready = Ready()
        for driver in self.drivers.values():
            ready.extend(self.wrap(driver, driver.start(now)))
        return ready

    def restart(self, driver: ScheddDriver, now: float) -> Ready:
        """A schedd back inside a running actor (``add``-ed again): its first keepalives
        go with the actor's next round (one loop looked at all its schedds' claims: at
        the latest MIN_ALIVE_EVERY after a change)."""
        looks = [now + MIN_ALIVE_EVERY]
        looks += [
            t
            for d in self.drivers.values()
            if d is not driver and (t := d.keepalive_look) is not None
        ]
        return self.wrap(driver, driver.start(now, keepalive_at=min(looks)))

    # --- the contract -----------------------------------------------------------------

    def next_wakeup(self) -> float | None:
        """The earliest of the schedds' wake-ups."""
        return min(
            (t for key, d in self.drivers.items() if (t := self._due(key, d)) is not None),
            default=None,
        )

    def _due(self, key: str, driver: ScheddDriver) -> float | None:
        """When ``driver`` wants a tick; not before a retry after its ticking failed."""
        due = driver.next_wakeup()
        retry = self._failed.get(key)
        if retry is None or due is None:
            return due
        if due >= retry:
            del self._failed[key]
        return max(due, retry)

    def tick(self, now: float) -> Ready:
        """The schedds due at ``now``, ticked; their ad rounds joined into one Advertise
        with the rounds of the others that may start one now."""
        readies: list[tuple[ScheddDriver, Ready]] = []
        for key, driver in list(self.drivers.items()):
            due = self._due(key, driver)
            if due is None or due > now:
                continue
            try:
                readies.append((driver, driver.tick(now)))
            except Exception as exc:  # a bug: reported, that schedd tried again later
                self.failures.append((driver.name, exc))
                self._failed[key] = now + RETRY_AFTER
        if any(_advertises(r) for _, r in readies):
            started = {id(d) for d, r in readies if _advertises(r)}
            for driver in self.drivers.values():
                if id(driver) not in started and driver.can_join_ad_round():
                    joined = Ready()
                    driver.ad_round(now, joined)
                    readies.append((driver, joined))
        ready = Ready()
        for driver, r in readies:
            ready.extend(self.wrap(driver, r))
        return _joined(ready, list(self.drivers.values()))

    def deliver(self, msg: Any, sender: Peer, now: float) -> Ready:
        """An answer to what a schedd sent (to that incarnation only), or a caller's
        request to the schedd it names."""
        if isinstance(msg, ToSchedd):
            return self._answer(msg, sender, now)
        if isinstance(msg, JointAnswer):
            ready = Ready()
            for answer in msg.answers:
                ready.extend(self._answer(answer, sender, now))
            return ready
        name = str(getattr(msg, "schedd_name", ""))
        driver = self.drivers.get(name.lower())
        if driver is None:
            refusal = Undeliverable(msg, "UNAVAILABLE", f"schedd {name} is not running")
            return Ready(sends=[Send(sender.address, refusal)])
        return self.wrap(driver, driver.deliver(msg, sender, now))

    def _answer(self, answer: ToSchedd, sender: Peer, now: float) -> Ready:
        driver = answer.schedd
        if not self.running(driver):
            return Ready()  # its schedd crashed since: the answer is lost with it
        return self.wrap(driver, driver.deliver(answer.answer, sender, now))

    # --- what goes out ----------------------------------------------------------------

    def wrap(self, driver: ScheddDriver, ready: Ready) -> Ready:
        """``driver``'s ``Ready`` as the actor's: its messages wrapped with who sent them
        (a caller's reply as it is), its ads as an Advertise of their own; nothing sent
        by a schedd that crashed meanwhile."""
        if not self.running(driver):
            return Ready(events=ready.events)
        self._touched[driver.name.lower()] = driver
        out = Ready(events=ready.events)
        for send in ready.sends:
            msg = send.msg
            if isinstance(msg, _REPLY_TYPES):
                out.sends.append(send)
            elif isinstance(msg, CollectorAdvertise):
                out.send(send.address, JointAdvertise([FromSchedd(driver, msg)]))
            else:
                out.send(send.address, FromSchedd(driver, msg))
        return out

    def failed(self, msg: Any, code: str, detail: str) -> Any:
        """The answer to ``msg`` (what :meth:`wrap` sent) when it could not be sent."""
        if isinstance(msg, FromSchedd):
            return ToSchedd(msg.schedd, Undeliverable(msg.msg, code, detail))
        if isinstance(msg, JointAdvertise):
            return JointAnswer(
                [ToSchedd(p.schedd, Undeliverable(p.msg, code, detail)) for p in msg.parts]
            )
        return Undeliverable(msg, code, detail)

    def take_outputs(self) -> list[Outputs]:
        """The log lines and job event logs of the schedds that ran since the last call."""
        out = []
        for driver in self._touched.values():
            texts, jobs = driver.take_user_logs()
            if driver.notes or texts:
                out.append(Outputs(driver, list(driver.notes), texts, jobs))
                driver.notes.clear()
        self._touched.clear()
        return out


def _advertises(ready: Ready) -> bool:
    return any(isinstance(s.msg, CollectorAdvertise) for s in ready.sends)


def _joined(ready: Ready, order: list[ScheddDriver]) -> Ready:
    """``ready`` with its Advertises joined into one (at the first one's place), the
    schedds' parts in the order the schedds were named."""
    joint = [s for s in ready.sends if isinstance(s.msg, JointAdvertise)]
    if len(joint) < 2:
        return ready
    parts = sorted((p for s in joint for p in s.msg.parts), key=lambda p: order.index(p.schedd))
    first = ready.sends.index(joint[0])
    rest = [s for s in ready.sends if not isinstance(s.msg, JointAdvertise)]
    rest.insert(first, Send(joint[0].address, JointAdvertise(parts)))
    return Ready(sends=rest, events=ready.events)
