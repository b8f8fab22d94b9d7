"""Hypothesis strategies that write ClassAd expression TEXT and ads from a small grammar.

Everything here produces text (or ``{name: text}`` specs), so that the same input goes to
mockpool's parser and to classad2's.  Attribute names come from a small pool so that
references hit names present in MY only, TARGET only, both, or neither, in any case, bare
or with ``MY.`` / ``TARGET.``.
"""

from __future__ import annotations

from hypothesis import strategies as st

# Names the generated ads may define; "Nope" is never defined.
ATTRS = ("Alpha", "Beta", "Gamma", "Delta", "Eps")
REF_NAMES = (*ATTRS, "Nope")

BINARY_OPS = (
    "||",
    "&&",
    "|",
    "^",
    "&",
    "==",
    "!=",
    "=?=",
    "=!=",
    "is",
    "isnt",
    "<",
    "<=",
    ">",
    ">=",
    "<<",
    ">>",
    ">>>",
    "+",
    "-",
    "*",
    "/",
    "%",
)
UNARY_OPS = ("-", "+", "!", "~")

FUNCTIONS = (
    "ifThenElse",
    "isUndefined",
    "isError",
    "isString",
    "isInteger",
    "isReal",
    "isBoolean",
    "isList",
    "isClassAd",
    "int",
    "real",
    "string",
    "bool",
    "floor",
    "ceiling",
    "round",
    "pow",
    "quantize",
    "min",
    "max",
    "sum",
    "avg",
    "size",
    "strcat",
    "substr",
    "toUpper",
    "toLower",
    "strcmp",
    "stricmp",
    "member",
    "identicalMember",
    "stringListMember",
    "stringListIMember",
    "stringListSize",
    "stringListSum",
    "stringListMin",
    "stringListMax",
    "stringListAvg",
    "regexp",
    "regexps",
    "splitUserName",
    "splitSlotName",
    "eval",
    "versionCmp",
    "versionGE",
    "versionLT",
    "version_in_range",
    "stringListsIntersect",
    "stringListSubsetMatch",
    "stringListISubsetMatch",
    "countMatches",
    "evalInEachContext",
    "debug",
)

INT_TEXTS = (
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "-7",
    "10",
    "63",
    "64",
    "65",
    "128",
    "1024",
    "2147483648",
    "4611686018427387904",
    "9223372036854775807",
    "-9223372036854775807",
)
REAL_TEXTS = (
    "0.0",
    "-0.0",
    "0.5",
    "1.5",
    "-2.5",
    "2.0",
    "3.25",
    "1e10",
    "1e308",
    "-1e308",
    "1e-300",
    "0.1",
)
STRING_TEXTS = (
    '"a"',
    '"A"',
    '"abc"',
    '"ABC"',
    '"Abc"',
    '""',
    '"a,b"',
    '"A, b"',
    '"a;b"',
    '"1"',
    '"2.5"',
    '"1,2,3"',
    '"true"',
    '"x@y"',
    '"slot1@host"',
    '"a.c"',
    '"^a"',
    '"["',
    '"Alpha"',
    '"beta"',
    '"1 + 1"',
    '"(a)"',
    '"\\1"',
    '" "',
    '"a\\"b"',
    '"\\101"',
    '"é"',
    '"\\303\\251"',
    '"a\\\\b"',
)
OTHER_TEXTS = ("true", "false", "TRUE", "False", "undefined", "UNDEFINED", "error", "Error")

int_text = st.one_of(st.sampled_from(INT_TEXTS), st.integers(-1000, 1000).map(str))
real_text = st.one_of(
    st.sampled_from(REAL_TEXTS),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
)
string_text = st.sampled_from(STRING_TEXTS)
literal_text = st.one_of(
    int_text,
    real_text,
    string_text,
    st.sampled_from(OTHER_TEXTS),
    st.sampled_from(("{}", "{1, 2, 3}", '{"a", "B"}', "{1, 2.5}", "[]", "[x = 1]")),
)


def _case(name: str, how: int) -> str:
    return (name, name.lower(), name.upper())[how % 3]


attr_ref_text = st.builds(
    lambda prefix, name, how: prefix + _case(name, how),
    st.sampled_from(("", "", "", "MY.", "TARGET.", "my.", "target.")),
    st.sampled_from(REF_NAMES),
    st.integers(0, 5),
)

leaf_text = st.one_of(literal_text, attr_ref_text, attr_ref_text)


def _paren(text: str, wrap: bool) -> str:
    return f"({text})" if wrap else text


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.builds(
        lambda a, op, b, pa, pb: f"{_paren(a, pa)} {op} {_paren(b, pb)}",
        children,
        st.sampled_from(BINARY_OPS),
        children,
        st.booleans(),
        st.booleans(),
    )
    unary = st.builds(
        lambda op, a, p: f"{op}{_paren(a, p)}" if p else f"{op} {a}",
        st.sampled_from(UNARY_OPS),
        children,
        st.booleans(),
    )
    cond = st.builds(
        lambda c, t, e, p: f"{_paren(c, p)} ? {t} : {e}",
        children,
        children,
        children,
        st.booleans(),
    )
    elvis = st.builds(lambda a, b, p: f"{_paren(a, p)} ?: {b}", children, children, st.booleans())
    call = st.builds(
        lambda name, lower, args: f"{name.lower() if lower else name}({', '.join(args)})",
        st.sampled_from(FUNCTIONS),
        st.booleans(),
        st.lists(children, max_size=3),
    )
    lst = st.lists(children, max_size=3).map(lambda xs: "{" + ", ".join(xs) + "}")
    subscript = st.builds(lambda a, i: f"({a})[{i}]", children, children)
    index = st.builds(
        lambda xs, i: "{" + ", ".join(xs) + "}" + f"[{i}]",
        st.lists(children, min_size=1, max_size=3),
        st.integers(-1, 3),
    )
    ad = st.builds(
        lambda names, vals, sel: (
            "["
            + "; ".join(f"{n} = {v}" for n, v in zip(names, vals))
            + "]"
            + (f".{sel}" if sel else "")
        ),
        st.lists(st.sampled_from(ATTRS), max_size=2, unique=True),
        st.lists(children, min_size=2, max_size=2),
        st.one_of(st.none(), st.sampled_from(REF_NAMES)),
    )
    select = st.builds(
        lambda a, name: f"({a}).{name}", children, st.sampled_from((*REF_NAMES, "x"))
    )
    return st.one_of(
        binary,
        binary,
        binary,
        unary,
        cond,
        elvis,
        call,
        call,
        lst,
        subscript,
        index,
        ad,
        select,
        children.map(lambda a: f"({a})"),
    )


def expressions(max_leaves: int = 10) -> st.SearchStrategy[str]:
    """Random expression text."""
    return st.recursive(leaf_text, _extend, max_leaves=max_leaves)


small_expressions = expressions(max_leaves=3)

attr_value_text = st.one_of(
    int_text,
    real_text,
    string_text,
    st.sampled_from(OTHER_TEXTS),
    small_expressions,
)


def flat_ads(names: tuple[str, ...] = ATTRS, value=attr_value_text) -> st.SearchStrategy:
    """An ad spec ``{name: expression text}`` over a random subset of `names`."""
    return st.fixed_dictionaries({}, optional={n: value for n in names})


# Requirements that are often true: comparisons of references with literals, joined.
_cmp = st.builds(
    lambda ref, op, lit: f"{ref} {op} {lit}",
    attr_ref_text,
    st.sampled_from(("==", "!=", "<", "<=", ">", ">=", "=?=", "=!=")),
    st.one_of(int_text, real_text, string_text, st.sampled_from(OTHER_TEXTS)),
)
requirements_text = st.one_of(
    st.lists(st.one_of(_cmp, _cmp, attr_ref_text), min_size=1, max_size=3).flatmap(
        lambda parts: st.lists(
            st.sampled_from(("&&", "||")), min_size=len(parts) - 1, max_size=len(parts) - 1
        ).map(lambda ops: " ".join(p for pair in zip(parts, [*ops, ""]) for p in pair).strip())
    ),
    st.sampled_from(("true", "false", "1", "0", "2.5", "undefined", "error", '"yes"')),
    expressions(max_leaves=4),
)


def match_ads() -> st.SearchStrategy:
    """An ad spec with a (usually present) Requirements and some flat attributes."""
    return st.builds(
        lambda ad, req: {**ad, "Requirements": req} if req is not None else ad,
        flat_ads(),
        st.one_of(requirements_text, requirements_text, requirements_text, st.none()),
    )


def tables(rows=None, max_rows: int = 50) -> st.SearchStrategy:
    """1..max_rows ad specs: up to 8 distinct generated ads, repeated and shuffled, so that
    big tables stay cheap to generate while attributes still mix types across rows."""
    rows = flat_ads() if rows is None else rows
    return st.tuples(st.lists(rows, min_size=1, max_size=8), st.integers(1, max_rows)).flatmap(
        lambda pool_n: st.lists(st.sampled_from(pool_n[0]), min_size=pool_n[1], max_size=pool_n[1])
    )
