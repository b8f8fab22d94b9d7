"""How much work one evaluation may do before it is stopped.

A daemon evaluates expressions its users wrote (query constraints, job Requirements) on
its one event loop, so no expression may hold it for long. Work is counted in *steps*,
deterministically (never by the wall clock, so a result does not depend on the machine or
its load): a step is one expression node evaluated; a function's output costs one step per
``STRING_BYTES_PER_STEP`` bytes or per list item; a regular expression costs its match limit
tier (see :mod:`.pcre`). A step is one to a few microseconds of work, so ``EVAL_BUDGET``
bounds one evaluation to about half a second at worst.

An evaluation past its budget stops at once: :func:`~.evaluate.evaluate` then returns ERROR,
unless the caller passed its own :class:`Budget` and so asked to be told
(:class:`BudgetExceeded`), as the daemons do to refuse a query or reject a job by name.
"""

from __future__ import annotations

EVAL_BUDGET = 200_000  # steps for one evaluation (or one request, before PER_AD_STEPS)
PER_AD_STEPS = 100  # what a request may spend per ad it scans, on top of EVAL_BUDGET
STRING_BYTES_PER_STEP = 64  # also bounds memory: a budget builds at most ~13 MB of strings


class BudgetExceeded(Exception):
    """An evaluation ran past its step budget (the message says how far it got)."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        super().__init__(
            f"evaluation exceeded its budget of {limit:,} steps ({what}); "
            "simplify the expression (regular expressions, long strings and lists, "
            "and attributes that reference each other repeatedly cost the most)"
        )


class Budget:
    """Steps left to spend. One Budget may be shared by many evaluations (one request)."""

    __slots__ = ("left", "limit")

    def __init__(self, steps: int = EVAL_BUDGET) -> None:
        self.left = steps
        self.limit = steps

    def grant(self, steps: int) -> None:
        """Allow ``steps`` more (a request scanning one more ad)."""
        self.left += steps
        self.limit += steps

    def charge(self, steps: int, what: str = "expression nodes") -> None:
        self.left -= steps
        if self.left < 0:
            raise BudgetExceeded(self.limit, what)

    @property
    def spent(self) -> int:
        return self.limit - self.left
