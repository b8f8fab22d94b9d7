"""What the schedd shows: queries of its queue and history (constraint, projection,
limit), its Scheduler ad, its Submitter ads, and its status.

A mixin of :class:`.schedd.Schedd`; read-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..classad import Budget, ClassAd, ClassAdSyntaxError
from ..classad.numbers import INT64_MAX
from ..condor_version import CONDOR_PLATFORM, CONDOR_VERSION
from ..jobstates import HELD, IDLE, REMOVED, RUNNING

if TYPE_CHECKING:
    from .schedd import Schedd


class ScheddViews:
    """Queries, history and the schedd's ads (mixed into ``Schedd``)."""

    # --- queries ------------------------------------------------------------------------

    def _projection(self: Schedd, ad: ClassAd, projection: Sequence[str]) -> ClassAd:
        if not projection:
            return ad
        out = ClassAd()
        for name in projection:
            expr = ad.lookup(name)
            if expr is not None:
                out[name] = expr
        return out

    def query(
        self: Schedd,
        constraint: str = "",
        projection: Sequence[str] = (),
        limit: int = 0,
        *,
        now: float = 0.0,
    ) -> list[ClassAd]:
        """Job ads in the queue matching ``constraint``, by cluster and proc (not copies
        when unprojected: do not change them)."""
        expr = self._constraint(constraint)
        out = []
        budget = Budget()
        for job in sorted(self.jobs.values(), key=lambda j: j.key):
            try:
                ad = job.ad
            except ClassAdSyntaxError as exc:  # defensive: records are checked at load
                self._skip_record(job.job_id, "queue", str(exc))
                continue
            if self._true(expr, ad, self.ad_epoch + now, budget):
                out.append(self._projection(ad, projection))
                if limit and len(out) >= limit:
                    break
        return out

    def history(
        self: Schedd,
        constraint: str = "",
        projection: Sequence[str] = (),
        limit: int = 0,
        *,
        now: float = 0.0,
        since: str = "",
    ) -> list[ClassAd]:
        """Jobs that left the queue, newest first; ``since``: a constraint that ends the
        scan at the first job (newest first) it selects, that job left out (condor_history
        -since)."""
        expr = self._constraint(constraint)
        stop = self._constraint(since)
        out = []
        budget = Budget()
        for cluster, proc, texts in self.queue.history():
            ad = "unreadable row" if texts is None else self._stored_ad(texts)
            if isinstance(ad, str):
                self._skip_record(f"{cluster}.{proc}", "history", ad)
                continue
            if stop is not None and self._true(stop, ad, self.ad_epoch + now, budget):
                break
            if self._true(expr, ad, self.ad_epoch + now, budget):
                out.append(self._projection(ad, projection))
                if limit and len(out) >= limit:
                    break
        return out

    # --- ads ----------------------------------------------------------------------------

    def _date(self: Schedd, t: float) -> int:
        """The ads' date (a Unix time) of pool time ``t``."""
        return self.ad_epoch + int(t)

    def totals(self: Schedd) -> dict[int, int]:
        """Jobs in the queue per JobStatus."""
        out = dict.fromkeys((IDLE, RUNNING, REMOVED, HELD), 0)
        for (_, status), n in self._counts.items():
            out[status] = out.get(status, 0) + n
        return out

    def schedd_ad(self: Schedd, now: float, duty_cycle: float = 0.0) -> ClassAd:
        """The Scheduler ad, with HTCondor's attribute names (``duty_cycle``: the loop's
        RecentDaemonCoreDutyCycle, which the shell measures)."""
        t = self.totals()
        submitters = {s for (s, st), n in self._counts.items() if n > 0 and st != REMOVED}
        ad = ClassAd()
        ad["MyType"] = "Scheduler"
        ad["Name"] = self.name
        ad["Machine"] = self.machine
        ad["CondorVersion"] = CONDOR_VERSION
        ad["CondorPlatform"] = CONDOR_PLATFORM
        ad["MyAddress"] = self.address
        ad["ScheddIpAddr"] = self.address
        ad["TotalIdleJobs"] = t[IDLE]
        ad["TotalRunningJobs"] = t[RUNNING]
        ad["TotalHeldJobs"] = t[HELD]
        ad["TotalRemovedJobs"] = t[REMOVED]
        ad["TotalJobAds"] = len(self.jobs)
        ad["TotalFlockedJobs"] = 0
        ad["ShadowsRunning"] = t[RUNNING]
        ad["NumUsers"] = len(submitters)
        ad["MaxJobsRunning"] = self.max_jobs_running
        ad["Autoclusters"] = len(self._idle.groups())
        ad["DaemonStartTime"] = self._date(self.started)
        ad["JobQueueBirthdate"] = self._date(self.queue.birth)
        ad["MyCurrentTime"] = self._date(now)
        ad["RecentDaemonCoreDutyCycle"] = float(duty_cycle)
        return ad

    def submitter_ads(self: Schedd, now: float) -> list[ClassAd]:
        """One Submitter ad per submitter with idle, running or held jobs."""
        names = sorted({s for (s, st), n in self._counts.items() if n > 0 and st != REMOVED})
        out = []
        for name in names:
            ad = ClassAd()
            ad["MyType"] = "Submitter"
            ad["Name"] = name
            ad["ScheddName"] = self.name
            ad["Machine"] = self.machine
            ad["MyAddress"] = self.address
            ad["ScheddIpAddr"] = self.address
            ad["IdleJobs"] = self._counts[(name, IDLE)]
            ad["RunningJobs"] = self._counts[(name, RUNNING)]
            ad["HeldJobs"] = self._counts[(name, HELD)]
            ad["FlockedJobs"] = 0
            ad["WeightedIdleJobs"] = _num(self._weights[(name, IDLE)])
            ad["WeightedRunningJobs"] = _num(self._weights[(name, RUNNING)])
            ad["MyCurrentTime"] = self._date(now)
            out.append(ad)
        return out

    def submitter_updates(self: Schedd, now: float) -> tuple[list[ClassAd], list[ClassAd]]:
        """What to send the collector about submitters: their ads, and the keys of ads
        it holds for submitters left without jobs, to invalidate (HTCondor's schedd
        invalidates a submitter's ad once its last job has left). Until
        :meth:`submitters_advertised` says they arrived, the same invalidations come
        again."""
        ads = self.submitter_ads(now)
        at, rng = self.ad_epoch + now, self.eval_rng
        names = {str(ad.get_value("Name", now=at, rng=rng)) for ad in ads}
        gone = [
            ClassAd({"MyType": "Submitter", "Name": name, "ScheddName": self.name})
            for name in sorted(self._submitters_advertised - names)
        ]
        self._submitters_offered = names
        if ads:
            self.ad_cadence.submitters_sent(sum(self._counts[(n, IDLE)] for n in names))
        return ads, gone

    def submitters_advertised(self: Schedd) -> None:
        """The collector has the updates of the last :meth:`submitter_updates`."""
        self._submitters_advertised = self._submitters_offered

    def status(self: Schedd) -> dict[str, Any]:
        t = self.totals()
        return {
            "idle": t[IDLE],
            "running": t[RUNNING],
            "held": t[HELD],
            "removed": t[REMOVED],
            "jobs": len(self.jobs),
            "claims": len(self.claims),
            "reserved": self._reserved,
            "by_status": dict(t),  # in the queue, per JobStatus
            "left_queue": dict(self.left_queue),  # since this core started, per JobStatus
        }


def _num(x: float) -> int | float:
    # an integer only when it fits the wire's 64 bits: a sum of RequestCpus may not
    return int(x) if float(x).is_integer() and abs(x) <= INT64_MAX else float(x)
