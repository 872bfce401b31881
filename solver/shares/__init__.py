"""What each queue and job is owed, as plain arithmetic: deserved shares, dominant shares, water-filling.

Everything here is a pure function of the snapshot, exact in integers or fractions, with no
CP-SAT: the model builder reads these numbers (a queue's deserved share, a job's dominant share),
the validator and the explanations read the same numbers, and the tests can state the fairness
invariants without running a solver. The numbers are named apart from what the objective makes of
them: :mod:`vcsat.solver.objectives.fairness` turns them into the CP-SAT fairness levels.
"""

from vcsat.solver.shares.deserved import (
    FAIR_EXCLUDED,
    QueueShare,
    cluster_total,
    deserved_shares,
    fair_shares,
    queue_demand,
    queue_of,
    queue_usage,
)
from vcsat.solver.shares.drf import (
    dominant_share,
    drf_progressive_filling,
    job_dominant_shares,
    job_of,
    job_usage,
)
from vcsat.solver.shares.water import water_fill, water_levels

__all__ = [
    "FAIR_EXCLUDED",
    "QueueShare",
    "cluster_total",
    "deserved_shares",
    "dominant_share",
    "drf_progressive_filling",
    "fair_shares",
    "job_dominant_shares",
    "job_of",
    "job_usage",
    "queue_demand",
    "queue_of",
    "queue_usage",
    "water_fill",
    "water_levels",
]
