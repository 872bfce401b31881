"""Weighted water-filling: the one way vcsat divides an amount among claims by weight.

Queues' deserved shares (:mod:`.deserved`, Volcano's proportion plugin) and the simulator's
fairness metric (each queue's deserved GPUs at every instant) both divide an amount by weight,
none above its cap, none below its floor. :func:`water_levels` gives the exact answer, in
fractions: each claim ``i`` gets ``max(floors[i], min(caps[i], weights[i]·λ))`` for the largest
level ``λ`` at which the total stays within the amount; :func:`water_fill` rounds it to integers
that keep the total. Exact, so that the model, the validator and the metrics agree to the unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

Amount = int | Fraction


def water_levels(
    amount: Amount,
    weights: Sequence[Amount],
    floors: Sequence[Amount],
    caps: Sequence[Amount],
) -> list[Fraction]:
    """Each claim's exact share of ``amount``: ``max(floors[i], min(caps[i], weights[i]·λ))`` for the
    largest level ``λ`` at which the total stays within ``amount``; every claim's ``max(floor, cap)``
    when they all fit. Requires positive weights and ``Σ floors ≤ amount``."""
    count = len(weights)
    if not (len(floors) == len(caps) == count):
        raise ValueError("weights, floors and caps must have the same length")
    if any(weight <= 0 for weight in weights):
        raise ValueError("weights must be positive")
    tops = [Fraction(max(floor, cap)) for floor, cap in zip(floors, caps, strict=True)]
    if sum(tops) <= amount:
        return tops
    if sum(floors) > amount:
        raise ValueError(f"floors add up to {sum(floors)}, more than the amount {amount}")

    claims = [(Fraction(w), Fraction(f), t) for w, f, t in zip(weights, floors, tops, strict=True)]

    def at_level(level: Fraction) -> list[Fraction]:
        return [max(floor, min(top, weight * level)) for weight, floor, top in claims]

    # The total is piecewise linear in the level, with breaks where a claim leaves its floor or
    # reaches its cap: find the piece where it crosses the amount and solve the line exactly.
    breaks = sorted({f / w for w, f, _ in claims} | {t / w for w, _, t in claims})
    low, low_sum = Fraction(0), sum(at_level(Fraction(0)), Fraction(0))
    level = low
    if low_sum < amount:
        for point in breaks:
            point_sum = sum(at_level(point), Fraction(0))
            if point_sum >= amount:  # and low_sum < amount: the line rises on this piece
                level = low + (amount - low_sum) * (point - low) / (point_sum - low_sum)
                break
            low, low_sum = point, point_sum
    return at_level(level)


def water_fill(
    amount: int,
    weights: Sequence[int],
    floors: Sequence[int],
    caps: Sequence[int],
) -> list[int]:
    """Weighted water-filling of ``amount`` integer units with floors and caps.

    The shares of :func:`water_levels`, rounded to integers that add up to
    ``min(amount, Σ max(floor, cap))``: values round down, and the units left go one each to the
    claims with the largest fractional part, ties to the lower index. Requires positive weights and
    ``Σ floors ≤ amount``.
    """
    exact = water_levels(amount, weights, floors, caps)
    shares = [value.numerator // value.denominator for value in exact]
    left = int(sum(exact)) - sum(shares)  # the amount, or Σ max(floor, cap) when every claim gets that
    by_fraction = sorted(range(len(exact)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in by_fraction[:left]:
        shares[i] += 1
    return shares
