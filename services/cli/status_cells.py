"""condor_status' cells and order: the -sort keys (HTCondor's RenderKey, natural
compare), PRINTF-like numbers, LOAD_AVG, ELAPSED_TIME, PLATFORM, ACTIVITY_CODE and the
roll-up of a partitionable slot's children's states (print_format_tables.cpp,
status.cpp). Shared by status_layout.py, status_compact.py and status_totals.py."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..classad import ERROR, UNDEFINED, ClassAd, evaluate, parse_expr
from ..classad.errors import ClassAdSyntaxError
from ..tooltime import TOOL_RNG, wall_now
from .layouts import (
    LayoutError,
    _check_ads,
    _condor_time,
    _int,
    _num,
    _number,
    _str,
    _value,
    natural_key,
)

# -- -sort ---------------------------------------------------------------------------------


class SortKeys:
    """condor_status' sort keys: ``-sort EXPR`` expressions, else Machine then Name."""

    def __init__(self, exprs: Sequence[str] = ()) -> None:
        self.texts = tuple(exprs) or ("Machine", "Name")
        try:
            self.exprs = [parse_expr(t) for t in self.texts]
        except ClassAdSyntaxError as e:
            raise LayoutError(f"-sort: {e}") from None

    def key(self, ad: ClassAd, ordinal: int, first: str | None = None) -> tuple:
        """HTCondor's RenderKey: each key's value as text, then the arrival ordinal."""
        parts = [] if first is None else [first]
        now = wall_now()
        parts += [_key_text(evaluate(e, ad, now=now, rng=TOOL_RNG)) for e in self.exprs]
        return natural_key("\n".join([*parts, f"{ordinal:08X}"]))


def _key_text(v: object) -> str:
    if v is UNDEFINED:
        return "undefined"
    if v is ERROR:
        return "error"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):  # a real sorts by its IEEE bits, as HTCondor renders it
        import struct

        return str(struct.unpack("<q", struct.pack("<d", v))[0])
    return str(v)


def status_sorted(ads: Iterable[ClassAd], keys: SortKeys | None = None) -> list[ClassAd]:
    """The ads in condor_status' order (natural compare of the keys, then arrival)."""
    out = _check_ads(ads, "ad")
    keys = keys or SortKeys()
    order = sorted(range(len(out)), key=lambda k: keys.key(out[k], k))
    return [out[k] for k in order]


# -- printf-like cells ----------------------------------------------------------------------


def _eval(ad: ClassAd, text: str) -> object:
    return evaluate(parse_expr(text), ad, now=wall_now(), rng=TOOL_RNG)


def _d(v: object, width: int) -> str | None:
    """PRINTF %Nd: a number (a real cut toward zero); anything else is no value."""
    n = _number(v)
    return None if n is None else f"{int(n):{width}d}"


def _f(v: object, width: int, decimals: int) -> str | None:
    n = _number(v)
    return None if n is None else f"{float(n):{width}.{decimals}f}"


def _load(ad: ClassAd) -> str | None:
    """LoadAv: CondorLoadAvg as %.3f (PRINTAS LOAD_AVG)."""
    n = _num(ad, "CondorLoadAvg")
    return None if n is None else f"{float(n):.3f}"


def _elapsed(ad: ClassAd, attr: str) -> str | None:
    """PRINTAS ELAPSED_TIME: LastHeardFrom less the attribute, as d+hh:mm:ss."""
    t, now = _int(ad, attr), _int(ad, "LastHeardFrom")
    if t is None or now is None:
        return None
    return _condor_time(now - t) if now - t >= 0 else _condor_time(0)


_STATE_CODES = "~OUMCPSXFD#"  # no_state .. drained, then the threshold ("no consensus")
_STATES = (
    "",
    "Owner",
    "Unclaimed",
    "Matched",
    "Claimed",
    "Preempting",
    "Shutdown",
    "Delete",
    "Backfill",
    "Drained",
)
_ACT_CODES = "0ibrvsekc"
_ACTIVITIES = (
    "",
    "Idle",
    "Busy",
    "Retiring",
    "Vacating",
    "Suspended",
    "Benchmarking",
    "Killing",
    "Cleaning",
)
_NONE, _MIXED = 0, -1


def _state_index(text: object) -> int:
    return _STATES.index(text) if isinstance(text, str) and text in _STATES[1:] else _NONE


def _act_index(text: object) -> int:
    return _ACTIVITIES.index(text) if isinstance(text, str) and text in _ACTIVITIES[1:] else _NONE


def _digest(state: int, act: int) -> str:
    """digest_state_and_activity: two letters, a space for none, # for no consensus."""
    s = " " if state == _NONE else ("#" if state == _MIXED else _STATE_CODES[state])
    a = " " if act == _NONE else ("#" if act == _MIXED else _ACT_CODES[act])
    return s + a


def _activity_code(ad: ClassAd) -> str | None:
    """PRINTAS ACTIVITY_CODE of Activity (no value when Activity is not one)."""
    act = _act_index(_value(ad, "Activity"))
    if act == _NONE:
        return None
    return _digest(_state_index(_value(ad, "State")), act)


def _platform(ad: ClassAd) -> str | None:
    """PRINTAS PLATFORM: Arch (x64, x86) / OpSysAndVer (OpSysShortName on Windows)."""
    opsys = _str(ad, "OpSys")
    name = _str(ad, "OpSysShortName") if opsys == "WINDOWS" else _str(ad, "OpSysAndVer")
    if name is None:
        return None
    arch = _str(ad, "Arch") or ""
    arch = {"X86_64": "x64", "X86": "x86"}.get(arch, arch)
    return f"{arch}/{name}"


def _consensus(ad: ClassAd, attr: str, index: object, preempt: int) -> int:
    """A p-slot's children's one state (activity): _NONE without children, _MIXED when they
    differ, unless one is preempting (vacating), which wins."""
    children = _value(ad, attr)
    out = _NONE
    if not isinstance(children, list):
        return out
    for child in children:
        if not isinstance(child, str):
            continue
        k = index(child)  # type: ignore[operator]
        if k in (_NONE, out):
            continue
        if out == _NONE:
            out = k
        elif k == preempt:
            return k
        else:
            out = _MIXED
    return out
