"""Wall-clock time as HTCondor's schedd keeps it: RemoteWallClockTime and its checkpoint.

HTCondor's rules (schedd.cpp ``add_shadow_birthdate``, ``CkptWallClock``,
``update_remote_wall_clock``; qmgmt.cpp's walk of the queue when the schedd starts):

- A run's wall clock counts from its shadow's birthday (ShadowBday): the activation, or,
  for a job a restarted schedd reconnects to, the restart (a reconnect shadow is born
  then; JobCurrentStartDate keeps the run's start). mockpool has no shadow: the claim's
  ``activated`` is the birthday.
- When the run ends, RemoteWallClockTime grows by its end minus the birthday and the
  checkpoint is deleted, in one transaction.
- Every WALL_CLOCK_CKPT_INTERVAL (default 3600; 0 or less: never) from the schedd's start
  (a daemonCore timer, not one per job), each running job whose run so far is *longer*
  than the interval gets WallClockCheckpoint = now - birthday, in the queue.
- A schedd that starts credits each job's WallClockCheckpoint to RemoteWallClockTime and
  deletes it. A job that was running when the schedd died is credited up to its last
  checkpoint: what it ran after that, and while the schedd was down (when its claim may
  have expired), is not counted.

mockpool keeps no CumulativeSlotTime nor LastRemoteWallClockTime (HTCondor adds the same
delta to them); its times are float pool seconds, so a checkpoint is one too.
"""

from __future__ import annotations

__all__ = ["CHECKPOINT", "checkpoint", "credited"]

CHECKPOINT = "WallClockCheckpoint"  # ATTR_JOB_WALL_CLOCK_CKPT


def checkpoint(born: float, now: float, interval: float) -> float | None:
    """The WallClockCheckpoint a round at ``now`` writes for a run born at ``born``; None
    when the run so far is not longer than ``interval`` (CkptWallClock skips it)."""
    run = now - born
    if interval <= 0 or run <= interval:
        return None
    return round(run, 3)


def credited(remote_wall_clock: float, ckpt: float) -> float:
    """RemoteWallClockTime once a starting schedd has credited a run's checkpoint (a
    checkpoint that is not a positive number credits nothing, as ``if (wall_clock_ckpt)``)."""
    return remote_wall_clock + ckpt if ckpt > 0 else remote_wall_clock
