"""Knob defaults: what a knob means when no configuration sets it.

Values are configuration text, as in HTCondor's param table (src/condor_utils/param_info.in);
where the table has no entry the default is HTCondor's hard-coded one, as summarised in
shared/htcondor-semantics.md. ``ConfigDict`` falls back to this table for lookups, typed
accessors and ``$(NAME)`` references, so a table default wins over an accessor's own
``default`` argument, as ``param_integer`` does in HTCondor.

Not here because the daemon computes them: NUM_CLAIMS (a slot's Cpus), NUM_SLOTS (1 for a
partitionable default slot, else NUM_CPUS), MEMORY and DISK (the machine's totals).
"""

from __future__ import annotations

import re

DEFAULTS: dict[str, str] = {
    # negotiator cadence
    "NEGOTIATOR_INTERVAL": "60",
    "NEGOTIATOR_MIN_INTERVAL": "5",
    "NEGOTIATOR_CYCLE_DELAY": "20",
    "NEGOTIATOR_MAX_TIME_PER_CYCLE": "1200",
    "NEGOTIATOR_MAX_TIME_PER_SUBMITTER": "60",
    "NEGOTIATOR_MAX_TIME_PER_SCHEDD": "120",
    "NEGOTIATOR_MAX_TIME_PER_PIESPIN": "120",
    "NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE": "200",
    "NEGOTIATOR_UPDATE_INTERVAL": "300",
    "NEGOTIATION_CYCLE_STATS_LENGTH": "3",
    # accountant and fair share
    "PRIORITY_HALFLIFE": "86400",
    "DEFAULT_PRIO_FACTOR": "1000",
    "NICE_USER_PRIO_FACTOR": "1e10",
    "NICE_USER_ACCOUNTING_GROUP_NAME": "nice-user",
    "NEGOTIATOR_USE_SLOT_WEIGHTS": "true",
    "SLOT_WEIGHT": "Cpus",
    # matching order and preemption
    "NEGOTIATOR_PRE_JOB_RANK": (
        "(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory"
    ),
    "NEGOTIATOR_POST_JOB_RANK": (
        "(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops)"
        " - SlotID - 1.0e10*(Offline=?=True))"
    ),
    "NEGOTIATOR_CONSIDER_PREEMPTION": "true",
    "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION": "false",
    "PREEMPTION_REQUIREMENTS": "False",
    "PREEMPTION_RANK": (
        "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)"
    ),
    # hierarchical group quotas
    "GROUP_NAMES": "",
    "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION": "true",
    "GROUP_ACCEPT_SURPLUS": "false",
    "GROUP_AUTOREGROUP": "false",
    "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS": "3",
    "GROUP_SORT_EXPR": (
        'ifThenElse(AccountingGroup=?="<none>",3.4e+38,'
        "ifThenElse(GroupQuota>0,GroupResourcesInUse/GroupQuota,3.3e+38))"
    ),
    # partitionable slots
    "CONSUMPTION_POLICY": "false",
    "CONSUMPTION_CPUS": "quantize(target.RequestCpus,{1})",
    "CONSUMPTION_MEMORY": "quantize(target.RequestMemory,{128})",
    "CONSUMPTION_DISK": "quantize(target.RequestDisk,{1024})",
    "CLAIM_PARTITIONABLE_LEFTOVERS": "$(NEGOTIATOR_USE_SLOT_WEIGHTS)",
    # concurrency limits (<NAME>_LIMIT, CONCURRENCY_LIMIT_DEFAULT_<SCOPE>: families below)
    "CONCURRENCY_LIMIT_DEFAULT": "2308032",
    # startd: machine and slot layout
    "NUM_CPUS": "$(DETECTED_CPUS_LIMIT)",
    "RESERVED_MEMORY": "0",
    "MAX_SLOT_TYPES": "10",
    # HTCondor >= 23.0: with no NUM_SLOTS_TYPE_<N>, the machine is one partitionable slot
    # (countTypes in condor_startd.V6/slot_builder.cpp); set False for NUM_CPUS static slots.
    "SLOT_TYPE_0_PARTITIONABLE": "True",
    "START": "True",
    "RANK": "0",
    # how a partitionable slot rounds a request before carving (param_info.in; HTCondor's
    # RequestDisk edit also subtracts catalog space and honours a DiskQuantum, absent here)
    "MODIFY_REQUEST_EXPR_REQUESTCPUS": "quantize(RequestCpus,{1})",
    "MODIFY_REQUEST_EXPR_REQUESTMEMORY": "quantize(RequestMemory,{128})",
    "MODIFY_REQUEST_EXPR_REQUESTDISK": "quantize(RequestDisk,{1024})",
    "UPDATE_INTERVAL": "300",
    # claims and leases
    "CLAIM_WORKLIFE": "1200",
    "ALIVE_INTERVAL": "300",
    "MAX_CLAIM_ALIVES_MISSED": "6",
    "MATCH_TIMEOUT": "120",
    "NEGOTIATOR_INFORM_STARTD": "false",
    "JOB_DEFAULT_LEASE_DURATION": "2400",
    # schedd and submit
    "SCHEDD_INTERVAL": "300",
    "SCHEDD_MIN_INTERVAL": "5",
    "SCHEDD_SEND_RESCHEDULE": "true",
    "SUBMIT_SEND_RESCHEDULE": "true",
    # HTCondor's default is MIN({$(DETECTED_MEMORY), 10000}); the ":10000" keeps it defined
    # for a mock schedd that has no detected memory.
    "MAX_JOBS_RUNNING": "MIN({$(DETECTED_MEMORY:10000), 10000})",
    "MAX_JOBS_PER_SUBMISSION": "20000",  # param_info.in
    "JOB_DEFAULT_REQUESTCPUS": "1",
    "JOB_DEFAULT_REQUESTMEMORY": "128",
    "JOB_DEFAULT_REQUESTDISK": "MAX({1024, (TransferInputSizeMB+1) * 1.25}) * 1024",
    "PERIODIC_EXPR_INTERVAL": "60",
    "SYSTEM_MAX_RELEASES": "-1",
    # not in param_info.in: the schedd's hard-coded default (schedd.cpp)
    "WALL_CLOCK_CKPT_INTERVAL": "3600",
    # HTCondor's default is $(FULL_HOSTNAME); a mock pool has one domain.
    "UID_DOMAIN": "mockpool",
    # collector
    "CLASSAD_LIFETIME": "900",
    "COLLECTOR_UPDATE_INTERVAL": "900",
    # startd policy (param_info.in), so that a policy's self-references (``START =
    # $(START) && ...``) and the fragments the POLICY templates use expand as in HTCondor
    "SUSPEND": "False",
    "CONTINUE": "True",
    "PREEMPT": "False",
    "KILL": "False",
    "WANT_SUSPEND": "False",
    "WANT_VACATE": "True",
    "IS_OWNER": "False",
    "PERIODIC_CHECKPOINT": (
        "((time() - LastPeriodicCheckpoint)/60.0) > (180.0 + $RANDOM_INTEGER(-30,30,1))"
    ),
    "STARTD_LATCH_EXPRS": "",
    "STARTD_ATTRS": "",
    "STARTD_JOB_ATTRS": "",
    "SLOTS_CONNECTED_TO_KEYBOARD": "0",
    "SLOTS_CONNECTED_TO_CONSOLE": "0",
    "DAEMON_LIST": "MASTER",
    "MINUTE": "60",
    "HOUR": "3600",
    "StateTimer": "(time() - EnteredCurrentState)",
    "ActivityTimer": "(time() - EnteredCurrentActivity)",
    "HighLoad": "0.5",
    "BackgroundLoad": "0.3",
    "StartIdleTime": "15 * $(MINUTE)",
    "ContinueIdleTime": "5 * $(MINUTE)",
    "MaxSuspendTime": "10 * $(MINUTE)",
    "MaxVacateTime": "10 * $(MINUTE)",
    "SmallJob": "(TARGET.ImageSize <  (15 * 1024))",
    "IsVanilla": "(TARGET.JobUniverse == $(VANILLA))",
    "IsStandard": "(TARGET.JobUniverse == $(STANDARD))",
    "STANDARD": "1",
    "VANILLA": "5",
    "SYSTEM_JOB_MACHINE_ATTRS": "Cpus,SlotWeight",
    # where a Linux package installs HTCondor (the wheel's RELEASE_DIR is /usr too): the
    # paths templates and site files name, so $(LIBEXEC)/... expands as HTCondor's does;
    # LOCAL_DIR has no default there, so $(LOG) is "/log" until a site sets it
    "RELEASE_DIR": "/usr",
    "BIN": "$(RELEASE_DIR)/bin",
    "SBIN": "$(RELEASE_DIR)/sbin",
    "LIB": "$(RELEASE_DIR)/lib",
    "LIBEXEC": "$(RELEASE_DIR)/libexec",
    "LOG": "$(LOCAL_DIR)/log",
    "SPOOL": "$(LOCAL_DIR)/spool",
    "EXECUTE": "$(LOCAL_DIR)/execute",
    "COLLECTOR": "$(SBIN)/condor_collector",
    "GPU_MONITOR": "$(LIBEXEC)/condor_gpu_utilization",
    "SEC_DEFAULT_AUTHENTICATION_METHODS": "FS,IDTOKENS,KERBEROS,SCITOKENS,SSL",
}

# Knob families that mockpool reads but that cannot be listed one by one.
FAMILIES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"SLOT_TYPE_\d+",
        r"NUM_SLOTS_TYPE_\d+",
        r"SLOT_TYPE_\d+_PARTITIONABLE",
        r"SLOT_TYPE_\d+_CONSUMPTION_POLICY",
        r"SLOT_TYPE_\d+_CONSUMPTION_\w+",
        r"SLOT_TYPE_\d+_NUM_CLAIMS",
        r"SLOT_TYPE_\d+_(START|RANK|SLOT_WEIGHT|MODIFY_REQUEST_EXPR_\w+)",
        r"GROUP_QUOTA_.+",
        r"GROUP_QUOTA_DYNAMIC_.+",
        r"GROUP_ACCEPT_SURPLUS_.+",
        r"GROUP_AUTOREGROUP_.+",
        r"GROUP_PRIO_FACTOR_.+",
        r"CONCURRENCY_LIMIT_DEFAULT_.+",
        r".+_LIMIT",
        r"NUM_SLOTS|NUM_CLAIMS|MEMORY|DISK|RANK",
    )
)

# Subsystem prefixes (``SCHEDD.MAX_JOBS_RUNNING``) that a knob name may carry.
SUBSYSTEMS = frozenset({"COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD", "SUBMIT", "TOOL"})


def is_known(name: str) -> bool:
    """Whether mockpool reads the knob ``name`` (case-insensitive, subsystem prefix allowed)."""
    head, dot, tail = name.partition(".")
    if dot and head.upper() in SUBSYSTEMS:
        name = tail
    upper = name.upper()
    return upper in DEFAULTS or any(p.fullmatch(upper) for p in FAMILIES)
