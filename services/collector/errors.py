"""The collector's refusals: each names its problem."""

from __future__ import annotations


class CollectorError(ValueError):
    """A request the collector refuses; the message names the problem."""


class BadUpdate(CollectorError):
    """An ad update that cannot be stored (no Name, wrong MyType, ...)."""


class BadConstraint(CollectorError):
    """A query constraint that is not a ClassAd expression."""


class CostlyConstraint(CollectorError):
    """A query constraint that ran past its evaluation budget (nothing was returned)."""


class BadColumns(CollectorError):
    """A snapshot request for slot columns the collector will not keep."""


class PrivateAdsRefused(CollectorError):
    """A public query asked for private ads."""
