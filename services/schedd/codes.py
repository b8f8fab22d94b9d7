"""HTCondor's job states (JobStatus) and the hold codes the schedd writes
(HoldReasonCode, condor_holdcodes.h), shared by the schedd core, its job policy and its
submit."""

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
    "REMOVED",
    "RUNNING",
    "SUSPENDED",
    "VACATE_CODE_JOB_POLICY",
    "VACATE_CODE_SYSTEM_POLICY",
]

IDLE, RUNNING, REMOVED, COMPLETED, HELD, SUSPENDED = 1, 2, 3, 4, 5, 7

HOLD_CODE_USER = 1  # UserRequest
HOLD_CODE_JOB_POLICY = 3  # JobPolicy: the job's own expression
HOLD_CODE_SUBMITTED_ON_HOLD = 15  # SubmittedOnHold
HOLD_CODE_SYSTEM_POLICY = 26  # SystemPolicy: a SYSTEM_PERIODIC_* knob
HOLD_CODE_JOB_DURATION = 46  # JobDurationExceeded
HOLD_CODE_EXECUTE_DURATION = 47  # JobExecuteExceeded
VACATE_CODE_JOB_POLICY = 1000  # JobPolicyVacate
VACATE_CODE_SYSTEM_POLICY = 1001  # SystemPolicyVacate
