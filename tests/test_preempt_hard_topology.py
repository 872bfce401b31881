"""Preemption keeps a hard ``networkTopology``: a gang held within one domain of a tier is placed
(bound or nominated) in one such domain only, as allocate places it. Evicting pods of two racks for
a rack-bound gang frees room it can never take together: its pods would then wait forever, and
the victims would have gone for nothing."""

from __future__ import annotations

import pytest
from test_solver_topology import RACKS, cluster, gpu_node, gpu_pod

from vcsat.model import Decision, NetworkTopology, Pod, PodGroup, Policy
from vcsat.solver import check, solve

POLICY = Policy(time_limit_s=10, enqueue=False)  # no admission: the gang is asked to run at once


def _with_priority(pod: Pod, priority: int) -> Pod:
    return pod.model_copy(update={"priority": priority})


# Nodes a* are rack r1, b* rack r2. Per node: what holds its 8 GPUs ("" free, "low" a victim,
# "high" a pod of the preemptor's priority, never a victim). The waiting gang: two 8-GPU pods,
# priority 1000, within one tier-1 domain (a rack) when hard. Expected: the nodes its pods are
# bound or nominated to, or None when it waits.
CASES = [
    # Room for it only across the racks (a1 by evicting, b1 free): it waits, nothing is evicted.
    ({"a1": "low", "a2": "high", "b1": "", "b2": "high"}, "hard", None),
    # The same cluster, soft: it may span them.
    ({"a1": "low", "a2": "high", "b1": "", "b2": "high"}, "soft", {"a1", "b1"}),
    # r2 holds it once its victim goes.
    ({"a1": "low", "a2": "high", "b1": "", "b2": "low"}, "hard", {"b1", "b2"}),
]


def nodes_taken(decision: Decision, prefix: str) -> set[str]:
    """The nodes the decision binds or nominates pods named ``prefix``... to."""
    where = {b.node for b in decision.bindings if b.pod.startswith(prefix)}
    return where | {n.node for n in decision.nominations if n.pod.startswith(prefix)}


@pytest.mark.parametrize(("held", "mode", "expected"), CASES)
def test_preemption_places_a_hard_gang_within_one_domain(
    held: dict[str, str], mode: str, expected: set[str] | None
) -> None:
    nodes = tuple(gpu_node(name) for name in held)
    running = [
        _with_priority(
            gpu_pod(f"x/{what}-{name}", node=name, ids=tuple(range(8)), created=-10), 1000 if what == "high" else 0
        )
        for name, what in held.items()
        if what
    ]
    gang = [_with_priority(gpu_pod(f"d/g{i}", group="d/g", created=5), 1000) for i in range(2)]
    group = PodGroup(
        namespace="d", name="g", min_member=2, network_topology=NetworkTopology(mode=mode, highest_tier_allowed=1)
    )
    snapshot = cluster([*running, *gang], [group], nodes)
    assert {h.name for h in snapshot.hypernodes} == {h.name for h in RACKS}
    decision = solve(snapshot, POLICY)
    assert check(snapshot, decision, POLICY) == []
    where = nodes_taken(decision, "d/g")
    if expected is None:
        assert where == set() and decision.evictions == []
    else:
        assert where == expected
        assert {e.pod for e in decision.evictions} == {f"x/low-{n}" for n in expected if held[n] == "low"}
