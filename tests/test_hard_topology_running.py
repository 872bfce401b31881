"""A hard ``networkTopology`` group with pods already running places its new pods in the domain
that holds the running ones (Volcano's allocated HyperNode): an elastic job's extra pods, or a
replacement for a pod that failed, join the others' rack rather than take room in another. Running
pods that already span several domains leave no domain for new ones: the group waits.

Checked in the decision (bindings and nominations, with and without evictions), the reason given
for a group that waits, and by the validator's own reading of the rule (``NetworkTopologyHard``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_preempt_hard_topology import nodes_taken
from test_solver_topology import RACKS, cluster, gpu_node, gpu_pod

from vcsat.model import NetworkTopology, Pod, PodGroup, Policy, Snapshot
from vcsat.model.hypernodes import resolve_hypernodes
from vcsat.solver import check, solve

POLICY = Policy(time_limit_s=10, enqueue=False)  # no admission: the group is asked to run at once
NAMES = ("a1", "a2", "b1", "b2")
"""a* are rack r1, b* rack r2; the spine (tier 2) holds both."""


def _priority(pod: Pod, priority: int) -> Pod:
    return pod.model_copy(update={"priority": priority})


def _snapshot(held: dict[str, str], pending: int, minimum: int, mode: str, tier: int) -> Snapshot:
    """Per node what holds its 8 GPUs: "" free, "run" a running pod of the group, "gone" one of
    its pods terminating, "low" another's pod a priority-1000 pod may evict, "busy" one it may not."""
    nodes = tuple(gpu_node(name) for name in held)
    pods: list[Pod] = []
    for name, what in held.items():
        if what in ("run", "gone"):
            own = gpu_pod(f"d/run-{name}", group="d/g", node=name, ids=tuple(range(8)), created=-10)
            pods.append(_priority(own.model_copy(update={"terminating": what == "gone"}), 1000))
        elif what:
            other = gpu_pod(f"x/{what}-{name}", node=name, ids=tuple(range(8)), created=-10)
            pods.append(_priority(other, 0 if what == "low" else 2000))
    pods += [_priority(gpu_pod(f"d/new{i}", group="d/g", created=5), 1000) for i in range(pending)]
    group = PodGroup(
        namespace="d",
        name="g",
        min_member=minimum,
        network_topology=NetworkTopology(mode=mode, highest_tier_allowed=tier),
    )
    return cluster(pods, [group], nodes)


# What holds a1 a2 b1 b2 ("." free; see _snapshot), pending pods, minMember, mode, highest tier
# allowed, the nodes its new pods are bound or nominated to ("" when it waits, then with
# NetworkTopologyUnsatisfied), and the case.
CASES = [
    ("run . . .", 1, 2, "hard", 1, "a2", "joins its rack"),
    ("run busy . .", 1, 2, "hard", 1, "", "its rack full, another rack free: waits"),
    ("run busy . .", 1, 2, "hard", 2, "b1", "tier 2 allowed: the spine"),
    ("run busy . .", 1, 2, "soft", 1, "b1", "soft: anywhere"),
    ("gone busy . .", 1, 2, "hard", 1, "b1", "its one pod terminating: no rack yet"),
    ("run . run .", 1, 3, "hard", 1, "", "running pods span two racks: waits"),
    ("run . . .", 2, 3, "hard", 1, "", "two more needed, one node left in its rack"),
    ("run low . .", 1, 2, "hard", 1, "a2", "evicts in its rack rather than bind in a free one"),
    ("run busy low .", 1, 2, "hard", 1, "", "evicts nothing in another rack"),
]


@pytest.mark.parametrize(
    ("held", "pending", "minimum", "mode", "tier", "expected"), [pytest.param(*row[:6], id=row[6]) for row in CASES]
)
def test_new_pods_of_a_hard_group_join_its_running_pods_domain(
    held: str, pending: int, minimum: int, mode: str, tier: int, expected: str
) -> None:
    holders = dict(zip(NAMES, (word.strip(".") for word in held.split()), strict=True))
    snapshot = _snapshot(holders, pending, minimum, mode, tier)
    assert {h.name for h in snapshot.hypernodes} == {h.name for h in RACKS}
    decision = solve(snapshot, POLICY)
    assert check(snapshot, decision, POLICY) == []
    where = nodes_taken(decision, "d/new")
    if not expected:
        assert where == set() and decision.evictions == []
        outcome = next(o for o in decision.podgroups if o.podgroup == "d/g")
        assert outcome.reason == "NetworkTopologyUnsatisfied"
        assert "r1" in outcome.message or "span" in outcome.message
    else:
        assert where == set(expected.split())
        assert {e.pod for e in decision.evictions} == {f"x/low-{n}" for n in where if holders[n] == "low"}


def _racks_of(nodes: Sequence[str], tier: int) -> set[str]:
    tree = resolve_hypernodes(RACKS, tuple(gpu_node(n) for n in NAMES))
    return {tree.domain_of(n, tier) or "" for n in nodes}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    held=st.fixed_dictionaries({name: st.sampled_from(["", "run", "gone", "low", "busy"]) for name in NAMES}),
    pending=st.integers(min_value=1, max_value=3),
    extra=st.integers(min_value=0, max_value=3),
    tier=st.sampled_from([1, 2]),
)
def test_a_hard_group_never_leaves_the_domain_its_running_pods_are_in(
    held: dict[str, str], pending: int, extra: int, tier: int
) -> None:
    running = [name for name, what in held.items() if what == "run"]
    minimum = max(1, min(len(running) + pending, len(running) + extra))
    snapshot = _snapshot(held, pending, minimum, "hard", tier)
    decision = solve(snapshot, POLICY)
    assert check(snapshot, decision, POLICY) == []
    new = nodes_taken(decision, "d/new")
    if new:
        # Every new pod with every running one (terminating ones aside) in one domain of the tier.
        assert len(_racks_of([*running, *new], tier)) == 1
    if len(_racks_of(running, tier)) > 1:
        assert not new


# Soft mode, or a hard group allowed the spine: no rule keeps the new pods in the running pods'
# rack, but the locality levels count that rack as spanned already (Volcano's score prefers the
# job's allocated HyperNode), so they go there when it has room, even where another rack is the
# fuller fit. r1 holds a1 (its running pod), a2 and a3 free; r2 has b1 free and b2 busy.
PREFERENCE_CASES = [
    ("soft", 1, 1, {"a2", "a3"}),
    ("hard", 2, 1, {"a2", "a3"}),
    ("soft", 1, 2, {"a2", "a3"}),
]


@pytest.mark.parametrize(("mode", "tier", "pending", "allowed"), PREFERENCE_CASES)
def test_new_pods_prefer_the_running_pods_rack(mode: str, tier: int, pending: int, allowed: set[str]) -> None:
    nodes = tuple(gpu_node(name) for name in ("a1", "a2", "a3", "b1", "b2"))
    pods = [
        gpu_pod("d/run-a1", group="d/g", node="a1", ids=tuple(range(8)), created=-10),
        gpu_pod("x/busy-b2", node="b2", ids=tuple(range(8)), created=-10),
        *(gpu_pod(f"d/new{i}", group="d/g", created=5) for i in range(pending)),
    ]
    topology = NetworkTopology(mode=mode, highest_tier_allowed=tier)
    group = PodGroup(namespace="d", name="g", min_member=1 + pending, network_topology=topology)
    snapshot = cluster(pods, [group], nodes)
    decision = solve(snapshot, POLICY)
    assert check(snapshot, decision, POLICY) == []
    where = nodes_taken(decision, "d/new")
    assert len(where) == pending and where <= allowed
