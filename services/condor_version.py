"""What every daemon's ad says it is: HTCondor's ``CondorVersion`` and ``CondorPlatform``.

mockpool follows HTCondor 25.0 (:data:`~mockpool.config.conditions.HTCONDOR_VERSION`, what
a config's ``if version >= x.y`` compares with); the strings have HTCondor's shape
(``$CondorVersion: 25.0.0 <date> BuildID: ... $``), which tools split to read the version
(condor_submit's ``versioncmp(split(TARGET.CondorVersion)[1], "8.9.7")``). The date is
fixed, so a virtual run's ads stay the same from run to run.
"""

from __future__ import annotations

from . import __version__
from .config.conditions import HTCONDOR_VERSION

__all__ = ["CONDOR_PLATFORM", "CONDOR_VERSION", "condor_platform"]

CONDOR_VERSION = (
    f"$CondorVersion: {'.'.join(map(str, HTCONDOR_VERSION))} 2025-06-01 "
    f"BuildID: mockpool-{__version__} $"
)


def condor_platform(arch: str = "X86_64", opsys_name: str = "AlmaLinux", major: int = 9) -> str:
    """``$CondorPlatform: X86_64-AlmaLinux_9 $``: the build's platform, here the
    machine's own (its ARCH, OPSYSNAME and OPSYSMAJORVER)."""
    return f"$CondorPlatform: {arch}-{opsys_name}_{major} $"


CONDOR_PLATFORM = condor_platform()  # the central manager's and the schedds'
