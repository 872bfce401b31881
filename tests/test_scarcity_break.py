"""The first pod on an untouched big node of a GPU kind pays for the node
(:meth:`vcsat.solver.pricing.scarcity.Scarcity.break_charge`): within one cycle, pods that fit the
kind's smaller nodes pack there and onto big nodes already broken, so a big node stays whole for the
pods asking more GPUs than the small nodes have; the greedy, the decode and the CP-SAT level charge
the same, and the validator accepts every decision."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.builders import node, pod, snapshot
from tests.test_scarcity import MODEL, clusters, confined, solve_checked
from vcsat.model import Policy, Snapshot
from vcsat.solver.greedy import Room
from vcsat.solver.objectives.scarcity import charge
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import build_problem

SEARCH = Policy(time_limit_s=5.0, num_workers=1)
GREEDY = Policy(search=False)
BIG = ("t4-big-a", "t4-big-b")


def _node(name: str, model: str, gpus: int, cpu: str = "96") -> object:
    return node(name, cpu=cpu, memory="384Gi", gpus=gpus, labels={MODEL: model})


def _cycle(unconfined: int) -> Snapshot:
    """T4: two 4-GPU nodes (listed first) and three 2-GPU nodes, free; one T4-confined pod seen
    (on a full T4 node) and 2-GPU pods seen on full G2 nodes, so FGD's measure, which this
    GPU-sharing workload's nodes are chosen by, likes the 4-GPU nodes best (a 1-GPU pod there
    leaves room for a 2-GPU pod). Pending: three shares and ``unconfined`` 1-GPU pods of any model."""
    nodes = [_node(name, "T4", 4) for name in BIG]
    nodes += [_node(f"t4-{x}", "T4", 2, cpu="104") for x in "abc"]
    nodes += [_node("t4-busy", "T4", 1)] + [_node(f"g2-busy{i}", "G2", 2) for i in range(4)]
    pods = [confined("ns/seen", "T4", node="t4-busy")]
    pods += [pod(f"ns/two{i}", gpus=2, cpu="8", node=f"g2-busy{i}") for i in range(4)]
    pods += [pod(f"ns/s{i}", gpu_milli=400, cpu="2") for i in range(3)]
    pods += [pod(f"ns/u{i}", gpus=1, cpu="8") for i in range(unconfined)]
    return snapshot(nodes=nodes, pods=pods)  # type: ignore[list-item]


def _big_nodes_touched(snap: Snapshot, policy: Policy) -> set[str]:
    decision = solve_checked(snap, policy)
    assert len(decision.bindings) == sum(1 for p in snap.pods if p.pending)  # everything is placed
    return {b.node for b in decision.bindings} & set(BIG)


# unconfined 1-GPU pods pending -> big T4 nodes the cycle may break (the rest of the pods fit elsewhere)
CASES = {"room on the small nodes for all": (4, 0), "two pods too many for the small nodes": (6, 1)}


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_one_cycle_keeps_a_big_node_whole(case: str, policy: Policy) -> None:
    unconfined, broken = CASES[case]
    snap = _cycle(unconfined)
    assert len(_big_nodes_touched(snap, policy)) == broken
    # Without the charge (no node counts as a big one of its kind), the same cycle breaks both.
    with mock.patch.object(scarcity, "whole_floors", lambda nodes, pools, labels: (0,) * len(nodes)):
        assert _big_nodes_touched(snap, policy) == set(BIG)


def test_who_pays_for_breaking_a_big_node() -> None:
    snap = _cycle(1)
    problem = build_problem(snap, GREEDY)
    scarce = scarcity.for_problem(problem)
    assert scarce is not None
    names = [n.name for n in problem.nodes]
    big, small = names.index("t4-big-a"), names.index("t4-a")
    # t4-busy has one GPU: the 2-GPU T4 nodes are big ones too, for pods asking one GPU
    assert scarce.whole_floor[big] == 2 and scarce.whole_floor[small] == 1
    pool = scarce.pool_of[big]
    # The room only it offers (its GPUs above the smaller nodes') at its pool's pressure, capped.
    assert scarce.break_charge(big, 1, 1000) == min(scarcity.BREAK_CAP * 2, round(scarce.pressure[pool] * 2000)) > 0
    assert scarce.break_charge(big, 0, 400) == scarce.break_charge(big, 1, 1000)  # a share breaks it too
    assert scarce.break_charge(big, 3, 3000) == 0  # it needs the big node
    assert 0 < scarce.break_charge(small, 1, 1000) == min(scarcity.BREAK_CAP, round(scarce.pressure[pool] * 1000))
    assert scarce.break_charge(small, 1, 1000) < scarce.break_charge(big, 1, 1000)  # it offers less room only it has
    assert scarce.break_charge(small, 2, 2000) == 0
    assert scarce.break_charge(names.index("g2-busy0"), 1, 1000) == 0  # G2 has one size of node
    assert scarce.break_charge(big, 0, 0) == 0  # a CPU-only pod takes no GPU


def _greedy_costs(problem_snap: Snapshot) -> None:
    """Per shape asking GPUs and node where one pod fits: the greedy's price (:meth:`Room._price`)
    less the same without big nodes is the objective's once-per-node charge (:func:`charge`)."""
    problem = build_problem(problem_snap, GREEDY)
    scarce = scarcity.for_problem(problem)
    if scarce is None:
        return
    plain = scarcity.Scarcity(
        scarce.pool_of, scarce.pool_mask, scarce.pressure, scarce.index, scarce.pooled, scarce.cpu, scarce.memory,
        scarce.gpu_nodes, scarce.plain,
    )  # fmt: skip
    room = Room(problem)
    for shape in problem.shapes:
        if scarcity.shape_milli(problem, shape) <= 0:
            continue
        nodes = np.array([n for n in shape.upper if room.fits(n, shape.request)], dtype=np.int64)
        if not nodes.size:
            continue
        with_charge, _ = room._price(scarce, shape, nodes)
        without, _ = room._price(plain, shape, nodes)
        expected = [charge(problem, scarce, shape, int(n)) for n in nodes]
        assert (with_charge - without).tolist() == expected
        for n, cost in zip(nodes.tolist(), with_charge.tolist(), strict=True):  # the Python ranking alike
            rank = room.price_rank(scarce, shape, n, scarce.rates(shape.eligibility))
            assert rank == (cost * room._rank_base + max(0, room.free[n][room.gpu or 0])) * room.count + n


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=clusters())
def test_the_greedy_and_the_objective_charge_alike_and_the_validator_accepts(snap: Snapshot) -> None:
    _greedy_costs(snap)
    solve_checked(snap, GREEDY)
    solve_checked(snap, SEARCH)


def test_the_cases_charge_alike() -> None:
    for unconfined in (1, 6):
        _greedy_costs(_cycle(unconfined))


G2_WHOLE = ("g2-b", "g2-c")


def _biggest_cycle(pending: int) -> Snapshot:
    """G2: 8-GPU nodes only (one kind, one size), g2-a broken by a 1-GPU pod, g2-b and g2-c whole,
    g2-full holding an 8-GPU pod (the demand seen for pods that need a whole 8-GPU node); T4: 2-GPU
    nodes, one T4-confined pod seen. Pending: ``pending`` unconfined 1-GPU pods."""
    nodes = [_node(name, "G2", 8) for name in ("g2-b", "g2-c", "g2-a", "g2-full")]
    nodes += [_node(f"t4-{x}", "T4", 2) for x in "ab"]
    pods = [confined("ns/seen", "T4", node="t4-a"), pod("ns/one", gpus=1, cpu="4", node="g2-a")]
    pods += [pod("ns/eight", gpus=8, cpu="32", node="g2-full")]
    pods += [pod(f"ns/u{i}", gpus=1, cpu="4") for i in range(pending)]
    return snapshot(nodes=nodes, pods=pods)  # type: ignore[list-item]


def test_who_pays_for_breaking_a_node_of_the_biggest_size() -> None:
    problem = build_problem(_biggest_cycle(1), GREEDY)
    scarce = scarcity.for_problem(problem)
    assert scarce is not None
    names = [n.name for n in problem.nodes]
    whole, broken, t4 = names.index("g2-b"), names.index("g2-a"), names.index("t4-b")
    assert scarce.whole_floor[whole] == 2  # G2 is one size, but 8-GPU nodes are the cluster's biggest
    charged = scarce.break_charge(whole, 1, 1000)
    assert 0 < charged <= scarcity.BREAK_CAP * (8 - 2)  # at most the cap per GPU only such a node offers
    assert scarce.break_charge(whole, 0, 300) == charged  # a share breaks it too
    assert scarce.break_charge(whole, 8, 8000) == 0  # it needs the whole node
    assert scarce.break_charge(whole, 3, 3000) == 0  # it fits on no smaller node
    assert charge(problem, scarce, problem.shapes[0], broken) == 0  # broken already: nothing more to pay
    assert scarce.break_charge(t4, 1, 1000) == 0  # not among the biggest
    # No pod asking more than the next size seen: no charge for the biggest nodes.
    alone = _biggest_cycle(1)
    alone = snapshot(nodes=list(alone.nodes), pods=[p for p in alone.pods if p.name != "eight"])  # type: ignore[list-item]
    bare = scarcity.for_problem(build_problem(alone, GREEDY))
    assert bare is not None and not bare.whole_floor


def _pricier_broken_cycle() -> Snapshot:
    """8-GPU nodes only: g2-b and g2-c whole, v32-a (V100M32, a model confined pods asked for, so
    its pool is dearer than G2's) broken by its confined pod, g2-full holding an 8-GPU pod; T4 2-GPU
    nodes, one T4-confined pod seen. Pending: two unconfined 1-GPU pods."""
    nodes = [_node(name, "G2", 8) for name in G2_WHOLE] + [_node("v32-a", "V100M32", 8), _node("g2-full", "G2", 8)]
    nodes += [_node(f"t4-{x}", "T4", 2) for x in "ab"]
    pods = [confined("ns/seen", "T4", node="t4-a"), confined("ns/one", "V100M32", cpu="4", node="v32-a")]
    pods += [pod("ns/eight", gpus=8, cpu="32", node="g2-full")]
    pods += [pod(f"ns/u{i}", gpus=1, cpu="4") for i in range(2)]
    return snapshot(nodes=nodes, pods=pods)  # type: ignore[list-item]


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
def test_the_charge_sends_no_pod_to_a_dearer_pool(policy: Policy) -> None:
    # Capped at BREAK_CAP, the charge only orders nodes of equal price: the cheaper pool's whole
    # node is broken rather than the dearer pool's broken one taken (which left other models'
    # pods without room when the charge was a node's whole room).
    snap = _pricier_broken_cycle()
    decision = solve_checked(snap, policy)
    assert len(decision.bindings) == 2
    assert {b.node for b in decision.bindings} <= set(G2_WHOLE)


def test_the_biggest_cycle_charges_alike() -> None:
    for snap in (_biggest_cycle(1), _biggest_cycle(3), _pricier_broken_cycle()):
        _greedy_costs(snap)
