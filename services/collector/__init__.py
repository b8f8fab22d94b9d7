"""The collector: ad store with lifetimes and columnar snapshots.

``store`` is the pure core (:class:`AdStore`); ``service`` is the gRPC shell
(:class:`CollectorService`), imported from its module so the core loads without gRPC.
"""

from .store import (
    DEFAULT_CLASSAD_LIFETIME,
    MACHINE,
    MACHINE_PRIVATE,
    AdRecord,
    AdStore,
    BadConstraint,
    BadUpdate,
    CollectorError,
    CollectorSnapshot,
    PrivateAdsRefused,
)

__all__ = [
    "DEFAULT_CLASSAD_LIFETIME",
    "MACHINE",
    "MACHINE_PRIVATE",
    "AdRecord",
    "AdStore",
    "BadConstraint",
    "BadUpdate",
    "CollectorError",
    "PrivateAdsRefused",
    "CollectorSnapshot",
]
