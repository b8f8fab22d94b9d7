"""A tool written against HTCondor's own Python bindings, run unchanged against a mockpool.

    mockpool up examples/tour.toml
    CONDOR_CONFIG=~/.mockpool/condor_config python examples/htcondor_tool.py

Nothing here knows about mockpool: with ``CONDOR_CONFIG`` naming the pool's condor_config,
``htcondor2``'s collector, schedd and negotiator clients find it with no arguments.
"""

from collections import Counter

import htcondor2

STATUS = {1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held"}

collector = htcondor2.Collector()
slots = collector.query(htcondor2.AdType.Startd, projection=["Machine", "Cpus", "State"])
machines = {ad["Machine"] for ad in slots}
claimed = sum(1 for ad in slots if ad.get("State") == "Claimed")
print(f"collector: {len(machines)} machines, {len(slots)} slots, {claimed} claimed")

schedd = htcondor2.Schedd()  # the pool's first schedd, as a host's own
jobs = schedd.query(projection=["ClusterId", "ProcId", "JobStatus", "Owner"])
counts = Counter(STATUS.get(ad["JobStatus"], "other") for ad in jobs)
shown = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
print(f"schedd: {len(jobs)} jobs ({shown or 'none'})")

for ad in htcondor2.Negotiator().getPriorities():
    if not ad.get("IsAccountingGroup", False):
        print(f"user priority of {ad['Name']}: {ad['Priority']:.1f}")
