"""What each key of a pool spec means: the text of docs/spec.md.

The keys themselves are specmodel.py's (``POOL_KEYS``, ``STARTD_KEYS``, ...), faults.py's
and workload.py's: ``scripts/gen_spec_doc.py`` refuses to write docs/spec.md while a key
there has no entry here, or an entry here names a key they do not accept, and takes the
``[pool]`` defaults from a parsed empty spec rather than from this file. A new key is
documented by adding a line here and running ``python scripts/gen_spec_doc.py``.
"""

from __future__ import annotations

# table -> key -> (default as shown, meaning). A default of None: required, or shown
# from the parsed spec ([pool]).
Keys = dict[str, tuple[str | None, str]]

TABLES: dict[str, str] = {
    "pool": "the time scale, the run's length, the clock and where servers listen",
    "config": "HTCondor knobs for every daemon, as in a condor_config (docs/config.md)",
    "startds": "a family of identical machines (repeatable)",
    "schedds": "a family of schedds (repeatable; none: one schedd, `schedd1`)",
    "accountant": "the accountant's starting state, per submitter or group",
    "submit": "a submit description sent at a pool time (repeatable)",
    "workload": "generated jobs: distributions and arrivals (repeatable; docs/workloads.md)",
    "trace": "a recorded job history replayed (repeatable; docs/workloads.md)",
    "import": "a copy of a running pool from condor_status/condor_q dumps",
    "placement": "where actors go on a Ray cluster",
    "faults": "a fault plan (repeatable; docs/faults.md)",
}

POOL: Keys = {
    "time_scale": (None, "pool seconds per real second (> 0)"),
    "duration": (None, "pool seconds `mockpool run` runs for (> 0)"),
    "seed": (
        None,
        "draws workloads and `$RANDOM_INTEGER()`/`$RANDOM_CHOICE()`; a sweep's "
        "`--seeds N` runs it and the next N - 1",
    ),
    "host": (
        None,
        'where servers listen: loopback, an address, or "routable" (each Ray node\'s own '
        "address); anything but loopback needs `secret_file` (or $MOCKPOOL_SECRET_FILE, "
        "$MOCKPOOL_SECRET)",
    ),
    "name": ("(none)", "accepted and not used: a label for the reader"),
    "clock": (
        None,
        '"live" (Ray actors, gRPC, scaled wall clock) or "virtual" (docs/virtual-time.md)',
    ),
    "latency": (None, "virtual: pool seconds every message between daemons takes, each way"),
    "cycle_cost": (
        None,
        '"zero", `{ per_slot = s, per_match = s }` or `{ cpu_factor = f }`: what a virtual '
        "negotiation cycle costs in pool seconds",
    ),
    "until_done": (None, "end the run once every job of the workload has left the queue"),
    "metrics_port": (None, "live: serve Prometheus metrics on host:port (0: off; docs/metrics.md)"),
    "metrics_htcondor": (None, "metrics: also the `htcondor_*` names sites already graph"),
    "cedar": (
        None,
        "live: the collector, negotiator and schedds also answer HTCondor's own clients "
        "(`htcondor2`, the `htcondor` tool) over CEDAR ([htcondor-clients.md](htcondor-clients.md))",
    ),
    "restarts": (None, "Ray restarts a dead actor this many times (as condor_master would)"),
    "secret_file": (
        None,
        "a 0600 file holding the pool secret (`mockpool token secret --out FILE`), "
        "relative to the spec",
    ),
}
# [pool] key -> the PoolSpec attribute its default is read from
POOL_ATTRS = {k: k for k in POOL if k != "name"}

CONFIG: Keys = {
    "file": ("(none)", "a condor_config file read first (relative to the spec)"),
    "text": ("(none)", "config text as it is: read after `file`, before single knobs"),
    "KNOB": ("(none)", "any other key is one knob: `NEGOTIATOR_INTERVAL = 60`"),
}

STARTDS: Keys = {
    "name": (
        '"exec{:04d}"',
        "a str.format pattern over 1..count (later tables: `exec<i>_{:04d}`)",
    ),
    "count": ("1", "machines in the family (at most 1,000,000)"),
    "machines_per_actor": ("min(count, 1000)", "machines hosted by one Ray actor"),
    "config": (
        "(none)",
        "the family's knobs over `[config]`: config text, or a table with file, text and "
        "single knobs",
    ),
    "config_file": ("(none)", "a condor_config file for the family (relative to the spec)"),
}

SCHEDDS: Keys = {
    "name": (
        '"schedd{}"',
        "a str.format pattern over 1..count (with several tables: `schedd<i>_{}`)",
    ),
    "count": ("1", "schedds in the family (at most 10,000)"),
    "per_actor": ("count", "schedds hosted by one Ray actor"),
}

ACCOUNTANT: Keys = {
    "factor": ("(none)", "priority factor (>= 1)"),
    "priority": ("(none)", "real user priority (>= 0.5)"),
}

SUBMIT: Keys = {
    "at": ("0", "pool time of the submit"),
    "schedd": ("0", "the schedd: an index into the pool's schedds, or a name"),
    "owner": (None, "the submitting user (required)"),
    "description": ("(none)", "the submit description (this or `file`)"),
    "file": ("(none)", "a submit file, relative to the spec (this or `description`)"),
}

WORKLOAD: Keys = {
    "name": ('"workload<i>"', "names it for `--set workload.NAME.KEY=...`"),
    "owner": (None, "the submitting user (required)"),
    "accounting_group": ('""', "the jobs' accounting group"),
    "schedd": ("0", "an index into the pool's schedds, or a name"),
    "jobs": ("1", "how many jobs (at most 10,000,000)"),
    "duration": (None, "pool seconds each job runs: a number or a distribution (required)"),
    "arrival": ('{ kind = "at_once" }', "when the jobs are submitted: an arrival table"),
    "request_cpus": ("1", "a number or a distribution"),
    "request_memory": ("128", "MB: a number or a distribution"),
    "request_disk": ("1024", "KB: a number or a distribution"),
}

TRACE: Keys = {
    "name": ('"trace<i>"', "its MockTrace tag"),
    "file": (None, "the history: `condor_history -json`, `-long` text or SWF (required)"),
    "format": ("by extension", '"json", "long" or "swf"'),
    "schedd": ("0", "an index into the pool's schedds, or a name"),
    "compress": ("1.0", "gaps between submits divided by this (durations stay)"),
    "shift": ("0.0", "pool seconds before the first submit"),
    "limit": ("0", "replay only the first N jobs (0: all)"),
    "removals": ("true", "remove removed jobs (JobStatus 3) as long after submit as they were"),
    "on_error": ('"refuse"', '"refuse" stops at a bad line; "skip" leaves it out and lists it'),
}

IMPORT: Keys = {
    "status": ("(none)", "a `condor_status -long` dump: the machines"),
    "queue": ("(none)", "a `condor_q -long` dump: the jobs, queued again at time 0"),
    "duration": ("3600.0", "pool seconds a job runs when it has no MockDuration/JobDuration"),
    "machines_per_actor": ("100", "machines hosted by one Ray actor"),
    "schedd": ("0", "the schedd the jobs go to"),
}

PLACEMENT: Keys = {
    "central": ('"any"', '"head": the central manager\'s actor on the Ray head node'),
    "startds": ('"spread"', '"pack": startd actors packed by a placement group'),
    "negotiator": (
        '"central"',
        '"own": the negotiator in an actor of its own, reading columnar snapshots',
    ),
}

FAULT: Keys = {
    "kind": (None, "crash, restart, pause, partition, drop, delay, skew (or random)"),
    "target": ("(none)", "a daemon (schedd1, exec0001, collector, negotiator) or an actor"),
    "constraint": ("(none)", "a ClassAd constraint choosing the targets (instead of target)"),
    "peer": ("(none)", "partition, drop, delay: the other side"),
    "at": ("0.0", "pool seconds"),
    "duration": ("0.0", "how long (a crash with a duration is restarted after it)"),
    "fraction": ("1.0", "drop, delay: the share of calls affected"),
    "delay": ("0.0", "delay: seconds each call is held"),
    "skew": ("0.0", "skew: seconds the target's clock is moved"),
}

RANDOM_FAULT: Keys = {
    "kind": (None, '"random"'),
    "seed": ("0", "the draw's seed"),
    "rate": (None, "faults per pool hour, by kind: `{ crash = 2, pause = 1 }` (required)"),
    "targets": (None, "the daemons or actors drawn from (required)"),
    "start": ("0.0", "pool seconds: draws from here"),
    "until": (None, "pool seconds: to here (> start; required)"),
    "duration": ("60.0", "each fault's length"),
    "fraction": ("0.5", "drop, delay: the share of calls affected"),
    "delay": ("5.0", "delay: seconds each call is held"),
}
