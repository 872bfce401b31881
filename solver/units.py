"""Small exact integers for CP-SAT: byte resources divided by a common divisor of their requests.

The model holds exact amounts (:mod:`vcsat.model.resources`): bytes for memory, so one node's
memory is some 10¹¹ and a sum over a cluster's pods or a fair-share product (amount × 1000) comes
near int64's limit, which CP-SAT refuses, and large coefficients slow its search. The CP-SAT models
(and the LP bound) therefore see every resource in a unit of their own, chosen so that nothing is
lost:

- per resource ``r``, the divisor ``g_r`` is the greatest common divisor of the resource's grain
  and every request the model multiplies by a variable (the pending pods' shapes and buckets, and
  preemption victims), so each request is an exact multiple ``q·g_r``. The grain is a MiB for byte
  resources (memory, ephemeral-storage, hugepages-*) and 1 for the rest: cpu millicores and
  counts are small already;
- every room a sum of requests is compared with (a node's free room, a queue's room under its
  capability, the excess reclaim may take) is floored, and for integers
  ``Σ kᵢ·qᵢ·g_r ≤ room ⟺ Σ kᵢ·qᵢ ≤ ⌊room / g_r⌋``: fit is decided exactly.

Why the grain: on a cluster whose requests are whole MiB (most are: ``Mi``/``Gi`` requests, and
system pods' ``Mi``), ``g`` is a MiB and the models hold the same small integers as a model
counting MiB, which keeps them fast; requests such as ``1G`` (10⁹ = 2⁹·5⁹ bytes) refine it as far
as they need (``g = 512``), never further. Python code outside the
models (greedy, decode, validator) keeps the exact amounts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import gcd

from vcsat.model import resources as res


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


def grain(resource: str) -> int:
    """The coarsest divisor a resource's unit may take: a MiB for bytes, else the unit itself."""
    return res.MIB if res.is_byte_resource(resource) else 1


def units_for(resources: Sequence[str], requests: Iterable[Sequence[int]]) -> Units:
    """The divisors for ``resources`` from every request vector the model weighs."""
    divisor = [grain(name) for name in resources]
    for request in requests:
        for r, amount in enumerate(request):
            if amount and divisor[r] > 1:
                divisor[r] = gcd(divisor[r], amount)
    return Units(tuple(divisor))


def share_row(deserved: int, scale: int, divisor: int, held: int) -> tuple[int, int, int]:
    """The fair-share row ``deserved·fill ≤ scale·held + scale·Σ kᵢ·requestᵢ`` (requests multiples
    of ``divisor``) in the solver's units: (fill's coefficient, the factor of each
    ``kᵢ·requestᵢ/divisor`` term, the right-hand constant). The row is divided by
    ``G = gcd(deserved, divisor, held)``, which divides every term, so it keeps the same solutions;
    on a cluster of whole MiB it is the row in MiB, as it was."""
    common = gcd(deserved, divisor, held) or 1
    return deserved // common, scale * divisor // common, scale * held // common


ROW_LIMIT = 2**56
"""Largest magnitude a fair-share row may reach (CP-SAT refuses rows that could overflow int64)."""


def bounded_row(
    coef: int, fill_upper: int, constant: int, terms: Sequence[int], uppers: Sequence[int]
) -> tuple[int, int, list[int]]:
    """The row ``coef·fill ≤ constant + Σ termsᵢ·yᵢ`` (every variable from 0 to its upper bound,
    every number ≥ 0) as CP-SAT can take it: unchanged while each side stays below
    :data:`ROW_LIMIT`, which every cluster of realistic size does. Beyond it (amounts near 10¹⁵
    bytes that share no common divisor) it is divided by ``K`` with the left side rounded down
    and the right side up: a relaxation, so every exact solution (and so the greedy's hint) stays
    feasible, and ``fill`` may read at most a rounding high. Fair-share rows only: they shape an
    objective level, never a hard rule. Returns (coef, constant, terms)."""
    size = max(coef * fill_upper, constant + sum(t * u for t, u in zip(terms, uppers, strict=True)))
    if size <= ROW_LIMIT:
        return coef, constant, list(terms)
    k = -(-size // ROW_LIMIT)
    return coef // k, -(-constant // k), [-(-t // k) for t in terms]
