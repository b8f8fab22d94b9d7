"""The ClassAd language: parse, evaluate, compile to numpy, read and write ad text.

Public API (everything else in this package is private):

- ``parse_expr(text) -> Expr``: one expression (new or old syntax operators).
- ``parse_ad(text) -> ClassAd``: one ad, new syntax ``[ a = 1; b = a ]`` or old syntax
  (``a = 1`` per line).
- ``parse_ads(text) -> list[ClassAd]``: ads in old syntax separated by blank lines (as
  ``condor_status -long`` prints them), or a sequence of new-syntax ads.
- ``unparse(expr) -> str`` and ``format_ad(ad, style="old"|"new", sort=False)``.
- ``ads_to_json(ads) -> str`` / ``ads_from_json(text) -> list[ClassAd]``: HTCondor's JSON form.
- ``evaluate(expr_or_text, my=None, target=None, *, now=None, rng=None) -> value``: bool,
  int, float, str, list, ClassAd, or the singletons ``UNDEFINED`` / ``ERROR``. ``now`` is
  the date time() and CurrentTime give and ``rng`` the ``random.Random`` random() draws
  from: the evaluator has neither of its own, and an expression that reads one not given
  raises ``MissingEvalInput`` (a daemon's core passes the pool's date and its seeded
  generator; a tool that wants HTCondor's wall clock passes ``now=time.time()``).
- ``matches(job, slot, *, now=None, rng=None) -> bool``: the symmetric match (both
  Requirements true).
- ``Budget`` / ``BudgetExceeded``: the step budget one evaluation may spend; pass
  ``evaluate(..., budget=Budget(n))`` to be told (raised) rather than get ERROR past it.
- ``ClassAdSyntaxError``: every malformed expression or ad raises it, with ``.position``
  (0-based offset), ``.line``/``.column`` (1-based) and ``.expected``.
- ``MissingEvalInput``: time() or random() evaluated without the ``now`` or ``rng`` it reads.
- The match kernel lives in :mod:`mockpool.classad.kernel`.
"""

from .ad import ClassAd
from .budget import Budget, BudgetExceeded
from .errors import ClassAdSyntaxError, MissingEvalInput
from .evaluate import evaluate, matches
from .parser import parse_ad, parse_ads, parse_expr
from .textio import ads_from_json, ads_to_json, format_ad
from .tree import Expr, unparse
from .values import ERROR, UNDEFINED

__all__ = [
    "ERROR",
    "UNDEFINED",
    "Budget",
    "BudgetExceeded",
    "ClassAd",
    "ClassAdSyntaxError",
    "Expr",
    "MissingEvalInput",
    "ads_from_json",
    "ads_to_json",
    "evaluate",
    "format_ad",
    "matches",
    "parse_ad",
    "parse_ads",
    "parse_expr",
    "unparse",
]
