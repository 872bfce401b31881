"""Small exact integers for CP-SAT: each resource divided by the common divisor of its requests.

The model holds exact amounts (:mod:`vcsat.model.resources`): bytes for memory, so one node's
memory is some 10¹¹ and a sum over a cluster's pods or a fair-share product (amount × 1000) comes
near int64's limit, which CP-SAT refuses, and large coefficients slow its search. The CP-SAT models
therefore see every resource in a unit of their own, chosen so that nothing is lost:

- per resource ``r``, ``g_r`` is the greatest common divisor of every request the model multiplies
  by a variable (the pending pods' shapes and buckets, and preemption victims), so each request is
  an exact multiple ``q·g_r``;
- every room it is compared with (a node's free room, a queue's room under its capability, the
  excess reclaim may take) is a bound on a sum of such multiples, and for integers
  ``Σ kᵢ·qᵢ·g_r ≤ room ⟺ Σ kᵢ·qᵢ ≤ ⌊room / g_r⌋``: the room is floored, exactly.

Clusters whose requests are whole MiB get ``g`` of a MiB or more, so the solver's numbers are no
larger than when the model counted MiB; requests like ``1G`` next to ``1Gi`` give ``g = 512``.
Python code outside CP-SAT (greedy, decode, validator) keeps the exact amounts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import gcd


@dataclass(frozen=True)
class Units:
    """Per problem resource (in :attr:`Problem.resources` order): the divisor of its amounts."""

    divisor: tuple[int, ...]

    def request(self, r: int, amount: int) -> int:
        """A request (a multiple of the divisor by construction) in solver units, exactly."""
        return amount // self.divisor[r]

    def room(self, r: int, amount: int) -> int:
        """A bound on a sum of requests, in solver units: floored, which keeps fit exact."""
        return amount // self.divisor[r]


def units_for(count: int, requests: Iterable[Sequence[int]]) -> Units:
    """The divisors for ``count`` resources from every request vector the model weighs."""
    divisor = [0] * count
    for request in requests:
        for r, amount in enumerate(request):
            if amount:
                divisor[r] = gcd(divisor[r], amount)
    return Units(tuple(d or 1 for d in divisor))


def share_row(deserved: int, scale: int, divisor: int, held: int) -> tuple[int, int, int]:
    """``deserved·fill ≤ scale·held + scale·Σ kᵢ·requestᵢ`` (requests multiples of ``divisor``) in
    small exact integers: (fill's coefficient, each ``kᵢ·requestᵢ/divisor`` term's factor, the
    right-hand constant), all divided by ``G = gcd(deserved, scale·divisor)`` with the constant
    floored. Every term on the left is a multiple of ``G``, so the row keeps the same solutions.
    Request term ``i`` gets coefficient ``factor · requestᵢ/divisor``."""
    common = gcd(deserved, scale * divisor) or 1
    return deserved // common, scale * divisor // common, scale * held // common
