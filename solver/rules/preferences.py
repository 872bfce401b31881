"""Node preferences: kube-scheduler's NodeAffinity and TaintToleration scores, as one number per
(pod, node).

kube-scheduler ranks the nodes that pass its filters by a weighted sum of plugin scores, each
normalised to 0..100 over the feasible nodes. Two of them speak about the node alone, and those are
modelled here:

- NodeAffinity: the sum of the ``weight`` of every ``preferredDuringSchedulingIgnoredDuringExecution``
  term the node matches, normalised as ``score × 100 / max`` (all 0 when no node matches any);
  default plugin weight 2;
- TaintToleration: the number of ``PreferNoSchedule`` taints of the node the pod does not tolerate,
  normalised in reverse, ``100 − count × 100 / max`` (all 100 when no node has such a taint);
  default plugin weight 3.

The normalisation runs over the nodes that pass the pod's predicates (its eligibility key), where
kube-scheduler uses the nodes that also have room now: what room a node has is the solver's to
decide, so the scale may differ, the order between nodes never does. What is returned is that sum
less its minimum over the eligible nodes, so that only nodes worth more than the least carry a term,
and a pod with no preference (and no PreferNoSchedule taint anywhere) has none at all: the model,
greedy and decode pay nothing for pods without preferences.

It is an objective level ranked below placed work and the fairness levels (a preference never costs
a placed pod), the way kube-scheduler's scores only order nodes that already fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from vcsat.model import Node, Pod, Toleration
from vcsat.model.cluster import PreferredSchedulingTerm
from vcsat.solver.rules.predicates import term_matches, tolerated

MAX_NODE_SCORE = 100
"""kube-scheduler's framework.MaxNodeScore."""
NODE_AFFINITY_WEIGHT = 2
TAINT_TOLERATION_WEIGHT = 3
"""Default plugin weights of kube-scheduler's default profile."""


class PreferenceKey(NamedTuple):
    """What about a pod its node scores depend on, besides its eligible nodes."""

    preferred: tuple[PreferredSchedulingTerm, ...]
    tolerations: frozenset[Toleration]


def preference_key(pod: Pod, tainted: bool) -> PreferenceKey | None:
    """The pod's preference key; None when nothing prefers one node over another for it (no
    preferred terms, and ``tainted`` False: no node has a PreferNoSchedule taint)."""
    if not pod.preferred_affinity and not tainted:
        return None
    return PreferenceKey(pod.preferred_affinity, frozenset(pod.tolerations) if tainted else frozenset())


def any_prefer_no_schedule(nodes: Sequence[Node]) -> bool:
    return any(taint.effect == "PreferNoSchedule" for node in nodes for taint in node.taints)


def node_scores(key: PreferenceKey, nodes: Sequence[Node], eligible: Sequence[int]) -> dict[int, int]:
    """Per eligible node index, its score above the least of them; nodes at the least are left out."""
    if not eligible:
        return {}
    affinity = {n: sum(t.weight for t in key.preferred if term_matches(t.preference, nodes[n])) for n in eligible}
    untolerated = {
        n: sum(
            1
            for taint in nodes[n].taints
            if taint.effect == "PreferNoSchedule" and not tolerated(key.tolerations, taint)
        )
        for n in eligible
    }
    top_affinity = max(affinity.values())
    top_taints = max(untolerated.values())
    total: dict[int, int] = {}
    for n in eligible:
        score = 0
        if top_affinity > 0:
            score += NODE_AFFINITY_WEIGHT * (affinity[n] * MAX_NODE_SCORE // top_affinity)
        taint_score = MAX_NODE_SCORE
        if top_taints > 0:
            taint_score -= untolerated[n] * MAX_NODE_SCORE // top_taints
        score += TAINT_TOLERATION_WEIGHT * taint_score
        total[n] = score
    least = min(total.values())
    return {n: score - least for n, score in total.items() if score > least}
