"""Which placement rules make scarce GPU pools: what a node *is*, never where it *is*.

:mod:`vcsat.solver.pricing.scarcity` groups the GPU nodes into pools by the node rules of the pods confined
to part of them, and steers other work off the pools whose confined demand is high. That reasoning
holds for the kind of node a pod needs (its GPU model or family, its instance type, any custom
label naming a hardware pool, a dedicated pool's taint): more pods of that kind come, and only that
kind of node takes them. It does not hold for rules about location: a pod pinned to a host, a
rack, a zone or the nodes its volumes reach says nothing about the work to come (the next such pod
names another host or rack), and a pool per host or rack would only tell unconfined work to avoid
nodes nobody will ask for again; pods pinned to single hosts would also fill the pool budget
(:data:`vcsat.solver.pricing.scarcity.MAX_POOLS`) before the models do.

So the measure reads each pod's rules without their location part (:func:`pool_key`): node names
(``matchFields``), the well-known topology labels, labels under a ``topology.`` prefix (as
Kubernetes' own and HyperNode-style rack and spine labels are), and volume restrictions. A pod whose
rules are all about location is then unconfined for the measure and makes no pool; one asking an
H100 in rack 3 counts as H100 demand. Where such a pod may go is unchanged: the price of a node
for a pod (:meth:`vcsat.solver.pricing.scarcity.Scarcity.rate`) still reads its full rules, and every
predicate is enforced as before; only which pools exist and how much demand each has changes.
"""

from __future__ import annotations

from vcsat.model.cluster import NodeSelectorTerm
from vcsat.solver.rules.predicates import EligibilityKey

LOCATION_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)
"""Kubernetes' well-known labels saying where a node is."""
LOCATION_PREFIXES = ("topology.",)
"""Label prefixes of topology labels (``topology.kubernetes.io/…``, ``topology.vcsat.io/rack``, …)."""


def is_location(label: str) -> bool:
    """Whether a node label says where a node is rather than what it is."""
    return label in LOCATION_LABELS or label.startswith(LOCATION_PREFIXES)


def pool_key(key: EligibilityKey) -> EligibilityKey:
    """``key`` without its rules about location (see the module docstring): the kind of node it
    needs. Dropping requirements only widens the nodes a term accepts; a term left with none
    accepts every node, and so does the pod's affinity (its terms are alternatives)."""
    selector = frozenset((label, value) for label, value in key.node_selector if not is_location(label))
    terms: list[NodeSelectorTerm] = []
    anywhere = False
    for term in key.affinity:
        kept = tuple(r for r in term.match_expressions if not is_location(r.key))
        if term.match_fields or len(kept) != len(term.match_expressions):
            if not kept:
                anywhere = True
                break
            term = NodeSelectorTerm(match_expressions=kept)
        terms.append(term)
    affinity = () if anywhere else tuple(terms)
    if selector == key.node_selector and affinity == key.affinity and key.restriction is None:
        return key
    return EligibilityKey(selector, affinity, key.tolerations)
