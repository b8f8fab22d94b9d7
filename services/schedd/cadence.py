"""When a schedd sends its ads to the collector, and when it asks for a negotiation cycle.

HTCondor's schedd does both in one timer (``Scheduler::timeout``, paced by a
``Timeslice``): it counts its jobs, sends the Scheduler and Submitter ads, and only then,
if a reschedule is wanted, sends RESCHEDULE to the negotiator, so that the cycle it asks
for sees the submitters it just advertised. The timer runs

- at start (initial interval 0);
- every SCHEDD_INTERVAL (default 300) after the last run started;
- sooner when a reschedule is needed (``needReschedule``), but never sooner than
  SCHEDD_MIN_INTERVAL (default 5) after the last run started.

A reschedule is needed after a submit (condor_submit asks for one unless
SUBMIT_SEND_RESCHEDULE is false; the schedd itself asks when the submit brings idle jobs
and its last Submitter ads showed none: ``endSubmitTransaction``) and after a release of
held jobs. A run whose Submitter ads start the pressure (idle jobs where the last
showed none) ends with a reschedule; one whose ads end it calls a pending one off. With
SCHEDD_SEND_RESCHEDULE = false no RESCHEDULE is sent (the cycle comes at the
negotiator's own pace); the ads still go.

mockpool also sends the ads SCHEDD_MIN_INTERVAL after any other change of its queue (a
job starting, ending, being held), where HTCondor waits for the next SCHEDD_INTERVAL:
tools reading the collector see counts at most that old. A run at a Timeslice's pace
also leaves a fraction of time for the run itself (SCHEDD_INTERVAL_TIMESLICE); a mock
run takes no pool time, so that bound never applies.
"""

from __future__ import annotations

import math

from ..config import ConfigDict

__all__ = ["AdCadence", "AdCadenceError"]


class AdCadenceError(ValueError):
    """An interval that is not a number of seconds >= 0; ``knob`` names it."""

    def __init__(self, knob: str, value: float) -> None:
        super().__init__(f"{knob} must be a number >= 0, got {value!r}")
        self.knob = knob


class AdCadence:
    """The schedd's ads-and-reschedule timer, as a pure object.

    Use: sleep until ``due()``; then ``start(now)``, send the ads (``submitters_sent``
    with their idle jobs), and ``finish()`` says whether RESCHEDULE follows. Between runs:
    ``changed(now)`` after a change of the queue, ``submitted`` after a submit,
    ``expedite(now)`` when a reschedule is needed."""

    def __init__(
        self,
        interval: float,
        min_interval: float,
        now: float,
        *,
        send_reschedule: bool = True,
        submit_reschedules: bool = True,
    ) -> None:
        for name, v in (("SCHEDD_INTERVAL", interval), ("SCHEDD_MIN_INTERVAL", min_interval)):
            if not (math.isfinite(v) and v >= 0):
                raise AdCadenceError(name, v)
        self.interval = float(interval)
        self.min_interval = float(min_interval)
        self.send_reschedule = send_reschedule
        self.submit_reschedules = submit_reschedules
        # idle jobs in the Submitter ads of the run that last started or ended the
        # pressure (HTCondor's LastSubmitterPressure)
        self.pressure = 0
        self.last_start: float | None = None
        self._soon = float(now)  # the first run: at once
        self._reschedule = False  # asked for since the last run started
        self._this_run = False  # the run under way ends with a reschedule

    @classmethod
    def from_config(cls, config: ConfigDict, now: float) -> AdCadence:
        return cls(
            config.get_int("SCHEDD_INTERVAL"),
            config.get_int("SCHEDD_MIN_INTERVAL"),
            now,
            send_reschedule=config.get_bool("SCHEDD_SEND_RESCHEDULE"),
            submit_reschedules=config.get_bool("SUBMIT_SEND_RESCHEDULE"),
        )

    @property
    def reschedule_pending(self) -> bool:
        return self._reschedule

    def due(self) -> float:
        """The pool time of the next run."""
        regular = math.inf if self.last_start is None else self.last_start + self.interval
        return min(regular, self._soon)

    def changed(self, now: float) -> None:
        """The queue changed: its ads go SCHEDD_MIN_INTERVAL from the first change."""
        self._soon = min(self._soon, now + self.min_interval)

    def expedite(self, now: float) -> None:
        """A reschedule is needed: run as soon as the minimum interval allows."""
        self._reschedule = True
        soonest = now if self.last_start is None else max(now, self.last_start + self.min_interval)
        self._soon = min(self._soon, soonest)

    def submitted(self, now: float, idle: int) -> None:
        """Jobs were queued, ``idle`` of them idle."""
        if self.submit_reschedules or (idle > 0 and self.pressure == 0):
            self.expedite(now)

    def start(self, now: float) -> None:
        """A run starts at ``now``: what asks for a reschedule from here on asks the next."""
        self.last_start = float(now)
        self._soon = math.inf
        self._this_run, self._reschedule = self._reschedule, False

    def submitters_sent(self, idle: int) -> None:
        """The run sent Submitter ads with ``idle`` idle jobs in all."""
        if (self.pressure > 0) != (idle > 0):
            self.pressure = idle
            self._this_run = idle > 0

    def finish(self) -> bool:
        """The run's ads are out: whether RESCHEDULE follows them."""
        asked, self._this_run = self._this_run, False
        return asked and self.send_reschedule
