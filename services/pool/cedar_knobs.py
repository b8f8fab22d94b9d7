"""The SEC_* and query-worker knobs the CEDAR listeners follow, checked without starting
anything (the spec checks a pool's before it runs; a spec parse needs no network code)."""

from __future__ import annotations

from ..config import ConfigDict

__all__ = ["CedarError", "check_knobs", "query_workers"]

_LEVELS = ("REQUIRED", "PREFERRED", "OPTIONAL", "NEVER")
_KNOWN_METHODS = ("FS", "IDTOKENS", "TOKEN", "TOKENS", "CLAIMTOBE")


class CedarError(ValueError):
    """A SEC_* knob of the pool's config that the listeners cannot follow."""


def _level(config: ConfigDict, knob: str, default: str) -> str:
    value = (config.lookup(knob) or default).strip().upper()
    if value not in _LEVELS:
        raise CedarError(f"{knob} = {value}: expected one of {', '.join(_LEVELS)}")
    return value


def _methods(config: ConfigDict) -> list[str]:
    text = config.lookup("SEC_DEFAULT_AUTHENTICATION_METHODS") or "FS, IDTOKENS"
    names = [m.strip().upper() for m in text.replace(",", " ").split() if m.strip()]
    chosen = [m for m in names if m in _KNOWN_METHODS]
    if not chosen:
        raise CedarError(
            f"SEC_DEFAULT_AUTHENTICATION_METHODS = {text}: none of the methods the pool "
            "answers (FS, IDTOKENS, CLAIMTOBE)"
        )
    return chosen


def _max_age(config: ConfigDict) -> float | None:
    text = config.lookup("SEC_TOKEN_MAX_AGE")
    try:
        return float(text) if text else None
    except ValueError:
        raise CedarError(f"SEC_TOKEN_MAX_AGE = {text}: not a number") from None


def check_knobs(config: ConfigDict) -> None:
    """CedarError naming the first SEC_* knob the listeners could not follow (the spec
    checks a pool's before anything starts)."""
    for knob in ("SEC_DEFAULT_AUTHENTICATION", "SEC_DEFAULT_ENCRYPTION", "SEC_DEFAULT_INTEGRITY"):
        _level(config, knob, "OPTIONAL")
    _methods(config)
    _max_age(config)
    query_workers(config)


def query_workers(config: ConfigDict) -> int:
    """``COLLECTOR_QUERY_WORKERS`` (HTCondor's knob, default 4): 0 answers CEDAR queries
    in the collector's loop; any other number, in one query-worker process."""
    text = (config.lookup("COLLECTOR_QUERY_WORKERS") or "4").strip()
    try:
        value = int(text)
    except ValueError:
        raise CedarError(f"COLLECTOR_QUERY_WORKERS = {text}: not an integer") from None
    if value < 0:
        raise CedarError(f"COLLECTOR_QUERY_WORKERS = {text}: not 0 or more")
    return value
