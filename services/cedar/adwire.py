"""ClassAds on a CEDAR stream, as classad_oldnew.cpp's ``putClassAd`` / ``getClassAd``.

An ad travels as: the number of attribute lines (an integer), each line as a string
``Name = <expression in old syntax>``, then two strings that once held MyType and
TargetType and are now always empty (``_putClassAdTrailingInfo``). The receiver splits a
line at its first ``=`` (``SplitLongFormAttrValue``: the name is what comes before, less
leading white space and trailing blanks) and parses the rest in old syntax. The name is
written as it is, never quoted.

Sending (``_putClassAd``):
- private attributes (``Capability``, ``ClaimId``, ``ClaimIds``, ``ClaimIdList``,
  ``ChildClaimIds``, ``TransferKey``, and any name starting ``_condor_priv``) are left
  out unless the caller asks for them (``PUT_CLASSAD_NO_PRIVATE``);
- with a projection (a "whitelist"), only those attributes go, in name order ignoring
  case, spelled as the projection spells them, together with every attribute of the ad
  that their expressions use, transitively (``GetInternalReferences``); a projected name
  the ad lacks is not sent, and the count says so.
Reading, a line ``ZKM`` says the next string holds an encrypted secret line
(``SECRET_MARKER``); a server that encrypts whole packets never sends it.

Each binding's line is made once (a pool's slot ads repeat most of theirs): see
``mockpool.classad.bindings``. :class:`EncodedAd` is one ad's lines, renderable on a
plain or an encrypted stream, which a collector may keep until the ad changes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..classad import ClassAd, ClassAdSyntaxError, parse_expr, unparse
from ..classad.ad import literal_binding
from ..classad.bindings import BindingCache
from ..classad.oldstrings import new_to_old, old_to_new
from ..classad.refs import references
from ..classad.textio import format_old_real
from ..classad.tree import Expr, Literal
from .encoding import StreamError, encode_int, encode_string

if TYPE_CHECKING:
    from .stream import Message

__all__ = [
    "EncodedAd",
    "encode_ad",
    "is_private",
    "read_ad",
    "read_pod_ad",
    "split_line",
]

SECRET_MARKER = "ZKM"
_PRIVATE_V1 = frozenset(
    n.lower()
    for n in ("Capability", "ChildClaimIds", "ClaimId", "ClaimIdList", "ClaimIds", "TransferKey")
)
_PRIVATE_V2 = "_condor_priv"
_TRAILER = b"\0\0"  # the empty MyType and TargetType strings
_TRAILER_ENCRYPTED = (encode_int(1) + b"\0") * 2
_MAX_REF_DEPTH = 100  # the evaluator's depth limit bounds GetInternalReferences too
MAX_POD_ATTRS = 100  # getPODClassAd's limit on a pre-authentication ad


def is_private(name: str) -> bool:
    """``ClassAdAttributeIsPrivateAny``: an attribute a reader without NEGOTIATOR or
    ADMINISTRATOR authorization never sees."""
    low = name.lower()
    return low in _PRIVATE_V1 or low.startswith(_PRIVATE_V2)


def _rhs(expr: Expr) -> str:
    """The expression as the old-syntax unparser writes it: reals as %.16G, strings with
    only ``"`` escaped."""
    if type(expr) is Literal and type(expr.value) is float:
        return format_old_real(expr.value)
    return new_to_old(unparse(expr))


def _make_line(name: str, expr: Expr) -> tuple[bytes, bytes, bool]:
    line = encode_string(f"{name} = {_rhs(expr)}")
    return line, encode_int(len(line)) + line, is_private(name)


# A line is made once per distinct binding (name and literal value, or tree) ...
_LINES: BindingCache[tuple[bytes, bytes, bool]] = BindingCache(_make_line)
# ... and found again by the binding's own tuple: an ad held by a collector keeps its
# tuples, and ads share the tuples of equal literals (``ClassAd.set_literals``). The
# entry holds the tuple, so its id cannot be reused while it is kept.
_BY_BINDING: dict[int, tuple[tuple[str, Expr], bytes, bytes, bool]] = {}
_BY_BINDING_LIMIT = 1_000_000

_Entry = tuple[tuple[str, Expr], bytes, bytes, bool]  # binding, line, encrypted line, private


def _entries(pairs: Iterable[tuple[str, Expr]], private: bool) -> list[_Entry]:
    """Each binding's cache entry, private ones left out unless ``private``."""
    kept = _BY_BINDING
    if len(kept) > _BY_BINDING_LIMIT:
        kept.clear()
    out = []
    add = out.append
    for pair in pairs:
        hit = kept.get(id(pair))
        if hit is None or hit[0] is not pair:
            line, enc, secret = _LINES.of((pair,))[0]
            hit = kept[id(pair)] = (pair, line, enc, secret)
        if private or not hit[3]:
            add(hit)
    return out


class EncodedAd:
    """One ad's wire lines (each a NUL-terminated string), ready to render."""

    __slots__ = ("_encrypted", "_entries", "_plain")

    def __init__(self, entries: list[_Entry]) -> None:
        self._entries = entries
        self._plain: bytes | None = None
        self._encrypted: bytes | None = None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def lines(self) -> list[bytes]:
        return [e[1] for e in self._entries]

    @property
    def plain(self) -> bytes:
        """The ad on a plain stream: count, lines, the two empty type strings."""
        if self._plain is None:
            entries = self._entries
            self._plain = encode_int(len(entries)) + b"".join([e[1] for e in entries]) + _TRAILER
        return self._plain

    @property
    def plain_size(self) -> int:
        return len(self.plain)

    @property
    def encrypted(self) -> bytes:
        """The ad on an encrypted stream: each string after its length."""
        if self._encrypted is None:
            entries = self._entries
            self._encrypted = (
                encode_int(len(entries)) + b"".join([e[2] for e in entries]) + _TRAILER_ENCRYPTED
            )
        return self._encrypted


def encode_ad(
    ad: ClassAd, projection: Iterable[str] | None = None, *, private: bool = False
) -> EncodedAd:
    """``putClassAd(ad)``: every attribute, or the ``projection`` and what it uses;
    private attributes only if ``private``. An empty projection is the whole ad (the
    collector passes no whitelist then)."""
    if projection is None:
        return EncodedAd(_entries(ad.pairs(), private))
    order = _order(projection if isinstance(projection, tuple) else tuple(projection))
    if not order:
        return EncodedAd(_entries(ad.pairs(), private))
    pairs = []
    for lower, name in order:
        expr = ad.lookup(lower)
        if expr is None:
            continue
        if type(expr) is not Literal:  # it uses other attributes: expand, as HTCondor
            pairs = [(n, e) for n in _expanded(ad, order) if (e := ad.lookup(n)) is not None]
            break
        pairs.append((name, expr))
    # the pairs are this query's own: found by value, not kept by identity
    made = _LINES.of(pairs)
    return EncodedAd([(p, *m) for p, m in zip(pairs, made) if private or not m[2]])


@functools.lru_cache(maxsize=256)
def _order(projection: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """A projection as a ``classad::References`` set: (lower, as given) pairs without
    repeats (the first spelling kept), sorted ignoring case."""
    chosen: dict[str, str] = {}
    for name in projection:
        if name and name.lower() not in chosen:
            chosen[name.lower()] = name
    return tuple(sorted(chosen.items()))


def _expanded(ad: ClassAd, order: tuple[tuple[str, str], ...]) -> list[str]:
    """The projection's names with the attributes their expressions use, transitively
    (``GetInternalReferences``), sorted ignoring case; an added name spelled as the ad
    spells it."""
    chosen = dict(order)
    stack = [(name, 0) for _, name in order]
    defined = set(ad.keys_lower())
    while stack:
        name, depth = stack.pop()
        expr = ad.lookup(name)
        if expr is None or type(expr) is Literal or depth >= _MAX_REF_DEPTH:
            continue
        internal, _ = references(expr, defined)
        for ref in internal:
            if ref not in chosen and ref in defined:
                spelled = next(n for n in ad if n.lower() == ref)
                chosen[ref] = spelled
                stack.append((spelled, depth + 1))
    return [chosen[k] for k in sorted(chosen)]


def split_line(line: str) -> tuple[str, str] | None:
    """``SplitLongFormAttrValue``: (name, right-hand side) of ``Name = expr``; None
    when there is no ``=`` or no name."""
    eq = line.find("=")
    if eq < 0:
        return None
    name = line[:eq].lstrip(" \t\n\r\f\v").rstrip(" ")
    if not name:
        return None
    return name, line[eq + 1 :].lstrip(" ")


def _parse_rhs(rhs: str) -> Expr:
    return parse_expr(old_to_new(rhs))


# unsigned, as our parser reads them (a sign makes a unary minus; a leading 0 is refused)
_INT = re.compile(r"(?:0|[1-9][0-9]*)[\r\n]*")
_REAL = re.compile(r"(?:0|[1-9][0-9]*)\.[0-9]*(?:[eE][-+]?[0-9]+)?[\r\n]*")


def _fast_binding(name: str, rhs: str) -> tuple[str, Expr] | None:
    """``getClassAdEx``'s GET_CLASSAD_FAST: a plain integer, real, boolean or short
    string without escapes read without the parser (most of a slot or job ad)."""
    n = len(rhs)
    if not n:
        return None
    c = rhs[0]
    if c == '"':
        end = rhs.find('"', 1)
        if end > 0 and n < 128 and "\\" not in rhs[1:end] and not rhs[end + 1 :].strip(" \t\r\n"):
            return literal_binding(name, rhs[1:end])
        return None
    if "0" <= c <= "9" and n < 30:
        if _INT.fullmatch(rhs):
            return literal_binding(name, int(rhs))
        if _REAL.fullmatch(rhs):
            return literal_binding(name, float(rhs))
        return None
    low = rhs.lower()
    if low == "true":
        return literal_binding(name, True)
    if low == "false":
        return literal_binding(name, False)
    return None


def read_ad(msg: Message, *, what: str = "an ad", max_attributes: int = 1_000_000) -> ClassAd:
    """``getClassAd``: an ad from ``msg``; ``StreamError`` names the line that is wrong."""
    start = msg.offset
    count = msg.get_int(f"{what}'s attribute count")
    if not 0 <= count <= max_attributes:
        raise StreamError(f"{what} at offset {start}: invalid attribute count {count}")
    pairs = []
    for i in range(count):
        line = msg.get_string(f"{what}'s attribute line {i + 1}")
        if line == SECRET_MARKER:
            line = msg.get_string(f"{what}'s secret attribute line {i + 1}")
        split = split_line(line)
        if split is None:
            raise StreamError(f"{what}, attribute line {i + 1}: no 'Name = value' in {line[:80]!r}")
        name, rhs = split
        fast = _fast_binding(name, rhs)
        if fast is not None:
            pairs.append(fast)
            continue
        try:
            pairs.append((name, _parse_rhs(rhs)))
        except ClassAdSyntaxError as exc:
            raise StreamError(
                f"{what}, attribute line {i + 1} ({name}): {exc} in {rhs[:80]!r}"
            ) from None
    msg.get_string(f"{what}'s MyType")
    msg.get_string(f"{what}'s TargetType")
    return ClassAd.from_exprs(pairs)


def read_pod_ad(msg: Message, *, what: str = "the security ad") -> ClassAd:
    """``getPODClassAd``, the reader for ads that arrive before authentication: at most
    100 attributes, each a single literal (a negative number is not one: its first
    token is ``-``)."""
    start = msg.offset
    count = msg.get_int(f"{what}'s attribute count")
    if not 0 <= count <= MAX_POD_ATTRS:
        raise StreamError(f"{what} at offset {start}: invalid attribute count {count}")
    pairs = []
    for i in range(count):
        line = msg.get_string(f"{what}'s attribute line {i + 1}")
        split = split_line(line)
        if split is None:
            raise StreamError(f"{what}, attribute line {i + 1}: no 'Name = value' in {line[:80]!r}")
        name, rhs = split
        try:
            expr = _parse_rhs(rhs)
        except ClassAdSyntaxError as exc:
            raise StreamError(f"{what}, attribute line {i + 1} ({name}): {exc}") from None
        if type(expr) is not Literal or rhs.lstrip().startswith(("-", "+", "(")):
            raise StreamError(
                f"{what}, attribute line {i + 1} ({name}): not a literal: {rhs[:80]!r}"
            )
        pairs.append((name, expr))
    msg.get_string(f"{what}'s MyType")
    msg.get_string(f"{what}'s TargetType")
    return ClassAd.from_exprs(pairs)
