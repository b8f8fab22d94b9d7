"""Which attributes an expression refers to, split as HTCondor's ``GetExprReferences`` does.

A reference is *internal* (to ``MY``) when it is written ``MY.x`` or is a bare name that
the given ad defines, and *external* (to ``TARGET``) when it is written ``TARGET.x`` or
is any other bare name. condor_submit uses this to decide which default clauses a job's
Requirements already covers (an unqualified ``Memory`` counts as a machine reference).
Names are compared case-insensitively, so the sets hold lower-case names.

``every_name`` is the conservative form the negotiator's slot classes need: every name,
whatever its scope, nested ads included, and an error for a reference that is only known
when the expression runs (``eval``, ``random``, a computed subscript).
"""

from __future__ import annotations

from collections.abc import Container

from .ad import ClassAd
from .tree import AdExpr, AttrRef, Call, Expr, Literal, Select, Subscript

__all__ = ["DynamicReference", "every_name", "references"]

_SCOPES = {"my", "target", "self", "parent"}


def references(expr: Expr, defined: Container[str] = ()) -> tuple[set[str], set[str]]:
    """(internal, external) lower-case attribute names ``expr`` refers to; ``defined``
    holds the lower-case names the expression's own ad has."""
    internal: set[str] = set()
    external: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, AttrRef):
            name = node.name.lower()
            if name in _SCOPES:
                continue
            (internal if name in defined else external).add(name)
            continue
        if isinstance(node, Select) and isinstance(node.base, AttrRef):
            scope = node.base.name.lower()
            if scope in ("my", "self"):
                internal.add(node.name.lower())
                continue
            if scope == "target":
                external.add(node.name.lower())
                continue
        if isinstance(node, AdExpr):
            continue  # a nested ad's names are its own
        stack.extend(node.children())
    return internal, external


_DYNAMIC_CALLS = {"eval", "random"}


class DynamicReference(Exception):
    """An expression whose references cannot be known before it runs."""


def every_name(expr: Expr, out: set[str]) -> None:
    """Add to ``out`` every lower-case attribute name ``expr`` refers to, in any scope and
    in nested ads; DynamicReference when what it reads is decided at run time."""
    stack = [expr]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is Literal:
            if isinstance(node.value, ClassAd):
                stack.extend(node.value.values())
            continue
        if t is AttrRef:
            name = node.name.lower()
            if name not in _SCOPES:
                out.add(name)
            continue
        if t is Select:
            out.add(node.name.lower())
        elif t is Call:
            if node.name.lower() in _DYNAMIC_CALLS:
                raise DynamicReference(node.name)
        elif t is Subscript:
            if not (type(node.index) is Literal and isinstance(node.index.value, int)):
                raise DynamicReference("a computed subscript")
        elif t is AdExpr:
            stack.extend(node.ad.values())
            continue
        stack.extend(node.children())
