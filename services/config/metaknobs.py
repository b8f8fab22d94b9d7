"""HTCondor's metaknobs: the templates behind ``use CATEGORY : name(args)``.

The bodies are our transcription of the ``[$ROLE.*]``, ``[$FEATURE.*]``, ``[$POLICY.*]`` and
``[$SECURITY.*]`` entries of HTCondor's param table (``src/condor_utils/param_info.in``,
htcondor 25), without their comments. A body is configuration text, read as if it stood
where the ``use`` line is, after its metaknob arguments are substituted
(``config.cpp``'s ``expand_meta_args``):

- the arguments split at commas; empty items are skipped when counting (``Knob(a, , c)``
  has two arguments, ``a`` and ``c``);
- ``$(0)`` is the whole argument text and ``$(0#)`` the number of arguments;
- ``$(N)`` is the N-th argument, ``$(N?)`` is ``1`` if it is there and ``0`` otherwise, and
  ``$(N+)`` (or ``$(N#)``) is the argument text from the N-th on;
- ``$(N:default)`` and ``$(N+:default)`` give ``default`` when there is no such argument.

Anything else (``$(NAME)``) is left for the normal macro expansion.
"""

from __future__ import annotations

import re

# (category, name) -> body; names are case-insensitive.
_BODIES: dict[tuple[str, str], str] = {}


def _define(category: str, name: str, body: str) -> None:
    _BODIES[(category.upper(), name.upper())] = body


# --- ROLE -----------------------------------------------------------------------------
_define(
    "ROLE",
    "Personal",
    """
CONDOR_HOST=127.0.0.1
COLLECTOR_HOST=$(CONDOR_HOST):0
DAEMON_LIST=MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD
RunBenchmarks=0
""",
)
_define("ROLE", "Execute", "DAEMON_LIST=$(DAEMON_LIST) STARTD")
_define("ROLE", "Submit", "DAEMON_LIST=$(DAEMON_LIST) SCHEDD")
_define("ROLE", "CentralManager", "DAEMON_LIST=$(DAEMON_LIST) COLLECTOR NEGOTIATOR")
_define(
    "ROLE",
    "get_htcondor_central_manager",
    "use security:get_htcondor_idtokens\nuse role:CentralManager",
)
_define("ROLE", "get_htcondor_submit", "use security:get_htcondor_idtokens\nuse role:submit")
_define("ROLE", "get_htcondor_execute", "use security:get_htcondor_idtokens\nuse role:execute")

# --- FEATURE --------------------------------------------------------------------------
_define(
    "FEATURE",
    "PartitionableSlot",
    """
NUM_SLOTS_TYPE_$(1:1)=1
SLOT_TYPE_$(1:1)_PARTITIONABLE=true
SLOT_TYPE_$(1:1)=$(2+:100%)
""",
)
_define(
    "FEATURE",
    "StaticSlots",
    """
NUM_SLOTS_TYPE_$(1:1)=$(2:$(NUM_CPUS))
SLOT_TYPE_$(1:1)_PARTITIONABLE=false
SLOT_TYPE_$(1:1)=$(3+:1/$(NUM_SLOTS_TYPE_$(1:1)))
SLOT_TYPE_$(1:1)=$(3+)
""",
)
_define(
    "FEATURE",
    "POLICY_EXPR_FRAGMENTS",
    """
PolicyExprFragments=1
KeyboardBusy=(KeyboardIdle < $(MINUTE))
ConsoleBusy=(ConsoleIdle  < $(MINUTE))
KeyboardNotBusy=($(KeyboardBusy) == False)
JustCPU=($(CPUBusy) && ($(KeyboardBusy) == False))
MachineBusy=($(CPUBusy) || $(KeyboardBusy))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
ActivationTimer=ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)
LastCkpt=(time() - LastPeriodicCheckpoint)
""",
)
_define(
    "FEATURE",
    "POLICY_HOURS_TO_START",
    """
WorkdayBeginHour=$(1:8)
WorkdayEndHour=$(2:12+5)
WorkdayBeginMinuteStartJobs=($(WorkdayBeginHour))*60 - 29.5
WorkdayBeginMinuteStopJobs=($(WorkdayBeginHour))*60 - 9.5
WorkdayEndMinute=($(WorkdayEndHour))*60 + 0.5
RunJobsHours=ClockMin < $INT(WorkdayBeginMinuteStartJobs) || ClockMin > $INT(WorkdayEndMinute)
NoJobsHours=ClockMin > $INT(WorkdayBeginMinuteStopJobs) && ClockMin < $INT(WorkdayEndMinute)
if $(3?)
   WorkweekFirstDay=$(3:1)
   WorkweekLastDay=$(4:5)
   IsWeekend=ClockDay < $INT(WorkweekFirstDay) || ClockDay > $INT(WorkWeekLastDay)
   IsWorkday=ClockDay >= $INT(WorkweekFirstDay) && ClockDay <= $INT(WorkWeekLastDay)
   RunJobsHours=$(IsWeekend) || $(RunJobsHours)
   NoJobsHours=$(IsWorkday) && $(NoJobsHours)
endif
RunJobsHours=($(RunJobsHours))
NoJobsHours=($(NoJobsHours))
""",
)
_define(
    "FEATURE",
    "TESTINGMODE_POLICY_VALUES",
    """
TESTINGMODE_WANT_SUSPEND=False
TESTINGMODE_WANT_VACATE=True
TESTINGMODE_START=True
TESTINGMODE_SUSPEND=False
TESTINGMODE_CONTINUE=True
TESTINGMODE_PREEMPT=False
TESTINGMODE_KILL=False
TESTINGMODE_PERIODIC_CHECKPOINT=False
TESTINGMODE_PREEMPTION_REQUIREMENTS=False
TESTINGMODE_PREEMPTION_RANK=0
TESTINGMODE_CLAIM_WORKLIFE=1200
""",
)
_define(
    "FEATURE",
    "UWCS_DESKTOP_POLICY_VALUES",
    """
if ! defined PolicyExprFragments
    use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
UWCS_WANT_SUSPEND=( $(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND) )
UWCS_WANT_VACATE=( $(ActivationTimer) > 10 * $(MINUTE) || $(IsVanilla) )
UWCS_START=( (KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
UWCS_SUSPEND=( $(KeyboardBusy) || ( ($(CpuBusyTimer) > 2 * $(MINUTE)) && $(ActivationTimer) > 90 ) )
UWCS_CONTINUE=( $(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)) )
UWCS_PREEMPT=( ((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)) )
UWCS_MaxJobRetirementTime=0
UWCS_KILL=false
UWCS_PERIODIC_CHECKPOINT=$(LastCkpt) > (3 * $(HOUR) + $RANDOM_INTEGER(-30,30,1) * $(MINUTE) )
UWCS_NEGOTIATOR_PRE_JOB_RANK=(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory
UWCS_NEGOTIATOR_POST_JOB_RANK=(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))
UWCS_PREEMPTION_REQUIREMENTS=((SubmitterGroup =?= RemoteGroup) && ($(StateTimer) > (1 * $(HOUR))) && (RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)
UWCS_PREEMPTION_RANK=(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)
""",
)
_define(
    "FEATURE",
    "GPUs",
    """
MACHINE_RESOURCE_INVENTORY_GPUs=$(LIBEXEC)/condor_gpu_discovery $(1) -properties $(GPU_DISCOVERY_EXTRA)
ENVIRONMENT_FOR_AssignedGPUs=GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//
ENVIRONMENT_VALUE_FOR_UnAssignedGPUs=10000
use feature : GPUsMonitor
""",
)
_define(
    "FEATURE",
    "Monitor",
    """
if ! $(5?)
    error: use feature : monitor requires five or more arguments
endif
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) $(1)_MONITOR
STARTD_CRON_$(1)_MONITOR_MODE = $(2)
STARTD_CRON_$(1)_MONITOR_PERIOD = $(3)
STARTD_CRON_$(1)_MONITOR_EXECUTABLE = $(4)
STARTD_CRON_$(1)_MONITOR_METRICS = $(5+)
""",
)
_define(
    "FEATURE",
    "GPUsMonitor",
    """
use feature : Monitor( GPUs, WaitForExit, 300, $(GPU_MONITOR), SUM:GPUs, PEAK:GPUsMemory )
STARTD_CRON_GPUs_MONITOR_CONDITION = TotalGPUs > 0 && OpSys =!= "WINDOWS"
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) GPUsUsage GPUsMemoryUsage
""",
)
_define(
    "FEATURE",
    "REMOTE_RUNTIME_CONFIG",
    """
ENABLE_RUNTIME_CONFIG=True
ALLOW_CONFIG=$(ALLOW_ADMINISTRATOR)
if $(0#)
    SETTABLE_ATTRS_CONFIG=$(SETTABLE_ATTRS_CONFIG) $(0)
endif
""",
)
_define(
    "FEATURE",
    "REMOTE_CONFIG",
    """
ENABLE_PERSISTENT_CONFIG=True
PERSISTENT_CONFIG_DIR=$(SPOOL)
use FEATURE : REMOTE_RUNTIME_CONFIG($(0))
""",
)
_define(
    "FEATURE",
    "ScheddUsermapFile",
    """
if ! $(2?)
    error : use FEATURE : ScheddUsermapFile requires 2 arguments: map_name, map_file
endif
SCHEDD_CLASSAD_USER_MAP_NAMES = $(SCHEDD_CLASSAD_USER_MAP_NAMES) $(1)
CLASSAD_USER_MAPFILE_$(1) = $(2)
""",
)
for _kind, _mode, _n in (
    ("OneShot", "OneShot", 3),
    ("Periodic", "Periodic", 4),
    ("Continuous", "WaitForExit", 3),
):
    _lines = [
        f"if ! $({_n}?)",
        f"    error : use FEATURE : {_kind}CronHook requires at least {_n} arguments",
        "endif",
        "$(1)_JOBLIST=$($(1)_JOBLIST) $(2)",
        f"$(1)_$(2)_MODE={_mode}",
    ]
    if _kind == "OneShot":
        _lines += ["$(1)_$(2)_KILL=true", "$(1)_$(2)_RECONFIG_RERUN=true"]
    if _kind == "Periodic":
        _lines += ["$(1)_$(2)_PERIOD=$(3)"]
    if _kind == "Continuous":
        _lines += ["$(1)_$(2)_PERIOD=0"]
    _lines += [
        f"$(1)_$(2)_EXECUTABLE=$({_n})",
        f"if $({_n + 1}?)",
        f"    $(1)_$(2)_ARGS=$({_n + 1})",
        "endif",
    ]
    _define("FEATURE", f"{_kind}CronHook", "\n".join(_lines))
    for _daemon in ("Startd", "Schedd"):
        _define(
            "FEATURE",
            f"{_daemon}Cron{'Periodic' if _kind == 'Periodic' else _kind}",
            f"use FEATURE : {_kind}CronHook({_daemon.upper()}_CRON, $(0))",
        )
_define(
    "FEATURE",
    "ChildCollector",
    """
COLLECTOR$(1)=$(COLLECTOR)
if $(2?)
    COLLECTOR$(1)_ARGS= -p $(2)
else
    COLLECTOR$(1)_ARGS= -sock collector$(1)
endif
COLLECTOR$(1).COLLECTOR_NAME=Collector$(1)
COLLECTOR$(1).CONDOR_VIEW_HOST=$(TOP_COLLECTOR_HOST)
COLLECTOR$(1).CCB_RECONNECT_FILE=$(SPOOL)/Collector$(1).ccb_reconnect
DAEMON_LIST=$(DAEMON_LIST) COLLECTOR$(1)
TOP_COLLECTOR_HOST=$(COLLECTOR_HOST)
""",
)
_define("FEATURE", "GANGLIA", "DAEMON_LIST=$(DAEMON_LIST) GANGLIAD")
_define("FEATURE", "ADSTASH", "ADSTASH_SCHEDD_HISTORY=True\nDAEMON_LIST=$(DAEMON_LIST) ADSTASH")
_define(
    "FEATURE",
    "JobsHaveInstanceIDs",
    "SYSTEM_JOB_MACHINE_ATTRS = $(SYSTEM_JOB_MACHINE_ATTRS) CloudInstanceID",
)
_define(
    "FEATURE",
    "LIBRARIAN",
    """
DAEMON_LIST=$(DAEMON_LIST) LIBRARIAN
USING_LIBRARIAN=True
if $(1?)
    LIBRARIAN_MAX_DATABASE_SIZE=$(1)
endif
if $(2?)
    LIBRARIAN_DATABASE=$(2)
endif
""",
)
_define(
    "FEATURE",
    "KRB",
    """
SEC_CREDENTIAL_DIRECTORY_KRB=/var/lib/condor/krb_credentials
DAEMON_LIST=$(DAEMON_LIST) CREDMON_KRB
SEC_CREDENTIAL_PRODUCER=$(LIBEXEC)/cred_producer_krb
SEC_CREDENTIAL_MONITOR_KRB_LOG=$(LOG)/CredMonKrbLog
AUTO_INCLUDE_CREDD_IN_DAEMON_LIST=True
USE_KEYRING_SESSIONS=True
""",
)
_define(
    "FEATURE",
    "OAUTH",
    """
SEC_CREDENTIAL_DIRECTORY_OAUTH=/var/lib/condor/oauth_credentials
CREDMON_OAUTH_LOG=$(LOG)/CredMonOAuthLog
DAEMON_LIST=$(DAEMON_LIST) CREDMON_OAUTH
AUTO_INCLUDE_CREDD_IN_DAEMON_LIST=True
TRUST_CREDENTIAL_DIRECTORY=True
""",
)

_define(
    "FEATURE",
    "AssignAccountingGroup",
    """
if ! $(1?)
    error : use FEATURE : AssignAccountingGroup requires a map_file argument
endif
use FEATURE : ScheddUsermapFile(AssignAccountingGroup, $(1))
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) AssignAccountingGroup
JOB_TRANSFORM_AssignAccountingGroup @=end
    COPY Owner = AcctGroupUser
    COPY AcctGroup = RequestedAcctGroup
    EVALSET AcctGroup = usermap("AssignAccountingGroup",AcctGroupUser,AcctGroup)
    EVALSET AccountingGroup = join(".",AcctGroup,AcctGroupUser)
@end
IMMUTABLE_JOB_ATTRS = $(IMMUTABLE_JOB_ATTRS) AcctGroup AcctGroupUser AccountingGroup
if $(2:True)
    SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) CheckRequestedGroup
    SUBMIT_REQUIREMENT_CheckRequestedGroup = RequestedAcctGroup is undefined || RequestedAcctGroup == AcctGroup
    SUBMIT_REQUIREMENT_CheckRequestedGroup_REASON = strcat("Permission denied setting accounting_group to ", RequestedAcctGroup)
endif
SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) AssignAccountingGroup
SUBMIT_REQUIREMENT_AssignAccountingGroup = AcctGroup isnt undefined && AccountingGroup isnt undefined
SUBMIT_REQUIREMENT_AssignAccountingGroup_REASON = strcat("Submit requirement AssignAccountingGroup not met - Could not map '", Owner, "' to an accounting group ", RequestedAcctGroup)
""",
)
_define(
    "FEATURE",
    "AssignProjectName",
    """
if ! $(1?)
    error : use FEATURE : AssignProjectName requires a map_name argument
endif
use FEATURE : SetJobAttrFromUsermap(ProjectName, Owner, $(1+))
""",
)
_define(
    "FEATURE",
    "SetJobAttrFromUsermap",
    """
if ! $(3?)
    error : use FEATURE : SetJobAttrFromUsermap requires at least 3 arguments: dest_attr, src_attr, map_name [,map_file]
endif
if $(4?)
    use FEATURE : ScheddUsermapFile($(3), $(4))
endif
JOB_TRANSFORM_NAMES += Set$(1)
JOB_TRANSFORM_Set$(1) = EVALSET $(1) usermap("$(3)",$(2),$(1))
SUBMIT_REQUIREMENT_NAMES += Require$(1)
SUBMIT_REQUIREMENT_Require$(1) = $(1) isnt undefined
SUBMIT_REQUIREMENT_Require$(1)_REASON = strcat("Submit requirement Require$(1) not met - Could not map '", $(2)?:"undefined", "' to a $(1)")
""",
)
for _cloud in ("Google", "AWS"):
    _define(
        "FEATURE",
        f"CommonCloudAttributes{_cloud}",
        (
            "use FEATURE : StartdCronOneShot(cloud, $(LIBEXEC)/common-cloud-attributes-"
            f"{_cloud.lower()}.py, $(0))\nSTARTD_CRON_cloud_PREFIX = Cloud"
        ),
    )
_define(
    "FEATURE",
    "PelicanRetryPolicy",
    """
PelicanRetry_MaxRetries = 4
PelicanRetry_MinimumDelay = 300
PelicanRetry_RandomDelay = 300
pelican_error_subcode_retriable = 2816
pelican_error_subcode_stopped = 1280
PelicanRetryCondition = ((VacateReasonCode == 12 || VacateReasonCode == 13) && ((VacateReasonSubCode == $(pelican_error_subcode_retriable)) || (VacateReasonSubCode == $(pelican_error_subcode_stopped)))) ?: false
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) PelicanRetry
JOB_TRANSFORM_PelicanRetry @=jt
    REQUIREMENTS (stringListIMember("pelican",WantTransferPluginMethods) || stringListIMember("osdf",WantTransferPluginMethods) || stringListIMember("stash",WantTransferPluginMethods)) && isUndefined(PelicanRetryEnabled)
    EVALMACRO retry_delay = $(PelicanRetry_MinimumDelay) + random($(PelicanRetry_RandomDelay))
    SET PelicanRetryEnabled true
    SET PelicanRetryDelay $(retry_delay)
@jt
SYSTEM_ON_VACATE_COOL_DOWN = ((PelicanRetryEnabled?:false) && $(PelicanRetryCondition) && ((NumJobCoolDowns?:0) < $(PelicanRetry_MaxRetries)) ? PelicanRetryDelay : ($(SYSTEM_ON_VACATE_COOL_DOWN:0)))
""",
)

# --- POLICY ---------------------------------------------------------------------------
_NO_SUSPEND_TAIL = """
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
"""
_define(
    "POLICY",
    "DESKTOP",
    """
if ! defined PolicyExprFragments
    use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
WANT_SUSPEND=($(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND))
WANT_VACATE=$(ActivationTimer) > 600 || $(IsVanilla)
SUSPEND=($(KeyboardBusy) || ( ($(CpuBusyTimer) > 120) && $(ActivationTimer) > 90))
CONTINUE=($(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)))
PREEMPT=(((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)))
START=((KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
""",
)
_define(
    "POLICY",
    "DESKTOP_IDLE",
    """
if $(1?)
    use FEATURE : POLICY_HOURS_TO_START($(1+))
endif
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PreemptKeyboardIdleTime=60
PreemptCpuBusyTime=120
PREEMPT=(KeyboardIdle < $(PreemptKeyboardIdleTime)) || ($(CpuBusyTimer) > $(PreemptCpuBusyTime))
if defined NoJobsHours
    PREEMPT = ($(PREEMPT)) && ($(NoJobsHours))
endif
START=(KeyboardIdle > $(StartIdleTime)) && $(CPUIdle)
if defined RunJobsHours
    START = ($(START)) || ($(RunJobsHours))
endif
"""
    + _NO_SUSPEND_TAIL,
)
_define(
    "POLICY",
    "DESKTOP_HOURS",
    """
use FEATURE : POLICY_HOURS_TO_START($(1+))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PREEMPT = $(NoJobsHours)
START = $(RunJobsHours)
"""
    + _NO_SUSPEND_TAIL,
)
_define(
    "POLICY",
    "ALWAYS_RUN_JOBS",
    """
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
PREEMPT=False
START=True
KILL=False
PREEMPTION_REQUIREMENTS=False
NEGOTIATOR_CONSIDER_PREEMPTION=False
MaxJobRetirementTime=2147483647
CLAIM_WORKLIFE=1200
""",
)
_define(
    "POLICY",
    "UWCS_DESKTOP",
    """
use FEATURE : UWCS_DESKTOP_POLICY_VALUES
WANT_SUSPEND=$(UWCS_WANT_SUSPEND)
WANT_VACATE=$(UWCS_WANT_VACATE)
SUSPEND=$(UWCS_SUSPEND)
CONTINUE=$(UWCS_CONTINUE)
PREEMPT=$(UWCS_PREEMPT)
START=$(UWCS_START)
KILL=$(UWCS_KILL)
PERIODIC_CHECKPOINT=$(UWCS_PERIODIC_CHECKPOINT)
PREEMPTION_REQUIREMENTS=$(UWCS_PREEMPTION_REQUIREMENTS)
PREEMPTION_RANK=$(UWCS_PREEMPTION_RANK)
NEGOTIATOR_PRE_JOB_RANK=$(UWCS_NEGOTIATOR_PRE_JOB_RANK)
NEGOTIATOR_POST_JOB_RANK=$(UWCS_NEGOTIATOR_POST_JOB_RANK)
MaxJobRetirementTime=$(UWCS_MaxJobRetirementTime)
CLAIM_WORKLIFE=$(UWCS_CLAIM_WORKLIFE)
SLOTS_CONNECTED_TO_KEYBOARD=1024*1024
IS_OWNER=(START =?= False)
""",
)
_define(
    "POLICY",
    "LIMIT_JOB_RUNTIMES",
    """
MAX_JOB_RUNTIME=$(1:24*3600)
MaxJobRetirementTime=$(MAX_JOB_RUNTIME)+120
PREEMPT=(Activity == "Busy") && ((time() - EnteredCurrentActivity) > $(MAX_JOB_RUNTIME))
""",
)
_define(
    "POLICY",
    "PREEMPT_IF_RUNTIME_EXCEEDS",
    """
MAX_JOB_RUNTIME = $(1:24*3600)
PREEMPT_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : PREEMPT_IF( PREEMPT_RUNTIME_EXCEEDS )
""",
)
_define(
    "POLICY",
    "HOLD_IF_RUNTIME_EXCEEDS",
    """
MAX_JOB_RUNTIME = $(1:24*3600)
HOLD_REASON_RUNTIME_EXCEEDS = runtime exceeded maximum ($(MAX_JOB_RUNTIME) seconds)
HOLD_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : WANT_HOLD_IF( HOLD_RUNTIME_EXCEEDS, $(HOLD_SUBCODE_RUNTIME_EXCEEDS:103), $(HOLD_REASON_RUNTIME_EXCEEDS) )
""",
)
_define(
    "POLICY",
    "STARTD_PUBLISH_CpusUsage",
    """
CpusUsage = ifthenelse(TotalLoadAvg > 0.0 && Activity!="Idle", CondorLoadAvg/TotalLoadAvg*MIN({TotalLoadAvg, $(DETECTED_CORES)}), 0)
STARTD_ATTRS = $(STARTD_ATTRS) CpusUsage
""",
)
_define(
    "POLICY",
    "PREEMPT_IF_CPUS_EXCEEDED",
    """
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
use POLICY : PREEMPT_IF(CPU_EXCEEDED)
""",
)
_define(
    "POLICY",
    "HOLD_IF_CPUS_EXCEEDED",
    """
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
HOLD_REASON_CPU_EXCEEDED = CPU usage exceeded request_cpus
use POLICY : WANT_HOLD_IF( CPU_EXCEEDED, $(HOLD_SUBCODE_CPU_EXCEEDED:101), $(HOLD_REASON_CPU_EXCEEDED) )
""",
)
for _res, _attr, _subcode, _reason in (
    ("DISK", "Disk", 104, "disk usage exceeded allocated disk"),
    ("MEMORY", "Memory", 102, "memory usage exceeded request_memory"),
):
    _trigger = (
        f"{_res}_EXCEEDED = (JobUniverse != 13 && {_attr}Usage =!= UNDEFINED && "
        f"{_attr}Usage > {_attr})"
    )
    _define(
        "POLICY",
        f"PREEMPT_IF_{_res}_EXCEEDED",
        f"{_trigger}\nuse POLICY : PREEMPT_IF({_res}_EXCEEDED)",
    )
    _define(
        "POLICY",
        f"HOLD_IF_{_res}_EXCEEDED",
        (
            f"{_trigger}\nHOLD_REASON_{_res}_EXCEEDED = {_reason}\n"
            f"use POLICY : WANT_HOLD_IF( {_res}_EXCEEDED, $(HOLD_SUBCODE_{_res}_EXCEEDED:{_subcode}), "
            f"$(HOLD_REASON_{_res}_EXCEEDED) )"
        ),
    )
_define(
    "POLICY",
    "PREEMPT_IF",
    """
if !$(1?)
    error : use POLICY : PREEMPT_IF requires an argument. It should be the name of a config variable that has the trigger expression.
endif
if defined PREEMPT
    PREEMPT = $($(1)) || $(PREEMPT)
else
    PREEMPT = $($(1))
endif
MAXJOBRETIREMENTTIME = ifthenelse($($(1)),-1,$(MAXJOBRETIREMENTTIME:0))
if defined WANT_SUSPEND
    WANT_SUSPEND = $($(1)) =!= true && $(WANT_SUSPEND)
else
    WANT_SUSPEND = $($(1)) =!= true
endif
""",
)
_define(
    "POLICY",
    "WANT_HOLD_IF",
    """
use POLICY : PREEMPT_IF($(1))
if ! $(3?)
    error : use POLICY : WANT_HOLD_IF requires 3 arguments: policy_variable, subcode, reason_text
endif
if defined WANT_HOLD
    WANT_HOLD = (JobUniverse != 1 && $($(1))) || $(WANT_HOLD)
else
    WANT_HOLD = (JobUniverse != 1 && $($(1)))
endif
WANT_HOLD_SUBCODE = ifThenElse($($(1)), $(2) , $(WANT_HOLD_SUBCODE:UNDEFINED))
WANT_HOLD_REASON = ifThenElse($($(1)), "$(3+)", $(WANT_HOLD_REASON:UNDEFINED))
""",
)

# --- SECURITY (kept as knobs; mockpool's own security is the pool token) --------------
_define(
    "SECURITY",
    "HOST_BASED",
    """
ALLOW_ADMINISTRATOR=$(CONDOR_HOST)
ALLOW_READ=*
ALLOW_WRITE=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_DAEMON=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_NEGOTIATOR=$(CONDOR_HOST)
ALLOW_NEGOTIATOR_SCHEDD=$(ALLOW_NEGOTIATOR) $(FLOCK_NEGOTIATOR_HOSTS)
ALLOW_WRITE_COLLECTOR=$(ALLOW_WRITE) $(FLOCK_FROM)
ALLOW_WRITE_STARTD=$(ALLOW_WRITE) $(FLOCK_FROM)
ALLOW_READ_COLLECTOR=$(ALLOW_READ) $(FLOCK_FROM)
ALLOW_READ_STARTD=$(ALLOW_READ) $(FLOCK_FROM)
LEGACY_ALLOW_SEMANTICS = TRUE
""",
)
_define(
    "SECURITY",
    "WITH_AUTHENTICATION",
    "SEC_DEFAULT_AUTHENTICATION=required\nSEC_DEFAULT_INTEGRITY=required",
)
_define(
    "SECURITY",
    "STRONG",
    """
SEC_DEFAULT_ENCRYPTION=required
SEC_DEFAULT_INTEGRITY=required
SEC_DEFAULT_AUTHENTICATION=required
""",
)
_define(
    "SECURITY",
    "FIPS",
    """
FIPS = True
use security:strong
SEC_DEFAULT_CRYPTO_METHODS = AES,3DES
""",
)
for _model, _password in (("9_0", "condor_pool@*"), ("24_0", "condor@password")):
    _read = (
        (
            "SEC_READ_AUTHENTICATION = OPTIONAL\nSEC_READ_ENCRYPTION = OPTIONAL\n"
            "SEC_READ_INTEGRITY = OPTIONAL"
        )
        if _model == "9_0"
        else ("SEC_READ_AUTHENTICATION = OPTIONAL\nSEC_CLIENT_AUTHENTICATION = OPTIONAL")
    )
    _define(
        "SECURITY",
        f"recommended_v{_model}",
        f"""
SECURITY_MODEL = {_model.replace("_", ".")}
use security:strong
{_read}
ALLOW_ADMINISTRATOR = $(1:condor)@* {_password} $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  {_password}
ALLOW_NEGOTIATOR = $(1:condor)@* {_password}
ALLOW_WRITE = *
ALLOW_READ = *
""",
    )
_define("SECURITY", "recommended", "use security:recommended_v24_0($(1+))")
_define(
    "SECURITY",
    "get_htcondor_idtokens",
    """
use security:recommended
SEC_READ_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
SEC_CLIENT_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
TRUST_DOMAIN = $(CONDOR_HOST)
""",
)

CATEGORIES = frozenset(c for c, _ in _BODIES)


def template(category: str, name: str) -> str | None:
    """The body of ``use category : name``, or None when HTCondor has no such template."""
    return _BODIES.get((category.upper(), name.upper()))


def names(category: str) -> list[str]:
    """The template names of a category, for messages."""
    return sorted(n for c, n in _BODIES if c == category.upper())


_ARG = re.compile(r"\$\((\d+)([?#+]?)(?::((?:[^()]|\([^()]*\))*))?\)")


def _arguments(argstr: str) -> list[tuple[int, int]]:
    """(start, end) of each non-empty comma-separated argument of ``argstr``."""
    spans, pos = [], 0
    for part in argstr.split(","):
        if part.strip():
            lead = len(part) - len(part.lstrip())
            spans.append((pos + lead, pos + len(part.rstrip())))
        pos += len(part) + 1
    return spans


def expand_args(body: str, argstr: str) -> str:
    """``body`` with its ``$(N)`` metaknob arguments replaced by those of ``argstr``."""
    spans = _arguments(argstr)
    text = body
    while (m := _ARG.search(text)) is not None:
        index, suffix, default = int(m.group(1)), m.group(2), m.group(3)
        if index == 0:
            value = str(len(spans)) if suffix == "#" else argstr.strip()
        elif suffix in ("+", "#"):
            if index == 1:
                value = argstr.strip()
            elif index - 1 <= len(spans):
                # the text after the (N-1)-th argument, its comma dropped
                value = argstr[spans[index - 2][1] :].lstrip()
                value = value[1:] if value.startswith(",") else value
                value = value.strip()
            else:
                value = ""
            if not value and default is not None:
                value = default
        else:
            value = argstr[slice(*spans[index - 1])] if index <= len(spans) else ""
            if not value and default is not None:
                value = default
        if suffix == "?":
            value = "1" if value.strip() else "0"
        text = text[: m.start()] + value.strip() + text[m.end() :]
    return text
