"""The chance that a pool's confined work to come outgrows the room it has left.

Why it exists: a pool's expected confined need is a mean, and the work that only that pool can take
comes as whole pods, few of them for a small GPU model. Room kept just equal to the mean runs out
about half the time; room far above it is almost never missed. What one thousandth of a pool's room
is worth to its confined work is the chance that their demand reaches it: a thousandth taken from a
pool with room ``R`` left is missed exactly when the demand to come is at least ``R``. That chance
is what :mod:`vcsat.solver.scarcity` prices unconfined work at (its *pressure*).

The demand to come is a count of pods: taken as Poisson with the expected need as its mean, in
units of ``unit`` thousandths, the size a confined pod's thousandth comes with on average (the
sum of squared pod sizes over their sum: a compound Poisson demand has that variance per unit of
mean). Big pools with room far beyond their mean need cost nothing, so their room is used first;
a small pool's last pods' worth of room costs nearly a whole thousandth each.
"""

from __future__ import annotations

import math

LARGE_MEAN = 400.0
"""From this many pods expected on, the normal approximation (with continuity correction) stands for
the Poisson sums, whose first terms would underflow."""
NEGLIGIBLE = 1e-12
"""A chance below this counts as none: a tail this thin is never priced (prices are in whole
thousandths)."""


def outgrow_chance(expected: float, room: float, unit: float) -> float:
    """P(demand ≥ ``room``) for a demand of ``unit`` × N thousandths, N Poisson with mean
    ``expected`` / ``unit``: 1 with no room left, 0 with no demand expected."""
    if room <= 0:
        return 1.0
    if expected <= 0 or unit <= 0:
        return 0.0
    mean = expected / unit
    k = math.ceil(room / unit - 1e-9)  # N ≥ room / unit, N whole
    if k <= 0:
        return 1.0
    if mean >= LARGE_MEAN:
        return 0.5 * math.erfc((k - 0.5 - mean) / math.sqrt(2.0 * mean))
    if k <= mean:
        # Below the mean the tail is most of the mass: 1 minus the lower part, term by term.
        term = math.exp(-mean)
        lower = 0.0
        for i in range(k):
            lower += term
            term *= mean / (i + 1)
        return min(1.0, max(0.0, 1.0 - lower))
    log_term = -mean + k * math.log(mean) - math.lgamma(k + 1)
    if log_term < math.log(NEGLIGIBLE):
        return 0.0
    term = math.exp(log_term)
    tail = 0.0
    i = k
    while term > NEGLIGIBLE * max(tail, NEGLIGIBLE):
        tail += term
        i += 1
        term *= mean / i
    return min(1.0, tail)
