"""The search's stop rule: a decision proven within ``Policy.relative_gap`` of its bound is final.

A MIP solver stops once its incumbent is proven within a relative tolerance of the bound; the cycle
does the same, at three places, all measuring the gap as :func:`vcsat.model.relative_gap` does (the
placed work against its proven bound, the more important levels held at the decision's values):

- before the staged search: when the greedy decision is already within the tolerance of the LP
  bound (but not at it), no CP-SAT model is built at all (at 1,000 nodes building it costs more
  than the greedy). A greedy decision that meets its bound exactly still goes through the staged
  search: every placed-work stage is then met without a solve, and the fair-share and tie-break
  stages may prove the decision optimal, which small clusters expect;
- inside a stage of placed work alone: CP-SAT stops once its solution is within the tolerance
  (:mod:`vcsat.solver.search.exact`); the fair-share and tie-break stages are not covered by the
  gap and never stop at it;
- before each neighbourhood search: it runs only while the decision is further from the bound.

A decision that ends within the tolerance without being proven optimal says so
(``WITHIN_GAP``), so that ``FALLBACK`` keeps meaning that the search found nothing better.
A tolerance of 0 asks for the full search: every stage runs until proven or out of budget.
"""

from __future__ import annotations


def within_tolerance(objective: float, bound: float, relative_gap: float) -> bool:
    """Whether a decision of this ``objective`` with this proven ``bound`` is within a positive
    ``relative_gap`` of it (always False for a tolerance of 0: the full search is asked for)."""
    return relative_gap > 0 and bound - objective <= relative_gap * max(1.0, abs(bound))


def skip_search(objective: float, bound: float, relative_gap: float) -> bool:
    """Whether the staged search is not even started for a greedy decision of this ``objective``
    and LP ``bound``: it is within the tolerance but short of the bound (see the module's notes)."""
    return bound > objective and within_tolerance(objective, bound, relative_gap)
