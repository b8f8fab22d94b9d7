"""HTCondor's job states (JobStatus, condor_q's names) and the hold and vacate codes the
schedd writes (HoldReasonCode, src/condor_utils/condor_holdcodes.h).

One place for every reader: the schedd core and its policy and submit, condor_q's layouts
and selections, the CEDAR job query's summary, the run report and the metrics.
"""

from __future__ import annotations

__all__ = [
    "COMPLETED",
    "HELD",
    "HOLD_CODE_EXECUTE_DURATION",
    "HOLD_CODE_JOB_DURATION",
    "HOLD_CODE_JOB_POLICY",
    "HOLD_CODE_SUBMITTED_ON_HOLD",
    "HOLD_CODE_SYSTEM_POLICY",
    "HOLD_CODE_USER",
    "IDLE",
    "QUEUE_STATES",
    "REMOVED",
    "RUNNING",
    "STATUS_NAMES",
    "SUSPENDED",
    "TRANSFERRING_OUTPUT",
    "VACATE_CODE_JOB_POLICY",
    "VACATE_CODE_SYSTEM_POLICY",
]

IDLE, RUNNING, REMOVED, COMPLETED, HELD, TRANSFERRING_OUTPUT, SUSPENDED = range(1, 8)

STATUS_NAMES: dict[int, str] = {
    IDLE: "Idle",
    RUNNING: "Running",
    REMOVED: "Removed",
    COMPLETED: "Completed",
    HELD: "Held",
    TRANSFERRING_OUTPUT: "TransferringOutput",
    SUSPENDED: "Suspended",
}
# the states a mockpool job takes (it transfers nothing and is never suspended): the run
# summary and the schedd ad count these
QUEUE_STATES: dict[int, str] = {
    s: STATUS_NAMES[s] for s in (IDLE, RUNNING, REMOVED, COMPLETED, HELD)
}

HOLD_CODE_USER = 1  # UserRequest
HOLD_CODE_JOB_POLICY = 3  # JobPolicy: the job's own expression
HOLD_CODE_SUBMITTED_ON_HOLD = 15  # SubmittedOnHold
HOLD_CODE_SYSTEM_POLICY = 26  # SystemPolicy: a SYSTEM_PERIODIC_* knob
HOLD_CODE_JOB_DURATION = 46  # JobDurationExceeded
HOLD_CODE_EXECUTE_DURATION = 47  # JobExecuteExceeded
VACATE_CODE_JOB_POLICY = 1000  # JobPolicyVacate
VACATE_CODE_SYSTEM_POLICY = 1001  # SystemPolicyVacate
