"""Rare node types (vcsat.solver.pricing.rarity): work that can run on a common type keeps off the
last free node of a type the cluster has few of, and the pods that need that type pay nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_scarcity import placed_on, solve_checked

from tests.builders import node, pod, snapshot
from vcsat.model import Policy, Snapshot
from vcsat.solver import solve
from vcsat.solver.pricing import rarity, scarcity
from vcsat.solver.problem import Problem, build_problem

MODEL = "nvidia.com/gpu.product"
SEARCH = Policy(time_limit_s=5.0, num_workers=1)
GREEDY = Policy(search=False)
COMMON = 100
"""Common nodes in every cluster here: enough that a type of one or two nodes is rare (at most 2%)."""


def gpu_node(name: str, model: str, gpus: int, cpu: str = "32", memory: str = "128Gi") -> object:
    return node(name, cpu=cpu, memory=memory, gpus=gpus, labels={MODEL: model})


def confined(key: str, models: str, gpus: int = 1, **kw: object) -> object:
    return pod(key, gpus=gpus, affinity=f"{MODEL} in ({models})", **kw)  # type: ignore[arg-type]


def cluster(rare: list[object], pods: list[object]) -> Snapshot:
    """``rare`` nodes first (node order alone would take them), then the common type: 2-GPU T4 nodes
    of 32 cores; two G2 nodes, full, one with a pod confined to G2 (so the GPU nodes make pools),
    one with a pod that may run anywhere (so half the demand seen is unconfined)."""
    common = [gpu_node(f"t4-2-{i:02d}", "T4", gpus=2) for i in range(COMMON)]
    busy = [gpu_node("g2-busy", "G2", gpus=8), gpu_node("g2-run", "G2", gpus=8)]
    seen = [confined("ns/seen", "G2", gpus=8, node="g2-busy"), pod("ns/run", gpus=8, node="g2-run")]
    return snapshot(nodes=[*rare, *common, *busy], pods=[*seen, *pods])  # type: ignore[list-item]


@contextmanager
def no_rare_types() -> Iterator[None]:
    """Solve as before this price (no type is rare)."""
    with mock.patch.object(scarcity, "rare_types", lambda *args: None):
        yield


def index_of(problem: Problem, name: str) -> int:
    return next(i for i, n in enumerate(problem.nodes) if n.name == name)


def unit_price(snap: Snapshot, pod_name: str, node_name: str) -> float:
    """The rate (per GPU thousandth) a pending pod pays on a node."""
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    shape = next(problem.shapes[c.shape] for c in problem.classes if any(p.key == pod_name for p in c.pods))
    return measure.rate(index_of(problem, node_name), shape.eligibility)


A10 = gpu_node("a10", "A10", gpus=1, cpu="128", memory="1Ti")
T4_BIG = gpu_node("t4-4", "T4", gpus=4, cpu="96", memory="384Gi")

# Each case: the rare nodes, the pending pods, the pod looked at, and the node it must go to.
CASES = {
    # Its 24 cores are a smaller share of the roomy 4-GPU node's: the room it strands there is its
    # own GPU (1,000 thousandths) against 1,500 on a 2-GPU node, so without this price the greedy
    # takes the rare node (the roomy-node discount traced at full size).
    "a cpu-heavy unconfined pod keeps off the last free 4-GPU T4 node": (
        [T4_BIG],
        [pod("ns/any", gpus=1, cpu="24")],
        "ns/any",
        "t4-2-",
    ),
    "a 4-GPU pod that fits only the rare node still goes there (placed work first)": (
        [T4_BIG],
        [pod("ns/four", gpus=4, cpu="8")],
        "ns/four",
        "t4-4",
    ),
    "the A10 pod takes the A10 (it needs the rare type: nothing changes)": (
        [A10, gpu_node("a10-busy", "A10", gpus=1, cpu="128", memory="1Ti")],
        [confined("ns/a10", "A10", cpu="4")],
        "ns/a10",
        "a10",
    ),
}


@pytest.mark.parametrize("policy", [SEARCH, GREEDY], ids=["search", "greedy"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_where_the_pod_goes(case: str, policy: Policy) -> None:
    rare, pending, who, expected = CASES[case]
    assert placed_on(solve_checked(cluster(rare, pending), policy))[who].startswith(expected)


@pytest.mark.pure_only
def test_without_the_price_the_greedy_takes_the_rare_node() -> None:
    """The first case fails on the code before this price."""
    rare, pending, who, _ = CASES["a cpu-heavy unconfined pod keeps off the last free 4-GPU T4 node"]
    with no_rare_types():
        assert placed_on(solve_checked(cluster(rare, pending), GREEDY))[who] == "t4-4"


# Unit prices: (rare nodes, pending pods, pod, node, the rare type's part of the rate per thousandth);
# the rate is that part and the node's pool pressure ``p`` both counted: ``p + r (1 - p)``.
PRICES = {
    "the last free node of a rare type costs a full pool": ([A10], [pod("ns/any", gpus=1)], "ns/any", "a10", 1.0),
    "two free nodes of a rare type cost half each": (
        [T4_BIG, gpu_node("t4-4b", "T4", gpus=4, cpu="96", memory="384Gi")],
        [pod("ns/any", gpus=1)],
        "ns/any",
        "t4-4",
        0.5,
    ),
    "the pod that needs the rare type pays nothing for it": (
        [A10],
        [confined("ns/a10", "A10")],
        "ns/a10",
        "a10",
        0.0,
    ),
    "a pod of the rare type's model that fits other types pays": (
        [T4_BIG],
        [confined("ns/t4", "T4")],
        "ns/t4",
        "t4-4",
        1.0,
    ),
}


@pytest.mark.pure_only
@pytest.mark.parametrize("case", list(PRICES), ids=list(PRICES))
def test_unit_price(case: str) -> None:
    rare, pending, who, where, rate = PRICES[case]
    snap = cluster(rare, pending)
    with no_rare_types():
        pressure = unit_price(snap, who, where)
    assert unit_price(snap, who, where) == pytest.approx(pressure + rate * (1 - pressure))


def crowded_pool(rare: int = 4, common: int = 200) -> Snapshot:
    """``rare`` free 4-GPU T4 nodes of 96 cores first, then ``common`` 4-GPU T4 nodes of 32 cores
    (so a 1-GPU pod takes the same room on either, and node order alone would take a rare one),
    and the two busy G2 nodes of :func:`cluster`; an unconfined 1-GPU pod pending."""
    big = [gpu_node(f"t4-big-{i}", "T4", gpus=4, cpu="96", memory="384Gi") for i in range(rare)]
    small = [gpu_node(f"t4-{i:03d}", "T4", gpus=4) for i in range(common)]
    busy = [gpu_node("g2-busy", "G2", gpus=8), gpu_node("g2-run", "G2", gpus=8)]
    seen = [confined("ns/seen", "G2", gpus=8, node="g2-busy"), pod("ns/run", gpus=8, node="g2-run")]
    return snapshot(nodes=[*big, *small, *busy], pods=[*seen, pod("ns/any", gpus=1)])  # type: ignore[list-item]


def test_a_free_rare_node_is_dearer_than_its_pool_when_the_pool_is_dearer_than_one_in_k() -> None:
    """The T4 pool's pressure (about 0.49 here) is above the rare rate of four free nodes (1/4):
    taken as the larger of the two, the rare nodes cost what the common T4 nodes do and node order
    sends the pod to a rare one (this failed on the code before :func:`rarity.either`); counted
    both, they are dearer and the pod goes to a common node."""
    snap = crowded_pool()
    rare_price, common_price = unit_price(snap, "ns/any", "t4-big-0"), unit_price(snap, "ns/any", "t4-000")
    assert 0.25 < common_price < 1  # the precondition: the pool is dearer than one in four
    assert rare_price == pytest.approx(common_price + 0.25 * (1 - common_price))
    for policy in (SEARCH, GREEDY):
        assert placed_on(solve_checked(snap, policy))["ns/any"].startswith("t4-0")


@pytest.mark.pure_only
def test_without_the_price_the_crowded_pool_pod_takes_a_rare_node() -> None:
    """The case above needs the price: without rare types node order takes the first rare node."""
    with no_rare_types():
        for policy in (SEARCH, GREEDY):
            assert placed_on(solve_checked(crowded_pool(), policy))["ns/any"] == "t4-big-0"


@pytest.mark.parametrize(
    ("pressure", "rare", "expected"),
    [
        (0.0, 0.0, 0.0),
        (0.3, 0.0, 0.3),  # no rare type: the pool's pressure, to the float
        (0.0, 0.25, 0.25),  # no pool pressure: the rare rate, to the float
        (0.5, 0.5, 0.75),
        (0.49, 0.25, 0.6175),
        (1.0, 0.25, 1.0),
        (0.25, 1.0, 1.0),
    ],
)
def test_either(pressure: float, rare: float, expected: float) -> None:
    assert rarity.either(pressure, rare) == pytest.approx(expected)
    if rare == 0.0 or pressure == 0.0:
        assert rarity.either(pressure, rare) == pressure + rare  # exact: nothing else changes


@given(p=st.floats(0.0, 1.0), k=st.integers(1, 100_000))
def test_either_is_a_share_at_least_each_part(p: float, k: int) -> None:
    r = 1.0 / k  # a rare rate: one in k free nodes
    both = rarity.either(p, r)
    assert max(p, r) <= both <= 1.0
    assert rarity.either(r, p) == pytest.approx(both)
    if p <= 0.999:
        assert both > p  # a free rare node is dearer than its pool's nodes in use


def test_a_rare_node_already_in_use_costs_no_more() -> None:
    # One of the two 4-GPU T4 nodes holds a pod: it no longer holds the whole-node pod, the other
    # free one is now the last.
    rare = [T4_BIG, gpu_node("t4-4b", "T4", gpus=4, cpu="96", memory="384Gi")]
    snap = cluster(rare, [pod("ns/there", gpus=1, node="t4-4b"), pod("ns/any", gpus=1)])
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    pressure = measure.pressure[measure.pool_of[index_of(problem, "t4-4b")]]
    assert unit_price(snap, "ns/any", "t4-4") == pytest.approx(1.0)
    assert unit_price(snap, "ns/any", "t4-4b") == pressure < 1  # the T4 pool's pressure only
    for policy in (SEARCH, GREEDY):
        assert placed_on(solve_checked(snap, policy))["ns/any"] != "t4-4"


def test_a_common_type_is_not_rare() -> None:
    snap = cluster([], [pod("ns/any", gpus=1)])
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    assert measure is not None
    # The single busy T4 node is a type of one node, but its GPU is taken: no wholly free rare node.
    assert measure.rare is None


def test_without_pools_nothing_is_priced() -> None:
    # No pod asks for a kind of node: no pools, and no rare type either (homogeneous workloads are
    # decided as before).
    common = [gpu_node(f"t4-2-{i:02d}", "T4", gpus=2) for i in range(COMMON)]
    snap = snapshot(nodes=[A10, *common], pods=[pod("ns/any", gpus=1)])  # type: ignore[list-item]
    assert scarcity.measure(build_problem(snap, GREEDY)) is None


# --- properties -------------------------------------------------------------------------------------

RARE_KINDS = (
    ("A10", 1, "128", "1Ti"),
    ("T4", 4, "96", "384Gi"),
    ("V100", 8, "82", "336Gi"),
)


@st.composite
def rare_clusters(draw: st.DrawFn) -> Snapshot:
    rare = []
    for i in range(draw(st.integers(0, 4))):
        model, gpus, cpu, memory = draw(st.sampled_from(RARE_KINDS))
        rare.append(gpu_node(f"r{i}", model, gpus=gpus, cpu=cpu, memory=memory))
    pods = []
    names = [n.name for n in rare]  # type: ignore[attr-defined]
    for i in range(draw(st.integers(1, 5))):
        gpus = draw(st.sampled_from((0, 1, 1, 4)))
        models = draw(st.sets(st.sampled_from(("A10", "T4", "V100", "G2")), max_size=2))
        where = draw(st.sampled_from([None, None, *names]))
        kw: dict[str, object] = {"cpu": "2", "created": float(i)}
        if where is not None:
            kw["node"] = where
        if models and gpus:
            pods.append(confined(f"ns/p{i}", ", ".join(sorted(models)), gpus=gpus, **kw))
        else:
            pods.append(pod(f"ns/p{i}", gpus=gpus, **kw))  # type: ignore[arg-type]
    return cluster(rare, pods)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=rare_clusters())
def test_rates_are_shares_and_pods_needing_a_type_pay_nothing(snap: Snapshot) -> None:
    problem = build_problem(snap, GREEDY)
    measure = scarcity.measure(problem)
    if measure is None or measure.rare is None:
        return
    rare = measure.rare
    for shape in problem.shapes:
        gpu = scarcity.shape_milli(problem, shape) > 0
        table = measure.rates(shape.eligibility, gpu)
        eligible = measure.index.mask(shape.eligibility) & measure.gpu_nodes
        pool_only = dataclasses.replace(measure, rare=None, _rates={}).rates(shape.eligibility, gpu)
        for n in range(len(problem.nodes)):
            rate = measure.rate(n, shape.eligibility, gpu)
            assert table[n] == rate  # the array is the definition
            assert 0.0 <= rate <= 1.0
            assert rate == rarity.either(pool_only[n], rare.rate(n, eligible))  # both counted
            kind = rare.free_type[n]
            if kind >= 0:
                # The rate is at least the type's, for pods that may go elsewhere; the type's own pods
                # pay only their pool's pressure.
                own = eligible & ~rare.members[kind] == 0
                assert rare.rate(n, eligible) == (0.0 if own else rare.rate_of[kind])
                assert rate >= rare.rate(n, eligible)
    # 1 / k: k the type's wholly free nodes.
    for kind, rate in enumerate(rare.rate_of):
        assert rate == pytest.approx(1.0 / rare.free_type.count(kind))


@pytest.mark.pure_only
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=rare_clusters())
def test_the_price_never_costs_placed_work(snap: Snapshot) -> None:
    priced = solve_checked(snap, SEARCH)
    with no_rare_types():
        plain = solve(snap, SEARCH)
    if priced.solver.status == "OPTIMAL" and plain.solver.status == "OPTIMAL":
        assert priced.solver.objective == plain.solver.objective


def test_node_type_reads_labels_gpus_cores_and_memory() -> None:
    problem = build_problem(cluster([A10, T4_BIG], []), GREEDY)
    a10, t4, t4_small, g2 = (problem.nodes[index_of(problem, x)] for x in ("a10", "t4-4", "t4-2-00", "g2-busy"))
    assert len({rarity.node_type(n, (MODEL,)) for n in (a10, t4, t4_small, g2)}) == 4
    other = problem.nodes[index_of(problem, "t4-2-01")]
    assert rarity.node_type(t4_small, (MODEL,)) == rarity.node_type(other, (MODEL,))
