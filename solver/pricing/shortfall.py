"""Room a pool keeps for its confined work to come: the expected need plus one standard deviation.

Why it exists: a pool's expected confined need is a mean, and the work that only that pool can take
comes as whole pods, few of them for a small GPU model. Room kept in proportion to the mean alone
(as :mod:`vcsat.solver.pricing.scarcity`'s pressure, need over room, would keep it) runs out about half the
time in a small pool, where one or two pods more than expected already find no room and are lost,
while a big pool's relative spread is small. So the need a pool's pressure is measured by is the
expected need plus one standard deviation of the demand to come, taken as Poisson in pods of
``unit`` thousandths (the sum of squared pod sizes over their sum: a compound Poisson demand has
that variance per thousandth of mean). That margin is large next to a small pool's need (a pool
expecting about one pod keeps about two) and small next to a big pool's, so, at equal need over
room, the small pool is the dearer one and the unconfined work takes the big pool's room first.
"""

from __future__ import annotations

import math


def with_margin(expected: float, unit: float) -> float:
    """``expected`` thousandths of demand to come plus one standard deviation of it, for pods of
    ``unit`` thousandths arriving as a Poisson count (0 when none is expected)."""
    if expected <= 0:
        return 0.0
    return expected + math.sqrt(expected * max(0.0, unit))
