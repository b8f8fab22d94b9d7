"""ClassAds on the wire: :class:`ClassAd` <-> ``mockpool.v1.ClassAd``.

Literal scalars travel typed (no re-parsing on the far side); every other expression
travels as new-syntax text and is parsed on arrival. A malformed expression in a message
raises :class:`WireError` naming the attribute, so a servicer can refuse the message
(INVALID_ARGUMENT) without touching its state. An ad that cannot be sent (an integer
beyond the wire's 64 bits) raises WireError too, never protobuf's ValueError, and
``ads_to_pb`` can leave such an ad out of a reply so that the others still go.
"""

from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from .classad import ERROR, UNDEFINED, ClassAd, ClassAdSyntaxError, parse_expr, unparse
from .classad.ad import to_expr
from .classad.bindings import BindingCache
from .classad.tree import Expr, Literal
from .v1 import classad_pb2 as pb

__all__ = [
    "AdDecoder",
    "PARTS",
    "PrefixDecoder",
    "WireError",
    "ad_from_bytes",
    "ad_from_pb",
    "ad_to_bytes",
    "ad_to_pb",
    "ads_from_pb",
    "ads_to_pb",
    "room_for",
    "iter_attribute_entries",
    "parse_text",
    "texts_to_ad",
]

_INT64 = range(-(2**63), 2**63)


class WireError(ValueError):
    """A ClassAd in a message that cannot be read."""


def _literal_to_pb(value: object, out: pb.Value) -> bool:
    """Fill ``out`` from a scalar literal; False when the value is not a plain scalar."""
    if value is UNDEFINED:
        out.undefined = True
    elif value is ERROR:
        out.error = True
    elif isinstance(value, bool):
        out.boolean = value
    elif isinstance(value, int):
        if value not in _INT64:
            raise WireError(f"integer {value} does not fit in 64 bits")
        out.integer = value
    elif isinstance(value, float):
        out.real = value
    elif isinstance(value, str):
        out.str = value
    else:
        return False
    return True


def ad_to_pb(ad: ClassAd | Mapping[str, Expr], out: pb.ClassAd | None = None) -> pb.ClassAd:
    """The protobuf form of ``ad`` (appended to ``out`` when given)."""
    msg = out if out is not None else pb.ClassAd()
    msg.MergeFromString(ad_to_bytes(ad))
    return msg


def ad_to_bytes(ad: ClassAd | Mapping[str, Expr]) -> bytes:
    """The serialised ``mockpool.v1.ClassAd`` of ``ad``: each attribute's entry is encoded
    once and kept (see :mod:`.classad.bindings`), and an ad is the concatenation of its
    entries."""
    return b"".join(_ENTRIES.of(ad.items()))


def frame_field(field_number: int, payload: bytes) -> bytes:
    """``payload`` (a serialised message, or bytes) as one length-delimited field of an
    enclosing message. Concatenating framed fields builds a message's bytes without
    parsing anything: a ``repeated ClassAd ads = 1`` reply is
    ``b"".join(frame_field(1, w) for w in wires)``, a message of thousands of ads is put
    together from their cached bytes."""
    return frame_head(field_number, len(payload)) + payload


def frame_head(field_number: int, length: int) -> bytes:
    """The bytes that precede a ``length``-byte value of length-delimited field
    ``field_number`` (:func:`frame_field` without the value)."""
    return _varint(field_number << 3 | 2) + _varint(length)


def frame_parts(field_number: int, payloads: Iterable[bytes]) -> list[bytes]:
    """:func:`frame_field` of each payload, as the pieces (header, payload, ...) of one
    ``b"".join``: a payload is copied once, into the message, not first into a framed
    copy of its own (100,000 slot ads are 130 MB)."""
    heads: dict[int, bytes] = {}
    out: list[bytes] = []
    for p in payloads:
        n = len(p)
        head = heads.get(n)
        if head is None:
            head = heads[n] = frame_head(field_number, n)
        out += (head, p)
    return out


def framed_batches(
    field_number: int, entries: Iterable[Sequence[bytes]], limit: int
) -> Iterator[tuple[int, list[bytes]]]:
    """Each entry (its parts, one after the other) framed as ``field_number``, the frames
    gathered into batches of at most ``limit`` bytes (an entry larger than that goes
    alone): the pieces of one message's ``b"".join`` each, with how many entries it
    holds. A big request goes as several (a message of tens of megabytes, built or
    parsed in one go, holds a loop for a large part of a second)."""
    parts: list[bytes] = []
    size = count = 0
    for entry in entries:
        length = sum(map(len, entry))
        head = frame_head(field_number, length)
        if count and size + len(head) + length > limit:
            yield count, parts
            parts, size, count = [], 0, 0
        parts.append(head)
        parts += entry
        size += len(head) + length
        count += 1
    if count:
        yield count, parts


def split_fields(raw: bytes, fields: frozenset[int]) -> tuple[dict[int, list[bytes]], bytes]:
    """The values of the length-delimited ``fields`` of a serialised message, each
    field's in order and unparsed, and the bytes of its other fields (for the message's
    own parser). A reply of 200,000 ads is read this way in a few tenths of a second of
    Python that yields to other threads, where parsing it whole holds the interpreter
    for seconds and re-serialises each ad to get its bytes. Raises WireError on bytes
    that are not a message."""
    found: dict[int, list[bytes]] = {f: [] for f in fields}
    rest: list[bytes] = []
    i, n = 0, len(raw)
    try:
        while i < n:
            start = i
            key, i = _read_varint(raw, i)
            field, kind = key >> 3, key & 7
            if kind == 2:
                length, i = _read_varint(raw, i)
                end = i + length
                if end > n:
                    raise ValueError("a field runs past the end")
                if field in found:
                    found[field].append(raw[i:end])
                    i = end
                    continue
                i = end
            elif kind == 0:
                _, i = _read_varint(raw, i)
            elif kind == 1:
                i += 8
            elif kind == 5:
                i += 4
            else:
                raise ValueError(f"field {field} has wire type {kind}")
            if i > n:
                raise ValueError("a field runs past the end")
            rest.append(raw[start:i])
    except (ValueError, IndexError) as exc:
        raise WireError(f"not a protobuf message: {exc}") from None
    return found, b"".join(rest)


def _read_varint(raw: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = raw[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _entry_bytes(name: str, expr: Expr) -> bytes:
    holder = pb.ClassAd()
    attr = holder.attributes.add(name=name)
    try:
        literal = isinstance(expr, Literal) and _literal_to_pb(expr.value, attr.literal)
    except WireError as exc:
        raise WireError(f"attribute {name}: {exc}") from None
    if not literal:
        attr.expression = unparse(expr)
    return holder.SerializeToString()


# Encoded attribute entries (field tag, length and Attribute bytes) by binding.
_ENTRIES = BindingCache(_entry_bytes)


def _literal_from_pb(v: pb.Value) -> object:
    kind = v.WhichOneof("kind")
    if kind == "undefined" or kind is None:
        return UNDEFINED
    if kind == "error":
        return ERROR
    if kind == "list":
        return [_literal_from_pb(item) for item in v.list.items]
    if kind == "ad":
        return ad_from_pb(v.ad)
    return getattr(v, kind)


_SCALARS = frozenset(("boolean", "integer", "real", "str"))


@functools.lru_cache(maxsize=65536)
def _parse_cached(text: str) -> Expr:
    # Ads repeat the same expression texts (START, Requirements, ...) thousands of times;
    # trees are immutable, so one parse serves every ad.
    return parse_expr(text)


def parse_text(text: str) -> Expr:
    """An expression sent as text: one tree per text, shared, but for one that may hold
    a nested ad (a tree of its own: a nested ad gets its parent)."""
    return parse_expr(text) if "[" in text else _parse_cached(text)


def ad_from_pb(msg: pb.ClassAd) -> ClassAd:
    """The ClassAd in ``msg``; WireError names the attribute whose expression is bad."""
    return ad_from_bytes(msg.SerializeToString())


def iter_attribute_entries(buf: bytes) -> Iterator[tuple[int, int, int]]:
    """(entry start, attribute start, end) of each ``attributes`` entry of a serialised
    ClassAd, walking the bytes directly. Raises ValueError on anything but the plain
    shape a protobuf encoder writes (field 1 entries, each starting with its name), so
    the caller can fall back to parsing."""
    i, n = 0, len(buf)
    while i < n:
        start = i
        if buf[i] != 0x0A:  # not field 1, length-delimited
            raise ValueError("unexpected field")
        length, i = _read_varint(buf, i + 1)
        end = i + length
        if length < 2 or end > n or buf[i] != 0x0A or buf[i + 1] >= 0x80:  # name first, < 128
            raise ValueError("unexpected attribute layout")
        yield start, i, end
        i = end


# Decoded attributes by their bytes: slot ads repeat the same (name, value) pairs across
# slots and updates, so most attributes of a busy pool's traffic decode once. Only
# immutable trees are kept (nested ads get a parent pointer when stored).
_ATTR_CACHE: dict[bytes, tuple[str, tuple[str, Expr]]] = {}
_ATTR_CACHE_LIMIT = 500_000


def ad_from_bytes(raw: bytes) -> ClassAd:
    """The ClassAd in the serialised ``mockpool.v1.ClassAd`` ``raw`` (WireError names the
    attribute whose expression is bad; a message that does not parse is a WireError)."""
    attrs: dict[str, tuple[str, Expr]] = {}
    try:
        count = _decode_entries(raw, 0, attrs)
    except (ValueError, IndexError):
        return _ad_from_message(raw)
    if len(attrs) != count:  # a name twice: the first spelling, the last expression
        return _ad_from_message(raw)
    return ClassAd.from_attrs(attrs)


def _decode_entries(raw: bytes, i: int, attrs: dict[str, tuple[str, Expr]]) -> int:
    """Decode the ``attributes`` entries of ``raw`` from offset ``i`` into ``attrs``;
    return how many there were. The entries are walked in place (the plain shape a
    protobuf encoder writes: field 1 entries, each starting with its name); ValueError or
    IndexError on anything else, or on a nested ad (the caller then parses). The walk is
    :func:`iter_attribute_entries`'s, inlined: a generator step costs as much as a
    cached attribute's decoding."""
    cache = _ATTR_CACHE
    if len(cache) > _ATTR_CACHE_LIMIT:
        cache.clear()
    count = 0
    n = len(raw)
    while i < n:
        if raw[i] != 0x0A:
            raise ValueError("unexpected field")
        length = raw[i + 1]
        begin = i + 2
        if length >= 0x80:
            length &= 0x7F
            shift = 7
            while True:
                b = raw[begin]
                begin += 1
                length |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
        end = begin + length
        if length < 2 or end > n or raw[begin] != 0x0A or raw[begin + 1] >= 0x80:
            raise ValueError("unexpected attribute layout")
        key = raw[begin:end]
        hit = cache.get(key)
        if hit is None:
            name, expr, shareable = _decode_attribute(pb.Attribute.FromString(key))
            if not shareable:  # nested ads need their parent pointer set
                raise ValueError("nested ad")
            hit = cache[key] = (name.lower(), (name, expr))
        attrs[hit[0]] = hit[1]
        count += 1
        i = end
    return count


class PrefixDecoder:
    """Decodes ads whose sender marks a leading part that repeats from update to update
    (``AdUpdate.stable_prefix``): that part is decoded once and kept, by a digest of its
    bytes, and only the rest of each ad is walked. A collector hearing 10,000 unchanged
    slot ads every update interval decodes their clocks, not their 40 other attributes.

    The hint never changes what is decoded: a prefix that is not a run of whole entries,
    or an ad with a name twice, goes the plain way. ``capacity`` bounds the kept parts:
    past it, the part used least recently is dropped (a slot's part of an earlier state).
    Dropping them all at once held a collector's loop for a tenth of a second, and its
    next round of updates decoded every ad whole."""

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._parts: OrderedDict[bytes, tuple[tuple[str, tuple[str, Expr]], ...]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._parts)

    def decode(self, raw: bytes, prefix: int) -> ClassAd:
        if not 0 < prefix <= len(raw):
            return ad_from_bytes(raw)
        key = hashlib.blake2b(memoryview(raw)[:prefix], digest_size=16).digest()
        part = self._parts.get(key)
        try:
            if part is None:
                self.misses += 1
                head: dict[str, tuple[str, Expr]] = {}
                if _decode_entries(raw[:prefix], 0, head) != len(head):
                    return ad_from_bytes(raw)
                while len(self._parts) >= max(self.capacity, 1):
                    self._parts.popitem(last=False)
                part = self._parts[key] = tuple(head.items())
            else:
                self.hits += 1
                self._parts.move_to_end(key)
            attrs = dict(part)
            if _decode_entries(raw, prefix, attrs) != len(attrs) - len(part):
                return ad_from_bytes(raw)  # a name in both parts, or twice in the rest
        except (ValueError, IndexError):
            return ad_from_bytes(raw)
        return ClassAd.from_attrs(attrs)


def _ad_from_message(raw: bytes) -> ClassAd:
    try:
        msg = pb.ClassAd.FromString(raw)
    except Exception as exc:
        raise WireError(f"not a ClassAd message: {exc}") from None
    return ClassAd.from_exprs(_decode_attribute(a)[:2] for a in msg.attributes)


def _decode_attribute(attr: pb.Attribute) -> tuple[str, Expr, bool]:
    """(name, expression, whether the tree may be shared between ads)."""
    name = attr.name
    if not name:
        raise WireError("attribute with an empty name")
    if attr.WhichOneof("expr") == "expression":
        text = attr.expression
        try:
            return name, parse_text(text), "[" not in text
        except ClassAdSyntaxError as exc:
            raise WireError(f"attribute {name}: {exc}") from None
    lit = attr.literal
    kind = lit.WhichOneof("kind")
    if kind in _SCALARS:
        return name, Literal(getattr(lit, kind)), True
    value = to_expr(_literal_from_pb(lit))
    return name, value, kind != "ad" and kind != "list"


# The repeating parts this process has decoded, shared by every daemon in it: the
# collector and the negotiator of a central manager read the same slot ads.
PARTS = PrefixDecoder()


def room_for(ads: int) -> None:
    """Let :data:`PARTS` keep the repeating parts of ``ads`` ads, twice over."""
    PARTS.capacity = max(PARTS.capacity, 2 * ads + 1000)


class AdDecoder:
    """Decodes repeated ads, reusing the ClassAd of an ad whose bytes it decoded in the
    previous round: a negotiator reads the same slot ads cycle after cycle, and only the
    slots that changed since differ. Ads are treated as immutable once decoded. An ad
    whose bytes changed but begin with a part the sender marks as repeating (its clocks
    follow) has only the rest decoded (:class:`PrefixDecoder`)."""

    def __init__(self) -> None:
        self._last: dict[bytes, ClassAd] = {}
        self._this: dict[bytes, ClassAd] = {}
        # each ad of the last round with its bytes, by the ad's identity (the ad is held:
        # its id cannot be reused)
        self._bytes_last: dict[int, tuple[ClassAd, bytes]] = {}
        self._bytes_this: dict[int, tuple[ClassAd, bytes]] = {}
        self.hits = 0
        self.misses = 0

    def bytes_of(self, ad: ClassAd) -> bytes | None:
        """The bytes ``ad`` was decoded from, if this decoder made it in the last round
        (ads are immutable once decoded): sending it on costs no encoding."""
        found = self._bytes_last.get(id(ad)) or self._bytes_this.get(id(ad))
        return found[1] if found is not None and found[0] is ad else None

    def decode(self, msgs: Iterable[pb.ClassAd], prefixes: Sequence[int] = ()) -> list[ClassAd]:
        """The ads of ``msgs``; ``prefixes[i]``: the repeating part's length in ad i's
        bytes (a hint; 0 or missing: none)."""
        return self.decode_bytes([m.SerializeToString() for m in msgs], prefixes)

    def decode_bytes(self, raws: Sequence[bytes], prefixes: Sequence[int] = ()) -> list[ClassAd]:
        """As :meth:`decode`, for ads as the bytes of ``mockpool.v1.ClassAd`` messages."""
        out = []
        room_for(len(raws))
        for i, raw in enumerate(raws):
            ad = self._this.get(raw) or self._last.get(raw)
            if ad is None:
                prefix = prefixes[i] if i < len(prefixes) else 0
                ad = PARTS.decode(raw, prefix) if prefix else ad_from_bytes(raw)
                self.misses += 1
            else:
                self.hits += 1
            self._this[raw] = ad
            self._bytes_this[id(ad)] = (ad, raw)
            out.append(ad)
        return out

    def adopt(self, ads: Sequence[ClassAd], raws: Sequence[bytes]) -> None:
        """``ads``, made from ``raws`` elsewhere in this process (a collector's records),
        as if decoded in this round."""
        for ad, raw in zip(ads, raws, strict=True):
            self._this[raw] = ad
            self._bytes_this[id(ad)] = (ad, raw)

    def keep(self, ads: Iterable[ClassAd]) -> None:
        """Count ``ads``, made by this decoder in the last round and still in use, as seen
        in this round (their bytes stay known to :meth:`bytes_of`)."""
        last, this, bytes_this = self._bytes_last, self._this, self._bytes_this
        for ad in ads:
            found = last.get(id(ad))
            if found is not None and found[0] is ad:
                bytes_this[id(ad)] = found
                this[found[1]] = ad

    def end_round(self) -> None:
        """Forget the ads not seen in this round (the memory stays one round's ads)."""
        self._last, self._this = self._this, {}
        self._bytes_last, self._bytes_this = self._bytes_this, {}


def ads_to_pb(
    ads: Iterable[ClassAd],
    field: object,
    skip: Callable[[ClassAd, WireError], None] | None = None,
) -> None:
    """Append each ad to a repeated ClassAd ``field`` of a message. An ad that cannot be
    sent raises WireError, or, with ``skip``, is left out and handed to ``skip``."""
    for ad in ads:
        msg = field.add()  # type: ignore[attr-defined]
        try:
            ad_to_pb(ad, msg)
        except WireError as exc:
            del field[-1]  # type: ignore[index]
            if skip is None:
                raise
            skip(ad, exc)


def ads_from_pb(msgs: Iterable[pb.ClassAd]) -> list[ClassAd]:
    return [ad_from_pb(m) for m in msgs]


def texts_to_ad(attrs: Mapping[str, str]) -> ClassAd:
    """An ad from ``name -> expression text`` (the submit parser's output)."""
    ad = ClassAd()
    for name, text in attrs.items():
        ad[name] = parse_expr(text)
    return ad
