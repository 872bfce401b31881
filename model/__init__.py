"""Pure typed data: the cluster snapshot a cycle reads and the decision it writes.

Nothing here talks to a cluster or a solver. Every amount is the exact integer Kubernetes compares
(cpu millicores, bytes, counts; see :mod:`vcsat.model.resources`), so the solver never rounds.
"""

from vcsat.model.cluster import (
    HyperNode,
    HyperNodeMember,
    NetworkTopology,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodGroup,
    Queue,
    Snapshot,
    Taint,
    Toleration,
)
from vcsat.model.decision import (
    Binding,
    Decision,
    Eviction,
    LevelBound,
    Nomination,
    PodGroupOutcome,
    SolverStats,
    first_short,
    relative_gap,
)
from vcsat.model.policy import Policy

__all__ = [
    "Binding",
    "Decision",
    "Eviction",
    "HyperNode",
    "HyperNodeMember",
    "LevelBound",
    "NetworkTopology",
    "Node",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Nomination",
    "Pod",
    "PodGroup",
    "PodGroupOutcome",
    "Policy",
    "Queue",
    "Snapshot",
    "SolverStats",
    "Taint",
    "Toleration",
    "first_short",
    "relative_gap",
]
