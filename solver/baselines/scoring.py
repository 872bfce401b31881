"""Node scores of kube-scheduler and Volcano, with their integer arithmetic, for the baselines.

Sources (read, not copied): kube-scheduler's ``pkg/scheduler/framework/plugins/noderesources``
(``least_allocated.go``, ``balanced_allocation.go``, ``resource_allocation.go``: cpu and memory,
weight 1 each; least-allocated counts a pod without requests as 100m cpu and 200Mi memory), its
``tainttoleration`` score (intolerable ``PreferNoSchedule`` taints, normalised and reversed), and
Volcano's ``pkg/scheduler/plugins/binpack`` (cpu and memory weight 1, no extended resources unless
configured; ``(used + request) / allocatable`` per resource, averaged by weight, times 100).

Scores are 0..100 per plugin, higher is better; callers weight and sum them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vcsat.model import Node, Pod
from vcsat.model import resources as res
from vcsat.solver.baselines.state import NodeRoom
from vcsat.solver.rules.predicates import term_matches, tolerated

MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * res.MIB
"""kube-scheduler's non-zero defaults for a pod that asks no cpu or memory (100m, 200Mi)."""
SCORED_RESOURCES = (res.CPU, res.MEMORY)
"""kube-scheduler's default resources for NodeResourcesFit and BalancedAllocation scoring."""


def _non_zero(pod: Pod, name: str) -> int:
    amount = pod.requests.get(name, 0)
    if amount:
        return amount
    if name == res.CPU:
        return DEFAULT_MILLI_CPU_REQUEST
    if name == res.MEMORY:
        return DEFAULT_MEMORY_REQUEST
    return 0


def least_allocated(room: NodeRoom, pod: Pod) -> int:
    """``LeastAllocated``: the free share after placing the pod, averaged over cpu and memory."""
    total = weights = 0
    for name in SCORED_RESOURCES:
        capacity = room.node.allocatable.get(name, 0)
        if capacity <= 0:
            continue
        requested = room.requested.get(name, 0) + _non_zero(pod, name)
        score = 0 if requested > capacity else (capacity - requested) * MAX_NODE_SCORE // capacity
        total += score
        weights += 1
    return total // weights if weights else 0


def balanced_allocation(room: NodeRoom, pod: Pod) -> int:
    """``BalancedAllocation``: 100 × (1 − the standard deviation of the used fractions)."""
    fractions: list[float] = []
    for name in SCORED_RESOURCES:
        capacity = room.node.allocatable.get(name, 0)
        if capacity <= 0:
            continue
        requested = room.requested.get(name, 0) + pod.requests.get(name, 0)
        fractions.append(min(1.0, requested / capacity))
    if len(fractions) < 2:
        return MAX_NODE_SCORE
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    else:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def binpack(room: NodeRoom, pod: Pod, weights: dict[str, int] | None = None) -> float:
    """Volcano's binpack plugin score; 0 when the pod would overflow a weighted resource."""
    weights = {res.CPU: 1, res.MEMORY: 1} if weights is None else weights
    score = 0.0
    weight_sum = 0
    for name, request in pod.requests.items():
        weight = weights.get(name)
        if request <= 0 or weight is None:
            continue
        capacity = room.node.allocatable.get(name, 0)
        if capacity <= 0 or weight == 0:
            weight_sum += weight
            continue
        used = room.requested.get(name, 0) + request
        if used > capacity:
            return 0.0
        score += used * weight / capacity
        weight_sum += weight
    if weight_sum > 0:
        score /= weight_sum
    return score * MAX_NODE_SCORE


def preferred_affinity(node: Node, pod: Pod) -> int:
    """The raw NodeAffinity score: the weights of the pod's preferred node-affinity terms the node matches."""
    return sum(term.weight for term in pod.preferred_affinity if term_matches(term.preference, node))


def node_affinity(raw: Sequence[int]) -> list[int]:
    """NodeAffinity's normalised score (``raw × 100 / max`` over the candidate nodes; all 0 when none matches)."""
    top = max(raw, default=0)
    if top == 0:
        return [0] * len(raw)
    return [score * MAX_NODE_SCORE // top for score in raw]


def intolerable_prefer_no_schedule(node: Node, pod: Pod) -> int:
    """The raw TaintToleration count: ``PreferNoSchedule`` taints the pod does not tolerate."""
    return sum(
        1 for taint in node.taints if taint.effect == "PreferNoSchedule" and not tolerated(pod.tolerations, taint)
    )


def taint_toleration(counts: Sequence[int]) -> list[int]:
    """TaintToleration's normalised, reversed score for the raw counts of the candidate nodes."""
    worst = max(counts, default=0)
    if worst == 0:
        return [MAX_NODE_SCORE] * len(counts)
    return [MAX_NODE_SCORE - count * MAX_NODE_SCORE // worst for count in counts]
