"""Which attributes an expression refers to, split as HTCondor's ``GetExprReferences`` does.

A reference is *internal* (to ``MY``) when it is written ``MY.x`` or is a bare name that
the given ad defines, and *external* (to ``TARGET``) when it is written ``TARGET.x`` or
is any other bare name. condor_submit uses this to decide which default clauses a job's
Requirements already covers (an unqualified ``Memory`` counts as a machine reference).
Names are compared case-insensitively, so the sets hold lower-case names.
"""

from __future__ import annotations

from collections.abc import Container

from .tree import AdExpr, AttrRef, Expr, Select

__all__ = ["references"]

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
