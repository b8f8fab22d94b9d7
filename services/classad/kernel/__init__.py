"""The match kernel: ClassAd expressions evaluated over a columnar table of slot ads.

One ad is held constant (the job, when evaluating its Requirements and Rank; the job
again, as TARGET, when evaluating the slots' own expressions) and the expression is
evaluated for every row of a :class:`SlotTable` at once, with numpy. Slot attributes whose
values are expressions (START, Requirements, Rank, SlotWeight, ...) are grouped by their
text and each group is evaluated vectorised. Scoping is HTCondor's: a name is looked up in
the ad that holds the expression, then in the other ad.

What the kernel does not vectorise (nested ad literals, selection from computed ads,
eval(), random(), absolute references) is evaluated row by row with the scalar
evaluator, for just the expression that needs it, and counted in ``KernelStats.fallbacks``.

Every evaluation spends a step budget (:mod:`..budget`): a vectorised node costs a step per
64 rows, a fallback what the scalar evaluator charges; :func:`table_budget` is the default.

Its rooms, each importing only those above it:

- :mod:`.column`: a column (one attribute over all rows) and the keys of its values;
- :mod:`.carry`: what one table hands the next (:class:`ColumnCarry`);
- :mod:`.table`: the slot table, its columns built on first read;
- :mod:`.evaluator`: a tree evaluated over a table's rows, and its fallback;
- :mod:`.kleene`: three-valued matching over rows that stand for several slots;
- :mod:`.match`: the entry points (:class:`CompiledExpr`, :func:`match_vector`, ...).
"""

from .carry import ColumnCarry
from .column import Column, SuppliedColumn, literal_keys, literal_of
from .evaluator import KernelStats
from .kleene import Varying
from .match import (
    CompiledExpr,
    MatchResult,
    evaluate_rows,
    match_vector,
    table_budget,
)
from .table import SlotTable

__all__ = [
    "Column",
    "ColumnCarry",
    "CompiledExpr",
    "KernelStats",
    "MatchResult",
    "SlotTable",
    "SuppliedColumn",
    "Varying",
    "evaluate_rows",
    "literal_keys",
    "literal_of",
    "match_vector",
    "table_budget",
]
