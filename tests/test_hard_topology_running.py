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
from test_solver_topology import RACKS, cluster, gpu_node, gpu_pod

from vcsat.model import NetworkTopology, Pod, PodGroup, Policy
from vcsat.model.hypernodes import resolve_hypernodes
from vcsat.solver import check, solve

POLICY = Policy(time_limit_s=10, enqueue=False)  # no admission: the group is asked to run at once
NAMES = ("a1", "a2", "b1", "b2")
"""a* are rack r1, b* rack r2; the spine (tier 2) holds both."""


def _priority(pod: Pod, priority: int) -> Pod:
    return pod.model_copy(update={"priority": priority})


def _snapshot(
    held: dict[str, str], pending: int, minimum: int, mode: str, tier: int
) -> tuple[list[Pod], list[PodGroup], tuple[object, ...]]:
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
    return pods, [group], nodes


# held, pending pods, minMember, mode, highest tier allowed, expected nodes of the new pods (bound
# or nominated; None: none placed), the waiting group's reason (when it waits).
CASES = [
    pytest.param({"a1": "run", "a2": "", "b1": "", "b2": ""}, 1, 2, "hard", 1, {"a2"}, "", id="joins its rack"),
    pytest.param(
        {"a1": "run", "a2": "busy", "b1": "", "b2": ""},
        1,
        2,
        "hard",
        1,
        None,
        "NetworkTopologyUnsatisfied",
        id="its rack full, another rack free: waits",
    ),
    pytest.param(
        {"a1": "run", "a2": "busy", "b1": "", "b2": ""}, 1, 2, "hard", 2, {"b1"}, "", id="tier 2 allowed: the spine"
    ),
    pytest.param({"a1": "run", "a2": "busy", "b1": "", "b2": ""}, 1, 2, "soft", 1, {"b1"}, "", id="soft: anywhere"),
    pytest.param(
        {"a1": "gone", "a2": "busy", "b1": "", "b2": ""},
        1,
        2,
        "hard",
        1,
        {"b1"},
        "",
        id="its one pod terminating: no rack yet",
    ),
    pytest.param(
        {"a1": "run", "a2": "", "b1": "run", "b2": ""},
        1,
        3,
        "hard",
        1,
        None,
        "NetworkTopologyUnsatisfied",
        id="running pods span two racks: waits",
    ),
    pytest.param(
        {"a1": "run", "a2": "", "b1": "", "b2": ""},
        2,
        3,
        "hard",
        1,
        None,
        "NetworkTopologyUnsatisfied",
        id="two more needed, one node left in its rack",
    ),
    pytest.param(
        {"a1": "run", "a2": "low", "b1": "", "b2": ""},
        1,
        2,
        "hard",
        1,
        {"a2"},
        "",
        id="evicts in its rack rather than bind in a free one",
    ),
    pytest.param(
        {"a1": "run", "a2": "busy", "b1": "low", "b2": ""},
        1,
        2,
        "hard",
        1,
        None,
        "NetworkTopologyUnsatisfied",
        id="evicts nothing in another rack",
    ),
]


@pytest.mark.parametrize(("held", "pending", "minimum", "mode", "tier", "expected", "reason"), CASES)
def test_new_pods_of_a_hard_group_join_its_running_pods_domain(
    held: dict[str, str], pending: int, minimum: int, mode: str, tier: int, expected: set[str] | None, reason: str
) -> None:
    pods, groups, nodes = _snapshot(held, pending, minimum, mode, tier)
    snapshot = cluster(pods, groups, nodes)  # type: ignore[arg-type]
    assert {h.name for h in snapshot.hypernodes} == {h.name for h in RACKS}
    decision = solve(snapshot, POLICY)
    assert check(snapshot, decision, POLICY) == []
    where = {b.node for b in decision.bindings if b.pod.startswith("d/new")}
    where |= {n.node for n in decision.nominations if n.pod.startswith("d/new")}
    if expected is None:
        assert where == set() and decision.evictions == []
        outcome = next(o for o in decision.podgroups if o.podgroup == "d/g")
        assert outcome.reason == reason
        assert "r1" in outcome.message or "span" in outcome.message
    else:
        assert where == expected
        assert {e.pod for e in decision.evictions} == {f"x/low-{n}" for n in expected if held[n] == "low"}


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
    pods, groups, nodes = _snapshot(held, pending, minimum, "hard", tier)
    snapshot = cluster(pods, groups, nodes)  # type: ignore[arg-type]
    decision = solve(snapshot, POLICY)
    assert check(snapshot, decision, POLICY) == []
    new = {b.node for b in decision.bindings if b.pod.startswith("d/new")}
    new |= {n.node for n in decision.nominations if n.pod.startswith("d/new")}
    if new:
        # Every new pod with every running one (terminating ones aside) in one domain of the tier.
        assert len(_racks_of([*running, *new], tier)) == 1
    if len(_racks_of(running, tier)) > 1:
        assert not new
