"""The schedd core's entries for what HTCondor's queue management protocol (qmgmt) asks:
a cluster id handed out ahead of its jobs (NewCluster), jobs that arrive as ready-made
ClassAds (a cluster ad and proc ads, checked and completed by :mod:`.jobads`, then queued
as a description's jobs are: one transaction, submit events, user logs), and edits of
queued jobs' attributes (condor_qedit), all or none.

A mixin of :class:`.schedd.Schedd`, kept apart so the core's main module stays readable;
its methods use the core's own records and transaction.
"""

from __future__ import annotations

import errno
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..classad import Budget
from ..jobstates import IDLE
from .jobads import EditSpec, JobAdError, check_edit, ready_made
from .submit import SubmitError
from .submitter import submitter_of

if TYPE_CHECKING:
    from .records import Job
    from .schedd import Schedd

__all__ = ["ReadyMadeJobs"]

_JOB_ID = re.compile(r"(\d+)\.(\d+)\Z")
# attributes the job record caches (schedd.py's _DERIVED): an edit of one refiles the job
_HANDED_OUT_KEPT = 1000  # cluster ids handed out and not yet queued, remembered
_CACHED = frozenset({"jobprio", "requestcpus", "accountinggroup", "owner", "jobstatus"})


class ReadyMadeJobs:
    """Queueing ready-made job ads and editing queued jobs (mixed into ``Schedd``)."""

    def reserve_cluster(self: Schedd) -> int:
        """A cluster id for jobs that will arrive as ready-made ads (``submit_ads``)."""
        cluster = max(self.queue.next_cluster_id, self._reserved_cluster)
        self._reserved_cluster = cluster + 1
        self._handed_out[cluster] = None
        while len(self._handed_out) > _HANDED_OUT_KEPT:  # connections that never committed
            del self._handed_out[next(iter(self._handed_out))]
        return cluster

    def submit_ads(
        self: Schedd,
        cluster: int,
        cluster_ad: Mapping[str, str],
        proc_ads: Sequence[Mapping[str, str]],
        owner: str,
        now: float,
        *,
        request_id: str | None = None,
        log_refused: str | None = None,
    ) -> tuple[int, int]:
        """Queue jobs that arrive as ClassAds (a cluster ad and proc ads, attribute texts,
        as a qmgmt client sends them) under ``cluster``, an id from ``reserve_cluster``:
        the checks and defaults of :mod:`.jobads`, then what ``submit`` does with a
        description's jobs (one transaction, submit events, user logs). JobAdError or
        SubmitError say what is refused; nothing is stored then."""
        if request_id:
            prior = self.queue.lookup_request(request_id)
            if prior is not None:
                return prior
        if cluster not in self._handed_out:
            raise JobAdError(
                errno.EINVAL, f"cluster {cluster} was not handed out by NewCluster (or is queued)"
            )
        limit = self.config.get_int("MAX_JOBS_PER_SUBMISSION")
        if len(proc_ads) > limit:
            raise JobAdError(
                errno.EINVAL,
                f"MAX_JOBS_PER_SUBMISSION exceeded, submit failed. "
                f"Current total is {len(proc_ads)}. Limit is {limit}",
            )
        qdate = self._date(now)
        procs = ready_made(
            cluster_ad, proc_ads, owner=owner, cluster=cluster, qdate=qdate, rules=self.job_rules
        )
        for texts in procs:
            problem = self._record_problem(texts)
            if problem is not None:
                raise JobAdError(errno.EINVAL, f"job {cluster}.{texts['ProcId']}: {problem}")
            if log_refused is not None and "UserLog" in texts:
                raise SubmitError(f"UserLog = {texts['UserLog']}: {log_refused}")
        got = self._enqueue(cluster, procs, qdate, owner, now, request_id)
        del self._handed_out[cluster]
        return got

    def edit(
        self: Schedd,
        edits: Sequence[EditSpec],
        now: float,
        *,
        only_owner: str | None = None,
        check_only: bool = False,
    ) -> list[int]:
        """condor_qedit: each edit's attribute set (or deleted) on the jobs it names, all
        in one transaction or none (JobAdError says why: a job not found, another user's
        job, an immutable attribute, a value that is not an expression, no job matching a
        constraint). ``only_owner``: a user who is not a queue superuser. The number of
        jobs each edit matched; ``check_only`` changes nothing."""
        planned: list[tuple[Job, str, str | None]] = []
        counts: list[int] = []
        for spec in edits:
            jobs = self._edit_targets(spec, now)
            for job in jobs:
                if only_owner is not None and self._owner(job, now) != only_owner:
                    raise JobAdError(
                        errno.EACCES,
                        f"User {only_owner} may not change attributes for jobs they do not "
                        f"own (job {job.job_id})",
                    )
                apply, text = check_edit(
                    spec.name,
                    spec.value,
                    job.job_id,
                    rules=self.job_rules,
                    superuser=only_owner is None,
                )
                if apply:
                    planned.append((job, spec.name, text))
            counts.append(len(jobs))
        for job, name, text in planned:
            if text is not None and (problem := self._record_problem({name: text})) is not None:
                raise JobAdError(errno.EINVAL, f"job {job.job_id}: {problem}")
        if check_only or not planned:
            return counts
        for job, given, text in planned:
            # the spelling the job already has (ClassAd names ignore case)
            name = next(
                (k for k in (*job.texts, *job.base.texts) if k.lower() == given.lower()), given
            )
            if text is None:
                job.delete(name)
            else:
                job.ad[name] = self._expr(text)
                job.texts[name] = text
            if name.lower() in _CACHED or name.lower() in job.touched:
                self._refile(job, now)
            self._touch(job)
        self._commit(now)
        return counts

    def _edit_targets(self: Schedd, spec: EditSpec, now: float) -> list[Job]:
        """The jobs an edit names: each id must be a queued job (ENOENT), a constraint
        must select one at least."""
        out: dict[tuple[int, int], Job] = {}
        for text in spec.job_ids:
            m = _JOB_ID.match(text.strip())
            job = self.jobs.get((int(m.group(1)), int(m.group(2)))) if m else None
            if job is None:
                raise JobAdError(
                    errno.ENOENT, f"Modifying attribute {spec.name} in nonexistent job {text}"
                )
            out[job.key] = job
        if spec.constraint.strip():
            expr = self._constraint(spec.constraint)
            budget = Budget()
            found = [
                j for j in self.jobs.values() if self._true(expr, j.ad, self.ad_epoch + now, budget)
            ]
            if not found:
                raise JobAdError(
                    errno.ENOENT, f"no job matches constraint {spec.constraint.strip()}"
                )
            out.update((j.key, j) for j in found)
        return sorted(out.values(), key=lambda j: j.key)

    def _refile(self: Schedd, job: Job, now: float) -> None:
        """An edit changed what the job record caches (owner, group, priority, requests):
        its counts, autocluster and idle-index entry again from its ad."""

        idle = job.status == IDLE and job.claim is None
        self._count(job, -1)
        if idle:
            self._idle.discard((job.submitter, job.autocluster), job.cluster, job.proc)
        ad = job.ad
        acid, names, job.touched = self.autoclusters.assign(ad)
        job.autocluster, job.autocluster_attrs = acid, ",".join(names)
        ad["AutoClusterId"], ad["AutoClusterAttrs"] = acid, job.autocluster_attrs
        at, rng = self.ad_epoch + now, self.eval_rng
        prio = ad.get_value("JobPrio", 0, now=at, rng=rng)
        cpus = ad.get_value("RequestCpus", 1, now=at, rng=rng)
        job.submitter = submitter_of(ad, at, rng)
        job.prio = int(prio) if _number(prio) else 0
        job.weight = float(cpus) if _number(cpus) else 1.0
        self._count(job, +1)
        if idle:
            self._idle.add((job.submitter, job.autocluster), job.prio, job.cluster, job.proc)


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
